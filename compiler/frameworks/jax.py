"""JAXJob: Worker x nodes; worker 0 is the coordinator."""

from __future__ import annotations

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


ADAPTER = Adapter(facts=FACTS, plan=plan)
