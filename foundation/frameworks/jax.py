"""JAXJob: Worker x nodes; worker 0 is the coordinator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    ReplicaPlan,
    TrainerV2,
    env_var,
    named_port,
    replica_count,
)
from foundation.frameworks.operator import Operator, StatusRule, WebhookRules, first_of_each

if TYPE_CHECKING:
    from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="jax",
    kind="JAXJob",
    plural="jaxjobs",
    replica_specs="jaxReplicaSpecs",
    replica_types=("Worker",),
    container="jax",
    port_name="jaxjob-port",
    port=6666,
    default_restart="Never",
    operator_name="jaxjob-controller",
    scalable=True,
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    return [ReplicaPlan("Worker", spec.nodes)]


# --- controller half: jax.distributed coordinator variables (semantics §5).


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """COORDINATOR_* (worker-0), NUM_PROCESSES and PROCESS_ID for every container."""
    name, replicas = job["metadata"]["name"], job["spec"][FACTS.replica_specs]
    total = sum(replica_count(r) for r in replicas.values())
    return [
        env_var("PYTHONUNBUFFERED", "1"),
        env_var("COORDINATOR_PORT", str(named_port(replicas.get("Worker") or {}, FACTS))),
        env_var("COORDINATOR_ADDRESS", f"{name}-worker-0"),
        env_var("NUM_PROCESSES", str(total)),
        env_var("PROCESS_ID", str(index)),
    ]


ADAPTER = Adapter(
    facts=FACTS, plan=plan, rendezvous_env=rendezvous_env,
    trainer_v2=TrainerV2(runtime="jax-distributed"),
    operator=Operator(StatusRule(deciders=(), workers="Worker", failures_while_short=True), first_of_each,
                      fills_selector=True, webhook=WebhookRules()),
)
