"""PyTorchJob: Master x1 + Worker x(nodes-1), or Worker x nodes when elastic.

torchrun reads `nprocPerNode` and the elastic policy; the controller half injects the
MASTER_*/PET_* rendezvous variables upstream's operator sets.
"""

from __future__ import annotations

from typing import Any

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan
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
    if spec.elastic is not None:
        policy: dict[str, Any] = {
            "minReplicas": spec.elastic.minNodes,
            "maxReplicas": spec.elastic.maxNodes,
            "rdzvBackend": "c10d",
        }
        if spec.elastic.maxRestarts is not None:
            policy["maxRestarts"] = spec.elastic.maxRestarts
        fields["elasticPolicy"] = policy
    return fields


ADAPTER = Adapter(facts=FACTS, plan=plan, job_fields=job_fields)
