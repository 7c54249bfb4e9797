"""When a run has started: the moment its first container ran, read from the cluster.

Until a run has started, nothing of it is lost by building its pods again, so train-controller
takes an edit of the job then (its pods are created again from the new spec: a job stuck in
`ImagePullBackOff` on a typo'd image takes the fix from git); once it has started, the edit is
held for the next run (foundation.runs.spec). `train-compile plan --live` predicts the same
(`ignored-until-next-run` only for a started run) and `status` says the same, so the rule is
here once. Pure: pods, and the run's record (a ControllerRevision), as plain JSON in.

Exactly: a run has started when one of its pods shows a container that ran, i.e. whose
status is `running` or `terminated`, now or as its `lastState` (the kubelet started its
process; a container still being pulled or created is `waiting`, and stays so on a bad image
or a missing Secret). Only the pod's own containers count, not its init containers: they are
set-up, and the ones train-controller adds wait for others (PyTorch's `init-pytorch` waits
for the master's address, so it runs beside a master stuck on a bad image). The pods of a run
are the job's pods that name the run's record (`RECORD`; a pod without it counts for the run it
is found in) and were not taken away from an earlier run (`PREVIOUS`: a suspension's pods
while they terminate); pods of every whole-job attempt of the run count, terminating ones too.
Neither `startTime` (set when the kubelet takes the pod, before any image is pulled) nor the
job's conditions (each kind's rule, one replica type) say it.

Once started, a run stays started until it ends (a suspension; the next run starts anew),
although its pods come and go: train-controller writes `STARTED` on every pod it creates for
a started run (the create is sent anyway), and on the run's record before it deletes the last
pod that shows the start, so a restarted controller or a new leader reads the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from foundation.runs.clock import parse_time
from foundation.runs.record import ENDED, PREVIOUS, RECORD, STARTED, number


def _annotations(obj: dict[str, Any]) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def container_ran(status: dict[str, Any]) -> bool:
    """A container status whose process the kubelet started: running, or terminated now or last time."""
    state = status.get("state") or {}
    return bool(state.get("running") or state.get("terminated") or (status.get("lastState") or {}).get("terminated"))


def pod_shows_start(pod: dict[str, Any]) -> bool:
    """One of the pod's own containers ran, or the pod was created for a started run."""
    if _annotations(pod).get(STARTED):
        return True
    return any(container_ran(c) for c in (pod.get("status") or {}).get("containerStatuses") or []
               if isinstance(c, dict))


def of_run(pods: Iterable[dict[str, Any]], record: Optional[str]) -> list[dict[str, Any]]:
    """The pods of the run whose record is named `record` (None: every pod not of an earlier run)."""
    return [p for p in pods if PREVIOUS not in _annotations(p)
            and (record is None or _annotations(p).get(RECORD, record) == record)]


def started(pods: Iterable[dict[str, Any]], record: Optional[dict[str, Any]] = None) -> bool:
    """Whether the run of `record` (the job's current run record; None: the job's pods alone) has
    started, from the job's pods (module docstring)."""
    if record is not None and _annotations(record).get(ENDED):
        return False
    if record is not None and _annotations(record).get(STARTED):
        return True
    name = (record.get("metadata") or {}).get("name") if record is not None else None
    return any(pod_shows_start(p) for p in of_run(pods, name))


def first_start(pods: Iterable[dict[str, Any]], *, since: Optional[str] = None) -> Optional[str]:
    """When the first of the pods' own containers started (`startedAt`, as the kubelet wrote it;
    their earlier runs included), by the same rule: what `status` ages a started run from. With
    `since` (the run's beginning: `foundation.runs.current.began`), a start before it is an
    earlier run's (a container that ran before a resume) and does not count."""
    floor = parse_time(since)
    found = []
    for pod in pods:
        for c in (pod.get("status") or {}).get("containerStatuses") or []:
            for state in ((c.get("state") or {}), (c.get("lastState") or {})):
                for phase in ("running", "terminated"):
                    at = (state.get(phase) or {}).get("startedAt")
                    when = parse_time(at)
                    if when is not None and (floor is None or when >= floor):
                        found.append((when, str(at)))
    return min(found)[1] if found else None


def current_record(records: Iterable[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """A job's current run record among the ControllerRevisions it controls: the highest `revision`
    (a record being deleted is a superseded one)."""
    live = [r for r in records if not (r.get("metadata") or {}).get("deletionTimestamp")]
    return max(live, key=number, default=None)
