"""Each job's run and its run record (a ControllerRevision): which run spec the run's pods come from.

The reconciler asks this at four points. `begin`, in every pass of a job that is neither
finished nor suspended, before anything reads the replica specs: the job's current record
(the highest `revision` number it controls) is its run's, unless there is none yet (the
first pass that creates pods) or its run ended with a suspension (`suspended` writes that
on the record before the suspension deletes a pod); then a new run starts from the job's
spec as it is, in a new record (or, when the run spec is one the job ran before, that record
made current again, as a StatefulSet does), and the other records of the job are deleted.
Which of these a pass takes is `next_step`, pure. The pass then works on
`foundation.runs.spec.run_job`: every pod, Service, PodGroup and status rule of the run sees
the run spec, whatever the job's spec says now. A job spec that differs from its run's is
deferred to the next run and announced once (`announce`: one Warning Event per distinct
change, remembered on the record so a restarted controller or a new leader does not repeat
it), if the run has started (`foundation.runs.started`: a container of its pods ran). If it
has not, nothing is lost by taking the change: the run is replaced (a new record from the
job's spec as it is, one Normal Event naming the change), its pods built from the old record
are deleted, and no pod of the new record is created while one of them exists (`superseded`),
so the job never has pods of two shapes. That the run started stays known while its pods come
and go (`Run.shows_start`, `before_delete`): every pod created for a started run says so, and
the record does before the pass deletes the last pod that shows it. `finished`, in a finished job's passes, does the same for an edit of a finished job,
which will never run. `commit_attempt` records a whole-job restart on the record
(controller.jobs.restarts): that write is the restart's single point of decision. Why the
suspension is marked on the record rather than read from the job's `Suspended` condition: a
status write can be gated (--pods-first) or lost in a crash, and a job resumed before it
lands would go on with the run that was suspended; the mark is written first.

Reads are the informer's (filtered by our operator label like pods and Services, indexed by
the owning job); writes are a create per run, a PATCH per announcement, suspension or restart and a
delete per superseded record, each answer put in the cache at once (`remember`), so the
next pass never acts on the copy before it. A settled job makes no request here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import threading
from collections.abc import Callable
from concurrent.futures import Future

from controller.jobs import journal
from controller.jobs import run_record as rr
from controller.jobs import spec_changes
from controller.jobs.status import Ctx
from controller.runtime.creates import CreatePool
from controller.runtime.informer import Informer
from controller.runtime.writes import Writes
from foundation.cluster import errors
from foundation.runs import spec as runspec
from foundation.runs import started as runstart

log = logging.getLogger(__name__)

# Events' reasons, after the kind: wire names (a deferred change's is historical: "held"), read by `status`
DEFERRED_REASON, NOT_RUN_REASON, APPLIED_REASON = rr.HELD_REASON, rr.NOT_RUN_REASON, rr.APPLIED_REASON
SPECS_KEPT = 4096  # jobs whose run spec is kept hashed (all dropped at once past it: a cache, not a record)
START, REOPEN, DEFER, REPLACE, SAME = "start", "reopen", "defer", "replace", "same"  # what `begin` does


def next_step(current: dict[str, Any] | None, hashed: str, *, started: bool) -> str:
    """What a running pass does with the job's current record, the hash of the job's run spec
    now and whether the run has started: START a new run (no record yet, or the last run ended
    with a suspension and the spec changed since), REOPEN the ended run's record (resumed with
    the same run spec), DEFER the job's change to the next run (a started run goes on with its
    record), REPLACE the run (one that has not started takes the change), or nothing (SAME)."""
    ended = current is not None and bool(rr.annotation(current, rr.ENDED))
    if current is None or (ended and rr.hash_of(current) != hashed):
        return START
    if ended:
        return REOPEN
    if rr.hash_of(current) == hashed:
        return SAME
    return DEFER if started else REPLACE


@dataclass
class Run:
    """The run a pass works on: its record (as last read or written), its restart scope, and
    whether it has started, with the pods that show it (`before_delete` keeps that durable)."""

    record: dict[str, Any]  # as written, or (`pending`) as sent: its name and data are what a pass needs
    pending: Future[Any] | None = None  # the record's create, sent beside the run's first pods
    started: bool = False
    shows_start: set[str] = field(default_factory=set)  # pods of the run, not being deleted, that show the start
    mark_started: Callable[[], None] | None = None  # writes runstart.STARTED on the record
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return str(self.record["metadata"]["name"])

    @property
    def scope(self) -> str:
        return str((self.record.get("data") or {}).get("restartScope") or runspec.POD)

    @property
    def whole_job(self) -> bool:
        return self.scope == runspec.JOB

    @property
    def attempt(self) -> int:
        return rr.attempt_of(self.record)

    @property
    def marked(self) -> bool:
        return bool(rr.annotation(self.record, runstart.STARTED))

    def stamp(self, pod: dict[str, Any]) -> None:
        """Called on every pod the pass creates (Ctx.admit_pod)."""
        rr.stamp(pod, record=self.name, attempt=self.attempt if self.whole_job else None, started=self.started)

    def before_delete(self, pod: dict[str, Any]) -> None:
        """Called before the pass deletes one of the job's pods (Ctx.before_delete): the last pod
        that shows the run's start is not deleted before the record says it (one PATCH, rare: a
        restart of the only pod that ran)."""
        name = pod["metadata"]["name"]
        with self._lock:
            if name not in self.shows_start:
                return
            self.shows_start.discard(name)
            if self.shows_start or self.marked or self.mark_started is None:
                return
            self.mark_started()


class RunRecords:
    """The run records of every job, read from one informer (module docstring)."""

    def __init__(self, informer: Informer, *, pool: CreatePool | None = None) -> None:
        self.informer = informer
        self.pool = pool  # a new record's create goes out beside the pass's pod creates (None: before them)
        # (uid, generation, restart scope) -> (run spec, its hash): a pass on an unchanged spec
        # (every status change of a pod brings one) does not default and hash it again
        self._specs: dict[tuple[Any, ...], tuple[runspec.RunSpec, str]] = {}
        # uids of records whose run this process saw started: a pod deleted with no grace period
        # by someone else can take the only sign of the start with it (made durable: `_durable`)
        self._seen_started: set[str] = set()
        # (run spec hash, record hash, record uid) -> whether the two build the same pods (`as_run`)
        self._same: dict[tuple[Any, ...], bool] = {}

    def run_spec(self, ctx: Ctx, job: dict[str, Any]) -> tuple[runspec.RunSpec, str]:
        """The run spec of `job` as read and its hash, from the cache when its spec has not
        changed (its `generation` moves with every spec change; the scope is in its metadata)."""
        meta = job["metadata"]
        key = (meta.get("uid"), meta.get("generation"), runspec.restart_scope(job))
        found = self._specs.get(key) if key[1] is not None else None
        if found is None:
            data = runspec.run_spec(job, ctx.kind)
            found = (data, runspec.spec_hash(data))
            if len(self._specs) >= SPECS_KEPT:
                self._specs.clear()
            self._specs[key] = found
        return found

    def as_run(self, ctx: Ctx, job: dict[str, Any], current: dict[str, Any] | None) -> tuple[runspec.RunSpec, str]:
        """`run_spec`, or the current record's when the two build the same pods
        (`runspec.same_run`: a pod default an adopting GitOps engine deleted is no change to hold
        or to replace a run for). Asked again only when the job's spec or the record changes."""
        data, hashed = self.run_spec(ctx, job)
        if current is None or hashed == rr.hash_of(current):
            return data, hashed
        key = (hashed, rr.hash_of(current), current["metadata"].get("uid"))
        same = self._same.get(key)
        if same is None:
            same = runspec.same_run(current["data"], data, ctx.kind)
            if len(self._same) >= SPECS_KEPT:
                self._same.clear()
            self._same[key] = same
        return (current["data"], rr.hash_of(current)) if same else (data, hashed)

    def informers(self) -> list[Informer]:
        return [self.informer]

    def owned(self, ctx: Ctx) -> list[dict[str, Any]]:
        slot = f"{ctx.namespace}/{ctx.kind.facts.operator_name}/{ctx.name.replace('/', '-')}"
        return [r for r in self.informer.by_index(slot)
                if rr.controlled_by(r, ctx.job) and not r["metadata"].get("deletionTimestamp")]

    def current(self, ctx: Ctx) -> dict[str, Any] | None:
        return runstart.current_record(self.owned(ctx))

    # ------------------------------------------------------------------ the reconciler's points
    def begin(self, writes: Writes, ctx: Ctx, job: dict[str, Any],
              pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Set `ctx.run` and make `ctx.job` the run's job; `job` is the job as read (not defaulted),
        `pods` the job's pods not taken from an earlier run. Returns (the run's pods, the pods
        built from a record the run replaced: `superseded`)."""
        owned = self.owned(ctx)
        current = runstart.current_record(owned)
        data, hashed = self.as_run(ctx, job, current)
        started = current is not None and (runstart.started(pods, current)
                                           or current["metadata"].get("uid") in self._seen_started)
        step = next_step(current, hashed, started=started)
        sent: Future[Any] | None = None  # a new record's create, when it went out beside the pods
        if step == START:
            carried = rr.attempt_of(current) if current is not None else 0
            current, sent = self._start(writes, ctx, owned, data=data, hashed=hashed, attempt=carried)
        elif step == REOPEN:  # a new run of the same run spec: nothing is deferred
            current = self._patch(writes, current, {rr.ENDED: None, rr.ANNOUNCED: None, runstart.STARTED: None})
        elif step == DEFER:
            current = self._announce(writes, ctx, current, data, state=rr.DEFERRED)
        elif step == REPLACE:
            assert current is not None
            old = current
            current, sent = self._start(writes, ctx, owned, data=data, hashed=hashed, attempt=rr.attempt_of(old))
            self._applied(ctx, old, current, data)
        assert current is not None
        mine, superseded = superseded_split(pods, current["metadata"]["name"])
        ctx.run = self._run(writes, current, mine, started=step in (DEFER, SAME) and started)
        ctx.run.pending = sent
        ctx.job = runspec.run_job(job, ctx.kind, current["data"])
        return mine, superseded

    def settle(self, ctx: Ctx) -> None:
        """Wait for the pass's record create, if it sent one (the pass fails if it failed; the pods it
        created name the record, and the next pass creates it again, from the same run spec)."""
        run = ctx.run
        if run is None or run.pending is None:
            return
        pending, run.pending = run.pending, None
        created = pending.result()
        if created is not None:  # None: ours already (its watch event is on the way)
            self.informer.remember(created)
            run.record = created

    def _run(self, writes: Writes, record: dict[str, Any], pods: list[dict[str, Any]], *, started: bool) -> Run:
        """The pass's Run; a started run whose start no pod shows any more is written on its record."""
        run = Run(record, started=started, shows_start={
            p["metadata"]["name"] for p in pods if runstart.pod_shows_start(p) and not p["metadata"].get("deletionTimestamp")})

        def mark() -> None:
            run.record = self._patch(writes, run.record, {runstart.STARTED: "true"})

        run.mark_started = mark
        if started:
            uid = str(record["metadata"].get("uid"))
            if len(self._seen_started) >= SPECS_KEPT:
                self._seen_started.clear()
            self._seen_started.add(uid)
            if not run.shows_start and not run.marked:
                mark()
        return run

    def suspended(self, writes: Writes, ctx: Ctx) -> None:
        """The run ends with the suspension: recorded on its record before its pods go, so the
        next pass that finds the job resumed starts a new run, whatever the status shows (a
        status write can be gated or lost in a crash; this mark cannot be missed)."""
        current = self.current(ctx)
        if current is not None and not rr.annotation(current, rr.ENDED):
            self._patch(writes, current, {rr.ENDED: rr.SUSPENDED})

    def finished(self, writes: Writes, ctx: Ctx, job: dict[str, Any]) -> None:
        """A finished job whose spec differs from its last run's: one Event, nothing runs."""
        current = self.current(ctx)
        if current is None:  # finished before any run of ours (a refused job, or an older controller)
            return
        data, hashed = self.as_run(ctx, job, current)
        if hashed != rr.hash_of(current):
            self._announce(writes, ctx, current, data, state=rr.FINISHED)

    def commit_attempt(self, writes: Writes, ctx: Ctx, *, attempt: int, cause: str) -> None:
        """Record attempt `attempt` on the run's record, guarded by its resourceVersion: a pass
        on a stale copy loses (409, retried) instead of counting the restart twice."""
        assert ctx.run is not None
        started = {runstart.STARTED: "true"} if ctx.run.started and not ctx.run.marked else {}
        written = self._patch(writes, ctx.run.record, {rr.ATTEMPT: str(attempt), rr.RESTART_CAUSE: cause, **started})
        ctx.run.record = written  # every pod of the attempt goes: the record now says the run started

    # ------------------------------------------------------------------ writes
    def _start(self, writes: Writes, ctx: Ctx, owned: list[dict[str, Any]], *, data: runspec.RunSpec, hashed: str,
               attempt: int) -> tuple[dict[str, Any], Future[Any] | None]:
        """The new run's record, written (or, for a job's first run, sent: the create's future)."""
        newest = max((rr.number(r) for r in owned), default=0) + 1
        again = next((r for r in owned if rr.hash_of(r) == hashed), None)
        if again is not None:  # a run spec the job ran before: that record is current again
            written = self._patch(writes, again, {rr.ATTEMPT: str(attempt), rr.ANNOUNCED: None, rr.ENDED: None,
                                                  runstart.STARTED: None}, number=newest)
        elif self.pool is not None and not owned:  # a job's first run: its pods need the name and data only
            written = rr.body(ctx.job, ctx.kind, data=data, hashed=hashed, number=newest, attempt=attempt)
            return written, self.pool.submit(writes.create_unexpected, rr.CONTROLLERREVISIONS, written)
        else:
            body = rr.body(ctx.job, ctx.kind, data=data, hashed=hashed, number=newest, attempt=attempt)
            created = writes.create_unexpected(rr.CONTROLLERREVISIONS, body)
            if created is None:  # ours, not in the cache yet (its watch event requeues the job)
                raise errors.Conflict("create", rr.CONTROLLERREVISIONS.kind, ctx.namespace, body["metadata"]["name"],
                                      "exists but is not in the cache yet")
            self.informer.remember(created)
            written = created
        for old in owned:
            if old is not again:
                self._prune(writes, old)
        return written, None

    def _prune(self, writes: Writes, old: dict[str, Any]) -> None:
        """A superseded run's record: deleted (the garbage collector would, with the job); a
        failure is logged and left, the current record being the highest number anyway."""
        try:
            writes.delete_unexpected(rr.CONTROLLERREVISIONS, old)
        except errors.ApiError as exc:
            log.warning("could not delete the superseded run record: %s", exc)

    def _announce(self, writes: Writes, ctx: Ctx, current: dict[str, Any], data: runspec.RunSpec, *,
                  state: str) -> dict[str, Any]:
        mark = f"{state}:{runspec.spec_hash(data)}"
        if rr.annotation(current, rr.ANNOUNCED) == mark:
            return current
        written = self._patch(writes, current, {rr.ANNOUNCED: mark})  # first: a lost Event beats a repeated one
        # told as the pods run it: a pod default written out or left out is no part of the change
        change = spec_changes.describe(runspec.as_pods_run_it(current["data"], ctx.kind),
                                       runspec.as_pods_run_it(data, ctx.kind), replica_specs=ctx.kind.facts.replica_specs)
        if state == rr.DEFERRED:
            ctx.event("Warning", why=DEFERRED_REASON, message=(
                f"{ctx.kind.name} {ctx.name} runs the spec it started with (ControllerRevision {written['metadata']['name']});"
                f" this change is held until its next run: {change}. To run it now, suspend and resume the job, "
                "or delete and create it"))
        else:
            outcome = "succeeded" if any(c.get("type") == "Succeeded" and c.get("status") == "True"
                                         for c in ctx.status.get("conditions") or []) else "failed"
            ctx.event("Warning", why=NOT_RUN_REASON, message=(
                f"{ctx.kind.name} {ctx.name} has {outcome} and does not run again; this change will not run: {change}."
                " To run it, delete the job and create it again"))
        return written

    def _applied(self, ctx: Ctx, old: dict[str, Any], new: dict[str, Any], data: runspec.RunSpec) -> None:
        """The one Event of a run replaced before it started (the pass that replaced its record)."""
        change = spec_changes.describe(runspec.as_pods_run_it(old["data"], ctx.kind), runspec.as_pods_run_it(data, ctx.kind),
                                       replica_specs=ctx.kind.facts.replica_specs)
        message = (f"{ctx.kind.name} {ctx.name} had not started (no container of its pods had run), so it takes this"
                   f" change now: its pods are created again from ControllerRevision {new['metadata']['name']}: {change}")
        ctx.event("Normal", why=APPLIED_REASON, message=message)
        journal.spec_applied(ctx.key, change)

    def _patch(self, writes: Writes, record: dict[str, Any], annotations: dict[str, Any], *,
               number: int | None = None) -> dict[str, Any]:
        """A merge patch of the record's annotations (None removes one) and number, with its
        resourceVersion as precondition."""
        meta = record["metadata"]
        body: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": annotations}}
        if number is not None:
            body["revision"] = number
        written = writes.patch(rr.CONTROLLERREVISIONS, record, body)
        self.informer.remember(written)
        return self.informer.get(meta.get("namespace"), meta["name"]) or written


def superseded_split(pods: list[dict[str, Any]], record: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the run's pods, the pods built from another record: a run replaced before it started). A
    pod without a record (made by a release before records) counts for the run."""
    mine, superseded = [], []
    for pod in pods:
        named = (pod["metadata"].get("annotations") or {}).get(rr.RECORD)
        (superseded if named is not None and named != record else mine).append(pod)
    return mine, superseded
