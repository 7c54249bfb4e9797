"""MPIJob: Worker x nodes plus one Launcher that runs the program through mpirun.

The launcher gets the user's command and no GPUs (unless `roles.launcher.resources`
asks); workers get the GPUs and no command, because the upstream operator starts them
with `sleep 365d` and the launcher execs into them. `slotsPerWorker` follows
`processesPerNode` (auto = GPUs per node, else 1).
"""

from __future__ import annotations

from typing import Any

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan
from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="mpi",
    kind="MPIJob",
    plural="mpijobs",
    replica_specs="mpiReplicaSpecs",
    replica_types=("Launcher", "Worker"),
    container="mpi",
    port_name=None,
    port=None,
    default_restart="Never",
    operator_name="mpijob-controller",
    allowed_roles=("launcher",),
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    launcher = spec.roles.get("launcher")
    return [
        ReplicaPlan(
            "Launcher",
            1,
            accelerated=False,
            resources=launcher.resources if launcher else None,
        ),
        ReplicaPlan("Worker", spec.nodes, inherit_command=False),
    ]


def slots_per_worker(spec: TrainJobSpec) -> int:
    if isinstance(spec.processesPerNode, int):
        return spec.processesPerNode
    return spec.resources.gpu or 1


def job_fields(spec: TrainJobSpec) -> dict[str, Any]:
    return {"slotsPerWorker": slots_per_worker(spec)}


ADAPTER = Adapter(facts=FACTS, plan=plan, job_fields=job_fields)
