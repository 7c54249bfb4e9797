"""MXJob (legacy, operator <= v1.8): Scheduler x1 + Worker x nodes + optional `server` role.

The scheduler and servers run the same program (DMLC_ROLE tells each its part) without
GPUs; `jobMode` is always MXTrain (tuning jobs are out of scope).
"""

from __future__ import annotations

from typing import Any

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan, role_plan
from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="mxnet",
    kind="MXJob",
    plural="mxjobs",
    replica_specs="mxReplicaSpecs",
    replica_types=("Scheduler", "Server", "Worker"),
    container="mxnet",
    port_name="mxjob-port",
    port=9091,
    default_restart="Never",
    operator_name="mxjob-controller",
    allowed_roles=("server",),
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    plans = [ReplicaPlan("Scheduler", 1, accelerated=False)]
    server = role_plan(spec, "server", "Server")
    if server is not None:
        plans.append(server)
    plans.append(ReplicaPlan("Worker", spec.nodes))
    return plans


def job_fields(spec: TrainJobSpec) -> dict[str, Any]:
    return {"jobMode": "MXTrain"}


ADAPTER = Adapter(facts=FACTS, plan=plan, job_fields=job_fields)
