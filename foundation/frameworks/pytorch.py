"""PyTorchJob: Master x1 + Worker x(nodes-1), or Worker x nodes when elastic.

torchrun reads `nprocPerNode` and the elastic policy; the controller half injects the
MASTER_*/PET_* rendezvous variables upstream's operator sets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    OperatorInit,
    ReplicaPlan,
    TrainerV2,
    env_var,
    named_port,
    replica_count,
)
from foundation.frameworks.operator import (
    STRING,
    Operator,
    StatusRule,
    WebhookRules,
    elastic_bounds,
    elastic_policy_schema,
    master_or_worker0,
    standard_defaults,
)

if TYPE_CHECKING:
    from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="pytorch",
    kind="PyTorchJob",
    plural="pytorchjobs",
    replica_specs="pytorchReplicaSpecs",
    replica_types=("Master", "Worker"),
    container="pytorch",
    port_name="pytorchjob-port",
    port=23456,
    default_restart="OnFailure",
    operator_name="pytorchjob-controller",
    scalable=True,
    elastic=True,
    autoscaled=True,
    processes_per_node=True,
    main_roles=("master", "worker"),
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    if spec.elastic is not None:
        return [ReplicaPlan("Worker", spec.nodes)]
    plans = [ReplicaPlan("Master", 1)]
    if spec.nodes > 1:
        plans.append(ReplicaPlan("Worker", spec.nodes - 1))
    return plans


def job_fields(spec: TrainJobSpec) -> dict[str, Any]:
    fields: dict[str, Any] = {"nprocPerNode": str(spec.processesPerNode)}
    elastic = spec.elastic
    if elastic is not None:
        rendezvous = elastic.rendezvous
        policy: dict[str, Any] = {
            "minReplicas": elastic.minNodes,
            "maxReplicas": elastic.maxNodes,
            "rdzvBackend": rendezvous.backend if rendezvous is not None else "c10d",
        }
        if rendezvous is not None and rendezvous.host is not None:
            policy["rdzvHost"] = rendezvous.host
        if rendezvous is not None and rendezvous.port is not None:
            policy["rdzvPort"] = rendezvous.port
        if elastic.maxRestarts is not None:
            policy["maxRestarts"] = elastic.maxRestarts
        if elastic.metrics:  # the operator keeps an HPA from them (Facts.autoscaled)
            policy["metrics"] = [metric.model_dump(exclude_none=True) for metric in elastic.metrics]
        fields["elasticPolicy"] = policy
    return fields


# --- controller half: the rendezvous environment upstream's operator injects (semantics §5).
# Works on the job dict as applied, with upstream defaults applied in memory by the
# controller; missing defaults are tolerated (replicas nil -> 1).


def _nproc(spec: dict[str, Any]) -> int:
    try:
        return int(spec.get("nprocPerNode"))
    except (TypeError, ValueError):
        return 1  # auto / cpu / gpu


def _elastic_env(job: dict[str, Any], policy: dict[str, Any]) -> list[dict[str, Any]]:
    replicas = job["spec"][FACTS.replica_specs]
    host = policy.get("rdzvHost") or f"{job['metadata']['name']}-worker-0"
    port = policy.get("rdzvPort")
    if port is None:
        port = named_port(replicas.get("Worker") or {}, FACTS)
    env = [
        env_var("PET_RDZV_ENDPOINT", f"{host}:{port}"),
        env_var("PET_RDZV_BACKEND", policy.get("rdzvBackend") or "c10d"),
    ]
    low, high = policy.get("minReplicas"), policy.get("maxReplicas")
    if low is None and high is None:
        env.append(env_var("PET_NNODES", str(replica_count(replicas.get("Worker") or {}))))
    else:
        env.append(env_var("PET_NNODES", f"{low if low is not None else high}:{high if high is not None else low}"))
    if policy.get("maxRestarts") is not None:
        env.append(env_var("PET_MAX_RESTARTS", str(policy["maxRestarts"])))
    if policy.get("nProcPerNode") is not None:
        env.append(env_var("PET_NPROC_PER_NODE", str(policy["nProcPerNode"])))
    if policy.get("rdzvId") is not None:
        env.append(env_var("PET_RDZV_ID", policy["rdzvId"]))
    if policy.get("rdzvConf") is not None:
        conf = ",".join(f"{item.get('key', '')}={item.get('value', '')}" for item in policy["rdzvConf"])
        env.append(env_var("PET_RDZV_CONF", conf))
    if policy.get("standalone"):
        env.append(env_var("PET_STANDALONE", ""))
    return env


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """MASTER_*/WORLD_SIZE/RANK and the PET_* torchrun variables for every container."""
    spec = job["spec"]
    replicas = spec[FACTS.replica_specs]
    total = sum(replica_count(r) for r in replicas.values())
    env = [env_var("PYTHONUNBUFFERED", "1")]
    if "Master" in replicas:
        port = str(named_port(replicas["Master"], FACTS))
        addr = f"{job['metadata']['name']}-master-0"
        rank = str(index + 1 if replica_type == "Worker" else index)
        env += [
            env_var("MASTER_PORT", port),
            env_var("PET_MASTER_PORT", port),
            env_var("MASTER_ADDR", addr),
            env_var("PET_MASTER_ADDR", addr),
            env_var("WORLD_SIZE", str(total * _nproc(spec))),
            env_var("RANK", rank),
            env_var("PET_NODE_RANK", rank),
        ]
    if spec.get("nprocPerNode") is not None:
        env.append(env_var("PET_NPROC_PER_NODE", str(spec["nprocPerNode"])))
    if spec.get("elasticPolicy") is None:
        env.append(env_var("PET_NNODES", str(total)))
    else:
        env += _elastic_env(job, spec["elasticPolicy"])
    return env



def _defaults(facts: Facts, spec: dict[str, Any], replicas: dict[str, Any], run_policy: dict[str, Any]) -> None:
    """The operator's: the standard ones, elastic bounds, and nprocPerNode `auto`."""
    standard_defaults(facts, spec, replicas, run_policy)
    elastic_bounds(spec, replicas)
    elastic = spec.get("elasticPolicy")
    if spec.get("nprocPerNode") is None and (not isinstance(elastic, dict) or elastic.get("nProcPerNode") is None):
        spec["nprocPerNode"] = "auto"

ADAPTER = Adapter(
    facts=FACTS, plan=plan, job_fields=job_fields, rendezvous_env=rendezvous_env,
    trainer_v2=TrainerV2(
        runtime="torch-distributed",
        reserved_env=("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"),
    ),
    # Worker pods wait for the Master in init-pytorch; elastic jobs have no Master, so no wait
    operator_init=OperatorInit(
        "init-pytorch", "Worker", beside="Master", refusal_at=("nodes",),
        refusal_fix="run it elastic (Worker pods only), on one node, or in an environment at baseline",
    ),
    operator=Operator(
        StatusRule(deciders=("Master",), workers="Worker", early_success="elastic", failures_while_short=True),
        master_or_worker0("Master"), defaults=_defaults, fills_selector=True,
        spec_fields={"elasticPolicy": elastic_policy_schema(torch_rendezvous=True), "nprocPerNode": STRING},
        webhook=WebhookRules(exactly_one="Master", others_at_least_one=True, elastic="Worker"),
        implicit=((("elasticPolicy", "rdzvBackend"), "c10d"),),  # rendezvous_env's `or "c10d"`
    ),
)
