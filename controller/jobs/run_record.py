"""A run's record: the ControllerRevision that holds its run spec, pure functions, no I/O.

At the start of each run of a job (controller.jobs.run_records says when) its run spec
(`foundation.runs.spec`: what every pod of the run is built from) is recorded in an `apps/v1`
ControllerRevision `{job}-{hash}` owned by the job, as a StatefulSet keeps its pod templates.
Every pod of the run is built from it (`foundation.runs.spec.run_job`), so an edit of a running
job never puts a pod of another spec beside the run's: it is deferred to the next run.

Why a ControllerRevision: it lives in the cluster (a restarted controller or a new leader
reads the same), it is owned by the job (the garbage collector removes it with the job),
the job's status holds upstream's fields only (the CRDs prune the rest) and its spec and
metadata belong to git. The record also carries what the controller must not forget
about the run: which change it has announced, and the whole-job restart attempt.

Words: "run record" is this object (Kubernetes' kind name ControllerRevision; its `revision`
field is its number); a git revision is the plan's, never this. The annotation keys below
are wire names, kept as first shipped: `.../revision` on a pod names its run record, and an
announcement's state `held` means a change deferred to the next run.
"""

from __future__ import annotations

from typing import Any

from controller.jobs.desired import base_labels, owner_reference
from controller.jobs.kinds import Kind
from foundation.cluster.resource import CONTROLLERREVISIONS as CONTROLLERREVISIONS
from foundation.runs.record import (  # the wire names and reading of a record, shared with `plan` and `status`
    APPLIED_REASON as APPLIED_REASON,
    ATTEMPT as ATTEMPT,
    ENDED as ENDED,
    HASH_LABEL as HASH_LABEL,
    HELD_REASON as HELD_REASON,
    NOT_RUN_REASON as NOT_RUN_REASON,
    PREFIX,
    RECORD as RECORD,
    STARTED as STARTED,
    number as number,
    owned_by,
)
from foundation.runs.spec import RunSpec

RESTART_CAUSE = PREFIX + "restart-cause"  # on the record: what started the current attempt
ANNOUNCED = PREFIX + "announced"  # on the record: "held:<hash>" / "finished:<hash>", the change last announced
DEFERRED, FINISHED, SUSPENDED = "held", "finished", "suspended"  # DEFERRED's wire value is historical


def name_of(job: dict[str, Any], hashed: str) -> str:
    return f"{job['metadata']['name']}-{hashed}"


def body(job: dict[str, Any], kind: Kind, *, data: RunSpec, hashed: str, number: int,
         attempt: int) -> dict[str, Any]:
    """The run record of a new run (labelled like the job's pods: our filtered cache sees it)."""
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


# ---------------------------------------------------------------------- reading records
def hash_of(record: dict[str, Any]) -> str:
    return str((record["metadata"].get("labels") or {}).get(HASH_LABEL, ""))


def attempt_of(obj: dict[str, Any]) -> int:
    """The whole-job attempt a pod belongs to, or the current one of a record (0 when unset)."""
    raw = (obj["metadata"].get("annotations") or {}).get(ATTEMPT)
    try:
        return int(str(raw)) if raw is not None else 0
    except ValueError:
        return 0


def annotation(record: dict[str, Any], key: str) -> str:
    return str((record["metadata"].get("annotations") or {}).get(key) or "")


def controlled_by(obj: dict[str, Any], job: dict[str, Any]) -> bool:
    return owned_by(obj, job["metadata"].get("uid"))


def stamp(pod: dict[str, Any], *, record: str, attempt: int | None, started: bool = False) -> None:
    """Mark a pod with its run's record (and, under restart scope job, its attempt, and the
    restartPolicy Never that lets the controller see every exit: controller.jobs.restarts); a
    pod created for a run that has started says so (foundation.runs.started)."""
    annotations = pod["metadata"].setdefault("annotations", {})
    annotations[RECORD] = record
    if started:
        annotations[STARTED] = "true"
    if attempt is not None:
        annotations[ATTEMPT] = str(attempt)
        pod["spec"]["restartPolicy"] = "Never"
