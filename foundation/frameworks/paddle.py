"""PaddleJob: Worker x nodes (collective); a `ps` role switches to parameter-server mode.

In parameter-server mode upstream's `Master` replicas are the servers, so `roles.ps`
becomes `Master` x replicas without GPUs and the nodes stay the trainers (`Worker`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    ReplicaPlan,
    env_var,
    named_port,
    replica_count,
    role_plan,
)
from foundation.frameworks.operator import (
    Operator,
    StatusRule,
    WebhookRules,
    elastic_bounds,
    elastic_policy_schema,
    only,
    standard_defaults,
)

if TYPE_CHECKING:
    from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="paddle",
    kind="PaddleJob",
    plural="paddlejobs",
    replica_specs="paddleReplicaSpecs",
    replica_types=("Master", "Worker"),
    container="paddle",
    port_name="master",
    port=36543,
    default_restart="OnFailure",
    operator_name="paddlejob-controller",
    scalable=True,
    allowed_roles=("ps",),
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    servers = role_plan(spec, "ps", "Master")
    workers = ReplicaPlan("Worker", spec.nodes)
    return [servers, workers] if servers is not None else [workers]


# --- controller half: PADDLE_* variables (semantics §5). Collective mode rendezvous on
# worker-0, parameter-server mode on master-0; that pod advertises its own pod IP.


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """PADDLE_JOB_ID, PADDLE_NNODES, PADDLE_MASTER (+ PS-mode counts) for every container."""
    name, replicas = job["metadata"]["name"], job["spec"][FACTS.replica_specs]
    total = sum(replica_count(r) for r in replicas.values())
    endpoint_type = "Master" if "Master" in replicas else "Worker"
    port = named_port(replicas.get(endpoint_type) or {}, FACTS, fallback=FACTS.port)
    env = [
        env_var("PYTHONUNBUFFERED", "1"),
        env_var("PADDLE_JOB_ID", name),
        env_var("PADDLE_NNODES", str(total)),
    ]
    if replica_type == endpoint_type and index == 0:
        env.append({"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
        env.append(env_var("PADDLE_MASTER", f"$(POD_IP_DUMMY):{port}"))
    else:
        env.append(env_var("PADDLE_MASTER", f"{name}-{endpoint_type.lower()}-0:{port}"))
    if endpoint_type == "Master":
        if replica_type == "Master":
            env.append(env_var("PADDLE_SERVER_NUM", "1"))
        else:
            env.append(env_var("PADDLE_TRAINER_NUM", "1"))
    return env



def _defaults(facts: Facts, spec: dict[str, Any], replicas: dict[str, Any], run_policy: dict[str, Any]) -> None:
    """The operator's: the standard ones and elastic bounds."""
    standard_defaults(facts, spec, replicas, run_policy)
    elastic_bounds(spec, replicas)

ADAPTER = Adapter(
    facts=FACTS, plan=plan, rendezvous_env=rendezvous_env,
    operator=Operator(
        StatusRule(deciders=("Master",), workers="Worker", failures_while_short=True),
        only("Master"), defaults=_defaults, fills_selector=True,
        spec_fields={"elasticPolicy": elastic_policy_schema(torch_rendezvous=False)},
        webhook=WebhookRules(quote_container=True),
    ),
)
