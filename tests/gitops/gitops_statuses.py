"""Upstream-shaped job objects for the health checks: one builder, the lifecycle points
the issue names, for every kind.

Conditions follow the shared condition algorithm of kubeflow/trainer v1.9.4 (semantics
doc section 1): reasons are `{Kind}` + suffix (MPIJob's failure reason is the doubled
`MPIJobMPIJobFailed`), the list is in order of recency, a finished job keeps `Running`
with status "False", a resumed job keeps `Suspended` with status "False".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from foundation.frameworks import BY_KIND

KINDS = tuple(BY_KIND)
JOB = "train"
T0 = "2025-01-01T00:00:00Z"


def condition(kind: str, ctype: str, status: str = "True", *, reason: Optional[str] = None) -> dict:
    suffix = {"Suspended": "Suspended"}.get(ctype, ctype)
    if reason is None:
        reason = "MPIJobMPIJobFailed" if (kind, ctype) == ("MPIJob", "Failed") else f"{kind}{suffix}"
    messages = {
        "Created": f"{kind} {JOB} is created.",
        "Running": f"{kind} {JOB} is running.",
        "Restarting": f"{kind} {JOB} is restarting because 1 Worker replica(s) failed.",
        "Succeeded": f"{kind} {JOB} is successfully completed.",
        "Failed": f"{kind} {JOB} is failed because 1 Worker replica(s) failed.",
        "Suspended": f"{kind} {JOB} is suspended." if status == "True" else f"{kind} {JOB} is resumed.",
    }
    if ctype == "Suspended" and status == "False":
        reason = f"{kind}Resumed"
    return {
        "type": ctype, "status": status, "reason": reason, "message": messages[ctype],
        "lastUpdateTime": T0, "lastTransitionTime": T0,
    }


def job(kind: str, conditions: Optional[list[dict]] = None, *, deleting: bool = False,
        replica_statuses: Optional[dict] = None) -> dict:
    facts = BY_KIND[kind].facts
    obj: dict = {
        "apiVersion": facts.api_version,
        "kind": kind,
        "metadata": {"name": JOB, "namespace": "ml", "generation": 1, "uid": "0000"},
        "spec": {facts.replica_specs: {rt: {"replicas": 1} for rt in facts.replica_types[:2]}},
    }
    if deleting:
        obj["metadata"]["deletionTimestamp"] = T0
        obj["metadata"]["finalizers"] = ["example.com/keep"]
    if conditions is not None:
        obj = with_status(obj, {
            "conditions": conditions,
            "replicaStatuses": replica_statuses or {facts.replica_types[-1]: {"active": 1}},
            "startTime": T0,
        })
    return obj


def with_status(obj: dict, status: dict) -> dict:
    """`obj` as the API server returns it after the operator wrote `status` through the
    /status subresource: the status, and a managedFields entry saying who wrote it."""
    entry = {"manager": "training-operator", "operation": "Update", "apiVersion": obj["apiVersion"],
             "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "subresource": "status"}
    meta = {**obj["metadata"], "managedFields": [*obj["metadata"].get("managedFields", []), entry]}
    return {**obj, "metadata": meta, "status": status}


@dataclass(frozen=True)
class Case:
    id: str
    build: object  # kind -> job object
    argo: str  # expected Argo CD health status
    flux: str  # expected Flux (kstatus) status
    message: Optional[str] = None  # expected message template ({kind}, {job})


CASES = [
    Case("no status at all", lambda k: job(k), "Progressing", "InProgress",
         "Waiting for the training operator to report status"),
    Case("created only", lambda k: job(k, [condition(k, "Created")]), "Progressing", "InProgress",
         "{kind} {job} is created."),
    Case("running", lambda k: job(k, [condition(k, "Created"), condition(k, "Running")]),
         "Progressing", "InProgress", "{kind} {job} is running."),
    Case("restarting (Running removed)",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Restarting")]),
         "Progressing", "InProgress", "{kind} {job} is restarting because 1 Worker replica(s) failed."),
    Case("succeeded with Running flipped to False",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Running", "False"), condition(k, "Succeeded")],
                       replica_statuses={BY_KIND[k].facts.replica_types[0]: {"succeeded": 1}}),
         "Healthy", "Current", "{kind} {job} is successfully completed."),
    Case("failed", lambda k: job(k, [condition(k, "Created"), condition(k, "Running", "False"),
                                     condition(k, "Failed")]),
         "Degraded", "Failed", "{kind} {job} is failed because 1 Worker replica(s) failed."),
    Case("failed by backoff limit with a custom message",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Running"),
                           {**condition(k, "Failed"),
                            "message": "Job train has failed because it has reached the specified backoff limit"}]),
         "Degraded", "Failed", "Job train has failed because it has reached the specified backoff limit"),
    Case("suspended by Kueue", lambda k: job(k, [condition(k, "Created"), condition(k, "Running", "False"),
                                                 condition(k, "Suspended")]),
         "Suspended", "InProgress", "{kind} {job} is suspended."),
    Case("suspended False after resume",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Suspended", "False"), condition(k, "Running")]),
         "Progressing", "InProgress", "{kind} {job} is running."),
    Case("resumed but not yet running",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Suspended", "False")]),
         "Progressing", "InProgress", "{kind} {job} is created."),
    Case("a Failed condition with status False does not count (MPI flips it on success)",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Failed", "False"), condition(k, "Succeeded")]),
         "Healthy", "Current", "{kind} {job} is successfully completed."),
    Case("deleting a failed job is pending deletion",
         lambda k: job(k, [condition(k, "Created"), condition(k, "Failed")], deleting=True),
         "Progressing", "InProgress", "Pending deletion"),
    Case("deleting with no status", lambda k: job(k, deleting=True), "Progressing", "InProgress",
         "Pending deletion"),
    Case("empty conditions list", lambda k: with_status(job(k), {"conditions": []}),
         "Progressing", "InProgress", "Waiting for the training operator to report status"),
]
