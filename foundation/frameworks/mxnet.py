"""MXJob (legacy, operator <= v1.8): Scheduler x1 + Worker x nodes + optional `server` role.

The scheduler and servers run the same program (DMLC_ROLE tells each its part) without
GPUs; `jobMode` is always MXTrain (tuning jobs are out of scope).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    ReplicaPlan,
    env_var,
    named_port,
    replica_count,
    role_plan,
    template_part,
)
from foundation.frameworks.operator import (
    STRING,
    Operator,
    StatusRule,
    container_list,
    name_reasons,
    only,
    replica_map,
)

if TYPE_CHECKING:
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
    fixed_roles=("scheduler",),
    allowed_roles=("server",),
    kueue_unmanaged="Kueue v0.17 has no MXJob integration",
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


# --- controller half: MX_CONFIG and the DMLC_* ps-lite variables (semantics §5, v1.8.1).

_TUNER_SERVER_KEY = "tuner-server-key"


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """MX_CONFIG (compact JSON, keys sorted like Go maps) plus DMLC_* for every container."""
    name, replicas = job["metadata"]["name"], job["spec"][FACTS.replica_specs]
    cluster: dict[str, list[dict[str, Any]]] = {}
    labels: dict[str, str] = {}
    for rtype, replica in sorted(replicas.items(), key=lambda kv: kv[0].lower()):
        rt, port = rtype.lower(), named_port(replica, FACTS)
        count = replica_count(replica)
        cluster[rt] = [{"url": f"{name}-{rt}-{i}", "port": port} for i in range(count)]
        annotations = template_part(replica, "metadata").get("annotations") or {}
        labels[rt] = annotations.get(_TUNER_SERVER_KEY, "")
    rt = replica_type.lower()
    config = {"cluster": cluster, "labels": labels, "task": {"type": rt, "index": index}}
    scheduler = (cluster.get("scheduler") or [{"url": "", "port": 0}])[0]
    env = [
        env_var("MX_CONFIG", json.dumps(config, separators=(",", ":"))),
        env_var("DMLC_PS_ROOT_PORT", str(scheduler["port"])),
        env_var("DMLC_PS_ROOT_URI", scheduler["url"]),
        env_var("DMLC_NUM_SERVER", str(len(cluster.get("server", [])))),
        env_var("DMLC_NUM_WORKER", str(len(cluster.get("worker", [])))),
        env_var("DMLC_ROLE", rt),
        env_var("DMLC_USE_KUBERNETES", "1"),
    ]
    if rt == "worker":
        env.append(env_var("DMLC_WORKER_ID", str(index)))
    return env


def _reconciler_check(job: Any) -> list[str]:
    """v1.8.1's ValidateV1MXJob. (Its "more than 1 scheduler" check cannot fail: map keys are unique.)"""
    reasons = name_reasons(str((job.get("metadata") or {}).get("name", "")))
    if reasons:
        return [f"MXJob name is invalid: [{' '.join(reasons)}]"]
    specs = replica_map(job, FACTS.replica_specs)
    if specs is None:
        return ["MXJobSpec is not valid"]
    for rtype in sorted(specs):
        containers = container_list(specs[rtype])
        if (not containers or not all(isinstance(c, dict) and c.get("image") for c in containers)
                or not any(c.get("name") == FACTS.container for c in containers)):
            return ["MXJobSpec is not valid"]
    return []


ADAPTER = Adapter(
    facts=FACTS, plan=plan, job_fields=job_fields, rendezvous_env=rendezvous_env,
    # the scheduler decides, or the worker of a one-worker job; v1.8.1's failures name the kind "mxjob"
    operator=Operator(StatusRule(deciders=("Scheduler",), sole="Worker", sole_unless=("Scheduler", "Server"),
                                 restart="exit-code", failure_subject="mxjob"),
                      only("Server"), reconciler_check=_reconciler_check,
                      spec_fields={"jobMode": STRING}, required=("jobMode",)),  # sic: upstream marks the servers
)
