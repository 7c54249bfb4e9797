"""TFJob: Chief x1 + Worker x(nodes-1), or Worker x nodes without a Chief; optional `ps` and `evaluator`.

Parameter servers and evaluators run the same program (TF_CONFIG tells each its task)
but take no GPUs unless their role asks; the controller half builds TF_CONFIG.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    ReplicaPlan,
    named_port,
    replica_count,
    role_plan,
)
from foundation.frameworks.operator import (
    BOOLEAN,
    STRING,
    Operator,
    StatusRule,
    WebhookRules,
    master_or_worker0,
    standard_defaults,
)

if TYPE_CHECKING:
    from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="tensorflow",
    kind="TFJob",
    plural="tfjobs",
    replica_specs="tfReplicaSpecs",
    replica_types=("Chief", "Master", "Worker", "PS", "Evaluator"),
    container="tensorflow",
    port_name="tfjob-port",
    port=2222,
    default_restart="Never",
    operator_name="tfjob-controller",
    main_roles=("chief", "worker"),
    allowed_roles=("ps", "evaluator"),
    removable_roles=("chief",),
)


def has_chief(spec: TrainJobSpec) -> bool:
    """`roles.chief: {replicas: 0}` leaves the Chief out: Worker x nodes, worker 0 decides success
    (the operator's rule for a TFJob without Chief or Master, `StatusRule.early_success`)."""
    chief = spec.roles.get("chief")
    return chief is None or chief.replicas != 0


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    plans = []
    workers = spec.nodes
    if has_chief(spec):
        plans.append(ReplicaPlan("Chief", 1))
        workers -= 1
    if workers > 0:
        plans.append(ReplicaPlan("Worker", workers))
    for role, replica_type in (("ps", "PS"), ("evaluator", "Evaluator")):
        extra = role_plan(spec, role, replica_type)
        if extra is not None:
            plans.append(extra)
    return plans


# --- controller half: TF_CONFIG as upstream's operator builds it (semantics §5).
# Only the `tensorflow` container receives it, and only for distributed jobs.

_CLUSTER_TYPES = ("Chief", "Evaluator", "Master", "PS", "Worker")


def _cluster(job: dict[str, Any]) -> dict[str, list[str]]:
    name, namespace = job["metadata"]["name"], job["metadata"].get("namespace", "default")
    domain = os.environ.get("CUSTOM_CLUSTER_DOMAIN", "")
    cluster: dict[str, list[str]] = {}
    for replica_type, replica in sorted(job["spec"][FACTS.replica_specs].items(), key=lambda kv: kv[0].lower()):
        rt = replica_type.lower()
        hosts = [f"{name}-{rt}-{i}.{namespace}.svc" + (f".{domain}" if domain else "") for i in range(replica_count(replica))]
        port = named_port(replica, FACTS, fallback=FACTS.port)
        cluster[rt] = [f"{host}:{port}" for host in hosts]
    return cluster


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """TF_CONFIG (compact JSON) for the `tensorflow` container; nothing for a 1-replica job."""
    replicas = job["spec"][FACTS.replica_specs]
    if sum(replica_count(replicas[t]) for t in _CLUSTER_TYPES if t in replicas) == 1:
        return []
    cluster, rt = _cluster(job), replica_type.lower()
    task = {"type": rt, "index": index}
    config: dict[str, Any]
    if job["spec"].get("enableDynamicWorker"):
        sparse: dict[str, Any] = {"worker": {}, "ps": []}
        if rt == "ps":
            sparse["ps"] = [cluster[rt][index]]
        elif rt == "worker":
            sparse["ps"] = cluster.get("ps")  # null without PS, as Go marshals a nil slice
            sparse["worker"] = {str(index): cluster[rt][index]}
        config = {"cluster": sparse, "task": task}
    else:
        config = {"cluster": cluster, "task": task, "environment": "cloud"}
    return [{"name": "TF_CONFIG", "value": json.dumps(config, separators=(",", ":"))}]



def _defaults(facts: Facts, spec: dict[str, Any], replicas: dict[str, Any], run_policy: dict[str, Any]) -> None:
    """The operator's: the standard ones and an empty successPolicy."""
    standard_defaults(facts, spec, replicas, run_policy)
    if spec.get("successPolicy") is None:
        spec["successPolicy"] = ""

ADAPTER = Adapter(
    facts=FACTS, plan=plan, rendezvous_env=rendezvous_env,
    operator=Operator(
        # upstream visits the replica types in TF_CONFIG's order; a failure keeps an earlier Restarting
        StatusRule(deciders=("Chief", "Master"), workers="Worker", visit=_CLUSTER_TYPES, namespaced=True, stops=False,
                   early_success="worker-0", early_success_unless=("successPolicy", "AllWorkers"), restart="never",
                   keeps_restarting=True, dynamic_workers="enableDynamicWorker"),
        master_or_worker0("Chief", "Master"), defaults=_defaults, env_default_container_only=True,
        spec_fields={"successPolicy": STRING, "enableDynamicWorker": BOOLEAN},
        webhook=WebhookRules(any_replica_type=True, not_both=("Chief", "Master")),
    ),
)
