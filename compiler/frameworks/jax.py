"""JAXJob: Worker x nodes; worker 0 is the coordinator."""

from __future__ import annotations

from typing import Any

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan
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


def _env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _port(replica: dict[str, Any]) -> int:
    """The `jaxjob-port` of the `jax` container; upstream refuses the pod without it."""
    for container in replica.get("template", {}).get("spec", {}).get("containers") or []:
        if container.get("name") == FACTS.container:
            for port in container.get("ports") or []:
                if port.get("name") == FACTS.port_name:
                    return int(port["containerPort"])
    raise ValueError("port not found")


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """COORDINATOR_* (worker-0), NUM_PROCESSES and PROCESS_ID for every container."""
    name, replicas = job["metadata"]["name"], job["spec"][FACTS.replica_specs]
    total = sum(1 if r.get("replicas") is None else int(r["replicas"]) for r in replicas.values())
    return [
        _env("PYTHONUNBUFFERED", "1"),
        _env("COORDINATOR_PORT", str(_port(replicas.get("Worker") or {}))),
        _env("COORDINATOR_ADDRESS", f"{name}-worker-0"),
        _env("NUM_PROCESSES", str(total)),
        _env("PROCESS_ID", str(index)),
    ]


ADAPTER = Adapter(facts=FACTS, plan=plan, rendezvous_env=rendezvous_env)
