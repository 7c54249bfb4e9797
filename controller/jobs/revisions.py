"""A run's shape, as the ControllerRevision that records it: pure functions, no I/O.

A run starts when the controller first creates pods for a job, and again when a suspended
job is resumed. At its start the shape the run's pods are built from is recorded in an
`apps/v1` ControllerRevision `{job}-{hash}` owned by the job, as a StatefulSet keeps its
pod templates: the job's spec after the in-memory defaulting, without `runPolicy` (suspend,
deadlines, backoffLimit, cleanPodPolicy, TTL and managedBy are the job's, live), but with
`runPolicy.schedulingPolicy` (it shapes the gang the pods join), plus the restart scope
(`schemas.marks.RESTART_SCOPE`). Every pod of the run is built from it (`run_job`), so an
edit of a running job never puts a pod of another spec beside the run's: it waits for
the next run (controller.jobs.run_revisions announces it). An elastic PyTorchJob's Worker
count is the one live part of the shape: the HPA and `kubectl scale` drive it as before;
its `elasticPolicy` bounds are kept as written, since their defaults follow that count.

Why a ControllerRevision: it lives in the cluster (a restarted controller or a new leader
reads the same), it is owned by the job (the garbage collector removes it with the job),
the job's status holds upstream's fields only (the CRDs prune the rest) and its spec and
metadata belong to git. The revision also carries what the controller must not forget
about the run: which change it has announced, and the whole-job restart attempt.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from controller.jobs import defaults
from controller.jobs.desired import base_labels, owner_reference
from controller.jobs.kinds import Kind
from foundation import jsondata
from foundation.cluster.kube import Resource
from schemas import marks
from schemas.upstream import SCALED_REPLICA_TYPE

CONTROLLERREVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")
HASH_LABEL = "controller.kubernetes.io/hash"  # as a StatefulSet's revisions carry it
PREFIX = "train-controller.trainforge.dev/"
REVISION = PREFIX + "revision"  # on each pod: the name of the revision it was built from
ATTEMPT = PREFIX + "attempt"  # on each pod of a scope-job run, and on the revision: the whole-job attempt
RESTART_CAUSE = PREFIX + "restart-cause"  # on the revision: what started the current attempt
ANNOUNCED = PREFIX + "announced"  # on the revision: "held:<hash>" / "finished:<hash>", the change last announced
ENDED = PREFIX + "run-ended"  # on the revision: its run ended ("suspended"); the next pass starts a new one
HELD, FINISHED, SUSPENDED = "held", "finished", "suspended"
POD, JOB = "pod", marks.RESTART_SCOPE_JOB


def restart_scope(job: dict[str, Any]) -> str:
    """`job` when the job's metadata asks for whole-job restarts, else `pod` (upstream's)."""
    value = ((job.get("metadata") or {}).get("annotations") or {}).get(marks.RESTART_SCOPE)
    return JOB if value == marks.RESTART_SCOPE_JOB else POD


def _elastic(kind: Kind, spec: dict[str, Any]) -> bool:
    return kind.facts.autoscaled and isinstance(spec.get("elasticPolicy"), dict)


def shape(job: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """What a run of `job` (as read from the cluster, not defaulted) is built from."""
    spec = defaults.apply(job, kind)["spec"]
    run_policy = spec.pop("runPolicy", None) or {}
    if run_policy.get("schedulingPolicy") is not None:
        spec["runPolicy"] = {"schedulingPolicy": run_policy["schedulingPolicy"]}
    if _elastic(kind, spec):
        worker = spec[kind.facts.replica_specs].get(SCALED_REPLICA_TYPE)
        if isinstance(worker, dict):
            worker.pop("replicas", None)
        spec["elasticPolicy"] = jsondata.copy(job["spec"]["elasticPolicy"])
    return {"spec": spec, "restartScope": restart_scope(job)}


def digest(data: dict[str, Any]) -> str:
    """A short, stable hash of a shape (sorted keys: the same shape, the same name)."""
    return hashlib.sha256(orjson.dumps(data, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


def name_of(job: dict[str, Any], hashed: str) -> str:
    return f"{job['metadata']['name']}-{hashed}"


def body(job: dict[str, Any], kind: Kind, *, data: dict[str, Any], hashed: str, number: int,
         attempt: int) -> dict[str, Any]:
    """The ControllerRevision of a new run (labelled like the job's pods: our filtered cache sees it)."""
    annotations = {ATTEMPT: str(attempt)} if attempt else {}
    return {
        "apiVersion": CONTROLLERREVISIONS.api_version,
        "kind": CONTROLLERREVISIONS.kind,
        "metadata": {"name": name_of(job, hashed), "namespace": job["metadata"].get("namespace", "default"),
                     "labels": {**base_labels(job, kind), HASH_LABEL: hashed},
                     **({"annotations": annotations} if annotations else {}),
                     "ownerReferences": [owner_reference(job, kind)]},
        "data": data,
        "revision": number,
    }


def run_job(job: dict[str, Any], kind: Kind, data: dict[str, Any]) -> dict[str, Any]:
    """The defaulted job a run's pods are built from: the revision's shape, the live run policy
    (its schedulingPolicy the revision's), the live Worker count of an elastic job, and the
    run's restart scope on the (in-memory) metadata."""
    spec = jsondata.copy(data["spec"])
    recorded = (spec.pop("runPolicy", None) or {}).get("schedulingPolicy")
    run_policy = {k: v for k, v in ((job.get("spec") or {}).get("runPolicy") or {}).items() if k != "schedulingPolicy"}
    if recorded is not None:
        run_policy["schedulingPolicy"] = recorded
    spec["runPolicy"] = run_policy
    if _elastic(kind, spec):
        live = ((job["spec"].get(kind.facts.replica_specs) or {}).get(SCALED_REPLICA_TYPE) or {}).get("replicas")
        worker = spec[kind.facts.replica_specs].get(SCALED_REPLICA_TYPE)
        if isinstance(worker, dict) and live is not None:
            worker["replicas"] = live
    meta = dict(job["metadata"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != marks.RESTART_SCOPE}
    if data.get("restartScope") == JOB:
        annotations[marks.RESTART_SCOPE] = marks.RESTART_SCOPE_JOB
    meta["annotations"] = annotations
    return defaults.apply({**job, "metadata": meta, "spec": spec}, kind, copy=False)  # `spec` is ours already


# ---------------------------------------------------------------------- reading revisions
def hash_of(revision: dict[str, Any]) -> str:
    return str((revision["metadata"].get("labels") or {}).get(HASH_LABEL, ""))


def number(revision: dict[str, Any]) -> int:
    return int(revision.get("revision") or 0)


def attempt_of(obj: dict[str, Any]) -> int:
    """The whole-job attempt a pod belongs to, or the current one of a revision (0 when unset)."""
    raw = (obj["metadata"].get("annotations") or {}).get(ATTEMPT)
    try:
        return int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0


def annotation(revision: dict[str, Any], key: str) -> str:
    return str((revision["metadata"].get("annotations") or {}).get(key) or "")


def controlled_by(obj: dict[str, Any], job: dict[str, Any]) -> bool:
    return any(r.get("controller") and r.get("uid") == job["metadata"].get("uid")
               for r in obj["metadata"].get("ownerReferences") or [])


def stamp(pod: dict[str, Any], *, revision: str, attempt: int | None) -> None:
    """Mark a pod with its run's revision (and, under restart scope job, its attempt, and the
    restartPolicy Never that lets the controller see every exit: controller.jobs.restarts)."""
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations[REVISION] = revision
    if attempt is not None:
        annotations[ATTEMPT] = str(attempt)
        pod["spec"]["restartPolicy"] = "Never"
