"""Where progress lands: the job's `status.trainerStatus`, at most one write per job per interval.

Why the job's status: it is the one place every reader already looks. `kubectl get
pytorchjob -o yaml` and `kubectl describe` show it, `train-compile status` reads the same
field on a TrainJob (the Trainer's own), a new leader finds it where the last one left it,
and the GitOps engines never diff a status (Argo CD and Flux compare the spec and metadata
they apply). The project's CRDs declare the field (`controller/generators/crds.py`, the
Trainer's schema and limits); upstream's CRDs would prune it, which the first write notices
and logs once. The reconciler never owns the field: it carries whatever the job has over
into its own status writes (controller.jobs.reconcile).

Coalescing: the first report of a job is written at once and answered 200 (stored); a report
within `interval` of the job's last write replaces the job's pending report and is answered
202 (accepted; written at the end of the interval unless a newer one replaces it), so a job
costs at most one API write per interval whatever its pods send. The write is a JSON merge
patch of `/status` that names every field of `trainerStatus` (null for those the report
leaves out, so an old ETA never survives a report without one), with the job's uid as a
precondition (a job deleted and created again under the same name never gets its
predecessor's progress). A leader that dies loses only 202s; every 200 is in etcd.
SIGTERM writes what is pending before the Lease is released.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource
from foundation.progress.protocol import TRAINER_STATUS

log = logging.getLogger(__name__)

INTERVAL = 30.0
FIELDS = ("progressPercentage", "estimatedRemainingSeconds", "metrics", "lastUpdatedTime")
RETRY_AFTER = 2.0  # a failed write of a pending report is tried again this much later


@dataclass
class _Job:
    res: Resource
    namespace: str
    name: str
    uid: str
    last_write: float = float("-inf")
    written_observed: float = float("-inf")  # when the last written report was observed
    pending: dict[str, Any] | None = None
    pending_observed: float = float("-inf")
    writing: bool = False
    due: float | None = None


@dataclass(order=True)
class _Due:
    at: float
    key: str = field(compare=False)


def merge_patch(uid: str, status: dict[str, Any]) -> dict[str, Any]:
    """The /status merge patch that makes `status.trainerStatus` exactly `status`."""
    return {"metadata": {"uid": uid}, "status": {TRAINER_STATUS: {f: status.get(f) for f in FIELDS}}}


class ProgressStore:
    def __init__(self, client: Client, *, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic,
                 on_write: Callable[[str], None] | None = None) -> None:
        self.client, self.interval, self.clock = client, interval, clock
        self.on_write = on_write or (lambda result: None)
        self._lock = threading.Condition()
        self._jobs: dict[str, _Job] = {}
        self._heap: list[_Due] = []
        self._stop = False
        self._pruned_warned = False
        self._thread = threading.Thread(target=self._flush_loop, name="progress-writer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def offer(self, res: Resource, namespace: str, name: str, uid: str, status: dict[str, Any], *,
              observed: float, stored: float = float("-inf")) -> bool:
        """Take a validated report observed at `observed` (`stored`: when the report the job's
        status holds now was observed, as far as the cache knows); True when it is written now
        (200), False when pending or superseded by a later one (202). Raises the API error of a
        write that failed (the caller answers it)."""
        key = f"{res.kind}/{namespace}/{name}"
        with self._lock:
            job = self._jobs.get(key)
            if job is None or job.uid != uid:
                job = self._jobs[key] = _Job(res, namespace, name, uid, written_observed=stored)
            if observed < max(job.written_observed, job.pending_observed):
                return False  # reports of several ranks cross: the one observed last wins
            now = self.clock()
            if job.writing or now - job.last_write < self.interval:
                job.pending, job.pending_observed = status, observed
                self._schedule(key, job, max(job.last_write + self.interval, now))
                return False
            job.writing, job.last_write, job.written_observed = True, now, observed
        try:
            self._write(job, status)
        finally:
            with self._lock:
                job.writing = False
                if job.pending is not None:
                    self._schedule(key, job, job.last_write + self.interval)
        return True

    def _schedule(self, key: str, job: _Job, at: float) -> None:
        if job.due is None or at < job.due:
            job.due = at
            heapq.heappush(self._heap, _Due(at, key))
            self._lock.notify()

    def _write(self, job: _Job, status: dict[str, Any]) -> None:
        try:
            written = self.client.patch(job.res, job.namespace, job.name, merge_patch(job.uid, status), sub="status")
        except errors.ApiError as exc:
            self.on_write("error")
            log.log(logging.WARNING if isinstance(exc, errors.Forbidden) else logging.DEBUG,
                    "could not write the progress of %s %s/%s: %s", job.res.kind, job.namespace, job.name, exc)
            raise
        self.on_write("ok")
        if TRAINER_STATUS not in (written.get("status") or {}) and not self._pruned_warned:
            self._pruned_warned = True
            log.warning("the %s CRD pruned status.%s: install the CRDs of controller/install/crds to keep progress "
                        "(upstream's CRDs do not declare the field)", job.res.kind, TRAINER_STATUS)

    def _flush_loop(self) -> None:
        while True:
            with self._lock:
                while not self._stop and (not self._heap or self._heap[0].at > self.clock()):
                    self._lock.wait(None if not self._heap else max(self._heap[0].at - self.clock(), 0.0))
                if self._stop:
                    return
                item = heapq.heappop(self._heap)
                job = self._jobs.get(item.key)
                if job is None or job.due != item.at or job.writing or job.pending is None:
                    continue  # superseded by an earlier schedule, or nothing left to write
                status, job.pending, job.due = job.pending, None, None
                job.writing, job.last_write = True, self.clock()
                job.written_observed = max(job.written_observed, job.pending_observed)
            self._flush(item.key, job, status)

    def _flush(self, key: str, job: _Job, status: dict[str, Any]) -> None:
        retry = False
        try:
            self._write(job, status)
        except (errors.NotFound, errors.Conflict, errors.Invalid) as exc:  # deleted, recreated, or refused
            log.info("dropped the pending progress of %s: %s", key, exc)
        except errors.ApiError as exc:
            log.warning("could not write the progress of %s (%s); trying again", key, exc)
            retry = True
        with self._lock:
            job.writing = False
            if retry and job.pending is None:
                job.pending = status
            if job.pending is not None:
                self._schedule(key, job, self.clock() + (RETRY_AFTER if retry else self.interval))

    def pending(self) -> int:
        with self._lock:
            return sum(1 for j in self._jobs.values() if j.pending is not None)

    def stop(self, *, flush: bool = True) -> None:
        """Stop the writer; with `flush`, write every pending report first (SIGTERM)."""
        with self._lock:
            self._stop = True
            self._lock.notify_all()
            left = [(k, j, j.pending) for k, j in self._jobs.items() if j.pending is not None] if flush else []
            for _, job, _ in left:
                job.pending = None
        if self._thread.is_alive():
            self._thread.join(5.0)
        for key, job, status in left:
            if status is not None:
                self._flush(key, job, status)



def only_progress_changed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    """Whether a job's update changed nothing but its progress (and the version the write made):
    such an update needs no reconcile pass, which would compute the same status and write nothing."""
    if old is None or new is None:
        return False
    before, after = old.get("status") or {}, new.get("status") or {}
    if before.get(TRAINER_STATUS) == after.get(TRAINER_STATUS):
        return False
    rest = lambda status: {k: v for k, v in status.items() if k != TRAINER_STATUS}  # noqa: E731
    meta = lambda obj: {k: v for k, v in (obj.get("metadata") or {}).items()  # noqa: E731
                        if k not in ("resourceVersion", "managedFields")}
    return rest(before) == rest(after) and old.get("spec") == new.get("spec") and meta(old) == meta(new)
