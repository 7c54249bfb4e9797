"""The run spec: what one run of a kubeflow.org/v1 job is built from, and what stays live.

A run starts when train-controller first creates pods for a job, and again when a suspended
job is resumed. What its pods are built from is the run spec, taken at that start: the job's
spec after upstream's in-memory defaulting (`foundation.frameworks.defaulting`), without
`runPolicy` (suspend, deadlines, backoffLimit, cleanPodPolicy, TTL and managedBy are the
job's, read live), but with `runPolicy.schedulingPolicy` (it shapes the gang the pods join),
plus the restart scope (`schemas.marks.RESTART_SCOPE`). An elastic job's Worker count is the
one live part of it (the HPA and `kubectl scale` drive it); its `elasticPolicy` bounds are
kept as written, since their defaults follow that count.

Where it sits: foundation, below both products, because two of them must agree on it.
train-controller records the run spec of each run (controller.jobs.run_records) and builds
every pod of the run from it (`run_job`), so an edit of a running job is deferred to the next
run; `train-compile plan` compares the base's and the head's run specs (`changed`) to say so
before the merge (hazard `ignored-until-next-run`). One definition, so the plan cannot promise
what the controller does not do: tests/foundation/test_run_properties.py holds the two to
each other over generated jobs and edits. Pure: plain JSON in, plain JSON out.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from foundation import jsondata
from foundation.frameworks.base import SCALED_REPLICA_TYPE, KindLike
from foundation.frameworks.defaulting import defaulted
from schemas import marks

POD, JOB = "pod", marks.RESTART_SCOPE_JOB  # the restart scopes: upstream's per pod, or the whole job
RunSpec = dict[str, Any]  # {"spec": ..., "restartScope": "pod" | "job"}, as a run record stores it


def restart_scope(job: dict[str, Any]) -> str:
    """`job` when the job's metadata asks for whole-job restarts, else `pod` (upstream's)."""
    value = ((job.get("metadata") or {}).get("annotations") or {}).get(marks.RESTART_SCOPE)
    return JOB if value == marks.RESTART_SCOPE_JOB else POD


def elastic(adapter: KindLike, spec: dict[str, Any]) -> bool:
    """The job scales its Workers at run time: a kind the operator autoscales, with an elasticPolicy."""
    return adapter.facts.autoscaled and isinstance(spec.get("elasticPolicy"), dict)


def run_spec(job: dict[str, Any], adapter: KindLike) -> RunSpec:
    """What a run of `job` (as read from the cluster or rendered, not defaulted) is built from."""
    spec = defaulted(job, adapter)["spec"]
    run_policy = spec.pop("runPolicy", None) or {}
    if run_policy.get("schedulingPolicy") is not None:
        spec["runPolicy"] = {"schedulingPolicy": run_policy["schedulingPolicy"]}
    if elastic(adapter, spec):
        worker = (spec.get(adapter.facts.replica_specs) or {}).get(SCALED_REPLICA_TYPE)
        if isinstance(worker, dict):
            worker.pop("replicas", None)
        spec["elasticPolicy"] = jsondata.copy(job["spec"]["elasticPolicy"])
    return {"spec": spec, "restartScope": restart_scope(job)}


def pods_part(data: RunSpec) -> dict[str, Any]:
    """The part of a run spec upstream's operator builds pods from as it goes: the spec without
    the gang's schedulingPolicy (its PodGroup follows that) and without our restart scope."""
    return {k: v for k, v in data["spec"].items() if k != "runPolicy"}


def spec_hash(data: RunSpec) -> str:
    """A short, stable hash of a run spec (sorted keys: the same run spec, the same hash)."""
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


def changed(old: dict[str, Any], new: dict[str, Any], adapter: KindLike) -> bool:
    """Whether a run of `new` would be built from another run spec than a run of `old`: the edit
    train-controller defers to the next run of a running job."""
    return run_spec(old, adapter) != run_spec(new, adapter)


def run_job(job: dict[str, Any], adapter: KindLike, data: RunSpec) -> dict[str, Any]:
    """The defaulted job a run's pods are built from: the run spec `data`, the live run policy
    (its schedulingPolicy the run spec's), the live Worker count of an elastic job, and the
    run's restart scope on the (in-memory) metadata."""
    spec = jsondata.copy(data["spec"])
    recorded = (spec.pop("runPolicy", None) or {}).get("schedulingPolicy")
    run_policy = {k: v for k, v in ((job.get("spec") or {}).get("runPolicy") or {}).items() if k != "schedulingPolicy"}
    if recorded is not None:
        run_policy["schedulingPolicy"] = recorded
    spec["runPolicy"] = run_policy
    if elastic(adapter, spec):
        field = adapter.facts.replica_specs
        live = ((job["spec"].get(field) or {}).get(SCALED_REPLICA_TYPE) or {}).get("replicas")
        worker = (spec.get(field) or {}).get(SCALED_REPLICA_TYPE)
        if isinstance(worker, dict) and live is not None:
            worker["replicas"] = live
    meta = dict(job["metadata"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != marks.RESTART_SCOPE}
    if data.get("restartScope") == JOB:
        annotations[marks.RESTART_SCOPE] = marks.RESTART_SCOPE_JOB
    meta["annotations"] = annotations
    return defaulted({**job, "metadata": meta, "spec": spec}, adapter, copy=False)  # `spec` is ours already
