"""A run's record as the cluster holds it: the names train-controller writes, and `plan` and `status` read.

train-controller keeps each run's run spec (`foundation.runs.spec`) in an `apps/v1`
ControllerRevision owned by the job (controller.jobs.run_record says why and how), labelled
like the job's pods, and names it on every pod it builds from it; whether the run has started
(`foundation.runs.started`) is read from the same objects. `train-compile status` reads them to
say what the run runs beside what git and the job object say (a change held for the next run),
and its Events by their reasons. So the wire names are here, below both products, once.
"""

from __future__ import annotations

from typing import Any, Optional

PREFIX = "train-controller.trainforge.dev/"
RECORD = PREFIX + "revision"  # on each pod: the name of the run record it was built from (wire name)
ATTEMPT = PREFIX + "attempt"  # on each pod of a scope-job run, and on the record: the whole-job attempt
ENDED = PREFIX + "run-ended"  # on the record: its run ended ("suspended"); the next pass starts a new one
STARTED = PREFIX + "run-started"  # on a pod created for a started run, or on the run's record: "true"
PREVIOUS = PREFIX + "deleted-for"  # on a pod taken away from its run before its delete (controller.jobs.runs)
HASH_LABEL = "controller.kubernetes.io/hash"  # as a StatefulSet's revisions carry it
# the Events' reasons after the job's kind (`PyTorchJobSpecChangeHeld`): a change held for the next
# run (the word is historical: "deferred"), one of a finished job that will not run, and one taken
# by a run that had not started (its pods created again)
HELD_REASON, NOT_RUN_REASON, APPLIED_REASON = "SpecChangeHeld", "SpecChangeNotRun", "SpecChangeApplied"


def record_of(pod: dict[str, Any]) -> Optional[str]:
    """The name of the run record `pod` was built from (None: not built by train-controller)."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(RECORD)
    return str(value) if value else None


def number(record: dict[str, Any]) -> int:
    """The record's `revision` number (the newest run's is the highest)."""
    return int(record.get("revision") or 0)


def controller_uid(obj: dict[str, Any]) -> Optional[str]:
    """The uid of the object's controlling owner (None: it has none)."""
    owners = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((str(r.get("uid")) for r in owners if r.get("controller")), None)


def owned_by(record: dict[str, Any], uid: Optional[str]) -> bool:
    """Whether `record` is controlled by the job with `uid`."""
    owners = (record.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("controller") and r.get("uid") == uid for r in owners)
