"""PaddleJob: Worker x nodes (collective); a `ps` role switches to parameter-server mode.

In parameter-server mode upstream's `Master` replicas are the servers, so `roles.ps`
becomes `Master` x replicas without GPUs and the nodes stay the trainers (`Worker`).
"""

from __future__ import annotations

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan, role_plan
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


ADAPTER = Adapter(facts=FACTS, plan=plan)
