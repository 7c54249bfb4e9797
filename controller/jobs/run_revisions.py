"""Each job's run and its ControllerRevision: which shape the run's pods come from, in the cluster.

The reconciler asks this at four points. `begin`, in every pass of a job that is neither
finished nor suspended, before anything reads the replica specs: the job's current revision
(the highest `revision` number it controls) is its run's, unless there is none yet (the
first pass that creates pods) or its run ended with a suspension (`suspended` writes that
on the revision before the suspension deletes a pod); then a new run starts
from the job's spec as it is, in a new revision (or, when the shape is one the job ran
before, that revision made current again, as a StatefulSet does), and the other revisions
of the job are deleted. The pass then works on `revisions.run_job`: every pod, Service,
PodGroup and status rule of the run sees the run's shape, whatever the job's spec says now.
A job spec that differs from its run's is announced once (`announce`: one Warning Event per
distinct change, remembered on the revision so a restarted controller or a new leader does
not repeat it). `finished`, in a finished job's passes, does the same for an edit of a
finished job, which will never run. `commit_attempt` records a whole-job restart on the
revision (controller.jobs.restarts): that write is the restart's single point of decision.
Why the suspension is marked on the revision rather than read from the job's `Suspended`
condition: a status write can be held (--pods-first) or lost in a crash, and a job resumed
before it lands would go on with the run that was suspended; the mark is written first.

Reads are the informer's (filtered by our operator label like pods and Services, indexed by
the owning job); writes are a create per run, a PATCH per announcement, suspension or restart and a
delete per superseded revision, each answer put in the cache at once (`remember`), so the
next pass never acts on the copy before it. A settled job makes no request here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from controller.jobs import revisions as rv
from controller.jobs import spec_changes
from controller.jobs.status import Ctx
from foundation.cluster import errors
from controller.runtime.informer import Informer
from controller.runtime.writes import Writes

log = logging.getLogger(__name__)

HELD_REASON, NOT_RUN_REASON = "SpecChangeHeld", "SpecChangeNotRun"  # Events' reasons, after the kind
SHAPES_KEPT = 4096  # jobs whose shape is kept hashed (all dropped at once past it: a cache, not a record)


@dataclass
class Run:
    """The run a pass works on: its revision (as last read or written) and its restart scope."""

    revision: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.revision["metadata"]["name"])

    @property
    def scope(self) -> str:
        return str((self.revision.get("data") or {}).get("restartScope") or rv.POD)

    @property
    def whole_job(self) -> bool:
        return self.scope == rv.JOB

    @property
    def attempt(self) -> int:
        return rv.attempt_of(self.revision)

    def stamp(self, pod: dict[str, Any]) -> None:
        """Called on every pod the pass creates (controller.runtime.writes)."""
        rv.stamp(pod, revision=self.name, attempt=self.attempt if self.whole_job else None)


class RunRevisions:
    """The ControllerRevisions of every job, read from one informer (module docstring)."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer
        # (uid, generation, restart scope) -> (shape, its hash): a pass on an unchanged spec
        # (every status change of a pod brings one) does not default and hash it again
        self._shapes: dict[tuple[Any, ...], tuple[dict[str, Any], str]] = {}

    def shape(self, ctx: Ctx, job: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The shape of `job` as read and its hash, from the cache when its spec has not changed
        (its `generation` moves with every spec change; the scope is in its metadata)."""
        meta = job["metadata"]
        key = (meta.get("uid"), meta.get("generation"), rv.restart_scope(job))
        found = self._shapes.get(key) if key[1] is not None else None
        if found is None:
            data = rv.shape(job, ctx.kind)
            found = (data, rv.digest(data))
            if len(self._shapes) >= SHAPES_KEPT:
                self._shapes.clear()
            self._shapes[key] = found
        return found

    def informers(self) -> list[Informer]:
        return [self.informer]

    def owned(self, ctx: Ctx) -> list[dict[str, Any]]:
        slot = f"{ctx.namespace}/{ctx.kind.facts.operator_name}/{ctx.name.replace('/', '-')}"
        return [r for r in self.informer.by_index(slot)
                if rv.controlled_by(r, ctx.job) and not r["metadata"].get("deletionTimestamp")]

    def current(self, ctx: Ctx) -> dict[str, Any] | None:
        return max(self.owned(ctx), key=rv.number, default=None)

    # ------------------------------------------------------------------ the reconciler's points
    def begin(self, writes: Writes, ctx: Ctx, job: dict[str, Any]) -> None:
        """Set `ctx.run` and make `ctx.job` the run's job; `job` is the job as read (not defaulted)."""
        data, hashed = self.shape(ctx, job)
        owned = self.owned(ctx)
        current = max(owned, key=rv.number, default=None)
        ended = current is not None and bool(rv.annotation(current, rv.ENDED))
        if current is None or (ended and rv.hash_of(current) != hashed):
            carried = rv.attempt_of(current) if current is not None else 0
            current = self._start(writes, ctx, owned, data=data, hashed=hashed, attempt=carried)
        elif ended:  # a new run of the same shape: nothing is held
            current = self._patch(writes, current, {rv.ENDED: None, rv.ANNOUNCED: None})
        elif rv.hash_of(current) != hashed:
            current = self._announce(writes, ctx, current, data, state=rv.HELD)
        ctx.run = Run(current)
        ctx.job = rv.run_job(job, ctx.kind, current["data"])

    def suspended(self, writes: Writes, ctx: Ctx) -> None:
        """The run ends with the suspension: recorded on its revision before its pods go, so the
        next pass that finds the job resumed starts a new run, whatever the status shows (a
        status write can be held or lost in a crash; this mark cannot be missed)."""
        current = self.current(ctx)
        if current is not None and not rv.annotation(current, rv.ENDED):
            self._patch(writes, current, {rv.ENDED: rv.SUSPENDED})

    def finished(self, writes: Writes, ctx: Ctx, job: dict[str, Any]) -> None:
        """A finished job whose spec differs from its last run's: one Event, nothing runs."""
        current = self.current(ctx)
        if current is None:  # finished before any run of ours (a refused job, or an older controller)
            return
        data, hashed = self.shape(ctx, job)
        if hashed != rv.hash_of(current):
            self._announce(writes, ctx, current, data, state=rv.FINISHED)

    def commit_attempt(self, writes: Writes, ctx: Ctx, *, attempt: int, cause: str) -> None:
        """Record attempt `attempt` on the run's revision, guarded by its resourceVersion: a pass
        on a stale copy loses (409, retried) instead of counting the restart twice."""
        assert ctx.run is not None
        written = self._patch(writes, ctx.run.revision, {rv.ATTEMPT: str(attempt), rv.RESTART_CAUSE: cause})
        ctx.run = Run(written)

    # ------------------------------------------------------------------ writes
    def _start(self, writes: Writes, ctx: Ctx, owned: list[dict[str, Any]], *, data: dict[str, Any], hashed: str,
               attempt: int) -> dict[str, Any]:
        newest = max((rv.number(r) for r in owned), default=0) + 1
        again = next((r for r in owned if rv.hash_of(r) == hashed), None)
        if again is not None:  # a shape the job ran before: that revision is current again
            written = self._patch(writes, again, {rv.ATTEMPT: str(attempt), rv.ANNOUNCED: None, rv.ENDED: None},
                                  number=newest)
        else:
            body = rv.body(ctx.job, ctx.kind, data=data, hashed=hashed, number=newest, attempt=attempt)
            created = writes.create_unexpected(rv.CONTROLLERREVISIONS, body)
            if created is None:  # ours, not in the cache yet (its watch event requeues the job)
                raise errors.Conflict("create", rv.CONTROLLERREVISIONS.kind, ctx.namespace, body["metadata"]["name"],
                                      "exists but is not in the cache yet")
            self.informer.remember(created)
            written = created
        for old in owned:
            if old is not again:
                self._prune(writes, old)
        return written

    def _prune(self, writes: Writes, old: dict[str, Any]) -> None:
        """A superseded run's revision: deleted (the garbage collector would, with the job); a
        failure is logged and left, the current revision being the highest number anyway."""
        try:
            writes.delete_unexpected(rv.CONTROLLERREVISIONS, old)
        except errors.ApiError as exc:
            log.warning("could not delete the superseded revision: %s", exc)

    def _announce(self, writes: Writes, ctx: Ctx, current: dict[str, Any], data: dict[str, Any], *,
                  state: str) -> dict[str, Any]:
        mark = f"{state}:{rv.digest(data)}"
        if rv.annotation(current, rv.ANNOUNCED) == mark:
            return current
        written = self._patch(writes, current, {rv.ANNOUNCED: mark})  # first: a lost Event beats a repeated one
        change = spec_changes.describe(current["data"], data, replica_specs=ctx.kind.facts.replica_specs)
        if state == rv.HELD:
            ctx.event("Warning", why=HELD_REASON, message=(
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

    def _patch(self, writes: Writes, revision: dict[str, Any], annotations: dict[str, Any], *,
               number: int | None = None) -> dict[str, Any]:
        """A merge patch of the revision's annotations (None removes one) and number, with its
        resourceVersion as precondition."""
        meta = revision["metadata"]
        body: dict[str, Any] = {"metadata": {"resourceVersion": meta.get("resourceVersion"), "annotations": annotations}}
        if number is not None:
            body["revision"] = number
        written = writes.patch(rv.CONTROLLERREVISIONS, revision, body)
        self.informer.remember(written)
        return self.informer.get(meta.get("namespace"), meta["name"]) or written
