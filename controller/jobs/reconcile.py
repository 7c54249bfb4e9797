"""Level-based reconcile of one job key: read the caches, diff, act, write status if changed.

The order is upstream's `ReconcileJobs` (semantics §6): skip jobs managed elsewhere or
being deleted or with unobserved creates/deletes; validate; default in memory; (the
autoscaled kind's HPA;) then finished-job cleanup and TTL, or suspend, or (resume,) failure
limits, (the gang PodGroup, which may keep the pods waiting,) then the pod and service
pass and the framework's status rule. Unlike upstream, the pods a suspension deleted are
left out of everything after it while they terminate (controller.jobs.runs); after the
resume step the pass works on its run's spec, not the job's spec as edited
(controller.jobs.run_records: a finished job's edit and a suspension are recorded there
too); under restart scope job a retryable exit restarts every pod as one attempt, before
the failure limits would see it (controller.jobs.restarts); and a running pass says which
pods are stuck past the threshold (controller.jobs.stuck), its next wake the sooner of the
deadline and the next waiting pod's threshold. Each thing that happens to a job is one INFO
line (controller.jobs.journal). Status goes to `/status` with the cached resourceVersion as
precondition, and only when it differs from what is stored (`lastReconcileTime` ignored), so
a settled job costs zero write requests. A malformed job (one the code cannot read) fails at
validation, as one the webhook refuses (controller.jobs.malformed). Errors propagate to the
manager, which retries with backoff (controller.runtime.bugs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from controller.jobs import checks, desired, diff, journal, malformed, restarts, run_policy, runs, stuck
from controller.jobs.counts import CountWrites, comparable
from controller.jobs import conditions as cond
from controller.jobs import status as st
from controller.jobs.addons import Gang, JobStep, PodPass
from controller.jobs.kinds import Kind, job_resource
from controller.jobs.retiring import Retirer
from controller.jobs.run_records import RunRecords
from controller.runtime.burst import Held
from controller.runtime.creates import CreatePool
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.informer import Informer
from controller.runtime.workqueue import WorkQueue
from controller.runtime.writes import Writes, job_key
from foundation import jsondata
from foundation.progress.protocol import carry_progress
from foundation.cluster import errors
from foundation.cluster.kube import PODS, SERVICES, Client, Resource
from foundation.frameworks.defaulting import defaulted

log = logging.getLogger(__name__)

EXITED = "ExitedWithCode"  # upstream's reason for a pod seen terminated (semantics §4)


class InvalidJob(Exception):
    """An invalid job upstream reports and retries (MPIJob and MXJob validation, a pod it
    refuses to build): the manager retries with backoff and logs one line, no traceback."""


@dataclass
class Reconciler:
    client: Client
    kinds: dict[str, Kind]
    jobs: dict[str, Informer]
    pods: Informer
    services: Informer
    expectations: Expectations
    recorder: EventRecorder
    queue: WorkQueue
    creates: CreatePool  # a pass's pod and service creates go out together (controller.runtime.creates)
    options: desired.Options = field(default_factory=desired.Options)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(timezone.utc))
    gang: Gang | None = None
    pod_passes: dict[str, PodPass] = field(default_factory=dict)  # by kind: a pass of its own (MPI's)
    job_steps: dict[str, JobStep] = field(default_factory=dict)  # by kind: run first in every pass (HPA)
    held: Held | None = None  # --pods-first: Services and plain status writes wait out a pod burst (controller.runtime.burst)
    records: RunRecords | None = None  # each run's record (controller.jobs.run_records); None: the spec as it is
    stuck_after: float = 0.0  # seconds a pod may wait for a stuck reason before its job says so (0: never)

    def __post_init__(self) -> None:
        self.writes = Writes(self.client, self.expectations, emit=self._emit_for, retry=self.queue.add_rate_limited,
                             held=self.held)
        self.retirer = Retirer(self.writes, self.pods, self.creates)
        self.stuck = stuck.Reported()  # which stuck pods were said, and how many are stuck now (the gauge)
        self.counts = CountWrites()  # status changes of replica counts alone wait a moment (controller.jobs.counts)

    # ------------------------------------------------------------------ entry point
    def reconcile(self, key: str) -> float | None:
        """One pass for `Kind/namespace/name`; returns seconds until it wants to run again."""
        kind_name, namespace, name = key.split("/", 2)
        kind = self.kinds[kind_name]
        job = self.jobs[kind_name].get(namespace, name)
        if job is None or run_policy.managed_elsewhere(job, kind_name) or job["metadata"].get("deletionTimestamp"):
            if job is None:
                self.expectations.forget(key)
                self.counts.forget(key)
            self._drop_held(key)
            self.stuck.forget(key)
            return None
        if not self.expectations.satisfied(key):
            return self.expectations.next_deadline(key)
        bad = malformed.problems(job, kind)
        problems = bad or checks.problems(job, kind)
        if problems:
            self._drop_held(key)
            self.stuck.forget(key)
            return self._invalid(key, job, kind, problems,
                                 retry=not bad and kind.operator.reconciler_check is not None)
        held = self.held.held_status(key) if self.held is not None else None
        ctx = st.Ctx(kind=kind, job=defaulted(job, kind), pods={}, now=self.clock(),
                     status=jsondata.copy(held if held is not None else job.get("status") or {}))
        ctx.set(cond.CREATED, why="Created", message=f"{kind.name} {ctx.name} is created.")
        pods = self.owned(ctx.job, kind, self.pods, PODS)
        try:
            step = self.job_steps.get(kind.name)
            if step is not None:
                step.reconcile(self.writes, ctx)  # upstream's step 0: before the finished/suspended branches
            wake = self._run(key, ctx, job, pods)
            if self.records is not None:
                self.records.settle(ctx)  # the run's record, if its create went out beside the pods
            if not ctx.deleted:
                hold = not ctx.deferred and not cond.is_finished(ctx.status)
                later = self.counts.wait(key, job.get("status") or {}, ctx.status) if hold else None
                if later is None:
                    self._write_status(job, kind, ctx.status, key=key, hold=hold)
                else:  # only replica counts moved: they wait for the job's next change, a moment
                    wake = later if wake is None else min(wake, later)
            for action in ctx.deferred:
                action()
        finally:
            self._emit(job, kind, ctx.events)  # also the FailedCreate* of an aborted pass
        return wake

    def _run(self, key: str, ctx: st.Ctx, job: dict[str, Any], pods: list[dict[str, Any]]) -> float | None:
        policy = run_policy.run_policy(ctx.job).get("cleanPodPolicy")
        if cond.is_finished(ctx.status):
            self.stuck.forget(key)
            if self.records is not None:
                self.records.finished(self.writes, ctx, job)
            self._clean(ctx, pods=pods, policy=policy, finished=True)
            run_policy.succeeded_absorbs_active(ctx.status)
            return self._ttl(job, ctx)
        if run_policy.is_suspended(ctx.job):
            self.stuck.forget(key)
            if self.records is not None:
                self.records.suspended(self.writes, ctx)  # the run ends (controller.jobs.run_records)
            self._mark_previous_run(ctx, pods)
            self._clean(ctx, pods=pods, policy=policy, finished=False)
            run_policy.suspend(ctx)
            return None
        run_policy.resume_if_suspended(ctx)
        pods, ctx.previous = runs.split(pods)  # a suspended run's pods count for nothing (controller.jobs.runs)
        superseded: list[dict[str, Any]] = []  # pods of a run replaced before it started (controller.jobs.run_records)
        if self.records is not None:  # from here on ctx.job is the run's (foundation.runs.spec)
            pods, superseded = self.records.begin(self.writes, ctx, job, pods)
        whole_job = ctx.run is not None and ctx.run.whole_job
        if whole_job:
            pods = restarts.older_attempts(ctx, pods)
        self.retirer.retire(ctx, [p for p in ctx.previous.values() if not p["metadata"].get("deletionTimestamp")])
        self.retirer.retire(ctx, [p for p in superseded if not p["metadata"].get("deletionTimestamp")], mark=False)
        message = run_policy.failure_message(ctx, pods, requeues=self.queue.num_requeues(key), per_pod=not whole_job)
        if message is None and whole_job:
            message, pods = restarts.end_attempt(ctx, pods, commit=self._commit_attempt, retire=self.retirer.retire)
        # no pod of a new attempt beside one of the old, nor of a replaced run beside one of the run it replaced
        ctx.awaiting_old_attempt = bool(superseded) or (whole_job and bool(ctx.previous))
        if message is not None:
            ctx.status.setdefault("completionTime", cond.timestamp(ctx.now))
            ctx.event("Normal", why="Failed", message=message)
            ctx.set(cond.FAILED, why="Failed", message=message)
            ctx.deferred.append(lambda: self._clean(ctx, pods=pods, policy=policy, finished=True))
            return self._ttl(job, ctx)
        if self.gang is not None and not self.gang.sync(self.writes, ctx):
            ctx.status["lastReconcileTime"] = cond.timestamp(ctx.now)
            return None
        with self._creating(ctx):
            own = self.pod_passes.get(ctx.kind.name)
            if own is not None:
                own.reconcile(self.writes, ctx, pods, options=self.options, gang=self.gang)
            else:
                self._replicas(ctx, pods)
        st.update(ctx)
        remaining = run_policy.deadline_remaining(ctx)
        deadline = max(remaining, 0.0) + 0.5 if remaining is not None and not cond.is_finished(ctx.status) else None
        waits = [w for w in (deadline, self._stuck(key, ctx, pods)) if w is not None]
        return min(waits) if waits else None

    def _stuck(self, key: str, ctx: st.Ctx, pods: list[dict[str, Any]]) -> float | None:
        """Say each pod stuck past the threshold once (controller.jobs.stuck); seconds until the next
        waiting pod will be. Not while the job has finished or a whole-job restart retires an attempt."""
        if self.stuck_after <= 0 or cond.is_finished(ctx.status) or ctx.awaiting_old_attempt:
            self.stuck.forget(key)
            return None
        found, wake = stuck.stuck(pods, now=ctx.now, threshold=self.stuck_after)
        for pod in self.stuck.news(key, found):
            ctx.event("Warning", why=stuck.REASON, message=stuck.event_message(pod, self.stuck_after))
            journal.stuck(key, pod, self.stuck_after)
        return wake

    # ------------------------------------------------------------------ pods and services
    @contextmanager
    def _creating(self, ctx: st.Ctx) -> Iterator[None]:
        """The pod and service pass: its creates go out together (controller.runtime.creates)."""
        ctx.creates = self.creates.batch(ctx.events)
        try:
            yield
        finally:
            batch, ctx.creates = ctx.creates, None
            batch.wait()  # also when the pass failed: every create's outcome is an Event

    def _replicas(self, ctx: st.Ctx, pods: list[dict[str, Any]]) -> None:
        kind = ctx.kind
        services = self.owned(ctx.job, kind, self.services, SERVICES)
        statuses = ctx.status.setdefault("replicaStatuses", {})
        for rtype, replica in ctx.replicas.items():
            plan = diff.plan_pods(pods, rtype, replica, container=kind.facts.container)
            ctx.pods[rtype] = [p for p in diff.of_type(pods, rtype)]
            for pod, code in plan.exited:
                ns = pod["metadata"].get("namespace")
                ctx.events.append(("Normal", EXITED, f"Pod: {ns}.{pod['metadata']['name']} exited with code {code}"))
            for index in plan.create:
                self.create_pod(ctx, rtype=rtype, index=index)
            for pod in plan.delete:
                self.writes.delete(ctx, PODS, pod)
                journal.scaled_down(ctx.key, pod["metadata"]["name"], rtype, int(replica.get("replicas", 1)))
            for pod in plan.restart:
                ctx.deferred.append(lambda pod=pod: self._restart_pod(ctx, pod))
                msg = f"job {ctx.name} is restarting because {rtype} replica(s) failed."
                ctx.event("Warning", why="Restarting", message=msg)
                ctx.set(cond.RESTARTING, why="Restarting", message=msg)
            if plan.permanent_failure:
                msg = f'job "{ctx.name}" is failing because "{rtype}" replica(s) failed.'
                ctx.event("Warning", why="Failed", message=msg)
                ctx.complete()  # upstream leaves completionTime nil here, which breaks its TTL
                ctx.set(cond.FAILED, why="Failed", message=msg)
            statuses[rtype] = st.compact(plan.counts)
            splan = diff.plan_services(services, rtype, replica)
            for index in splan.create:
                self.writes.create(ctx, SERVICES, desired.service(ctx.job, kind, replica_type=rtype, index=index))
            for svc in splan.delete:
                self.writes.delete(ctx, SERVICES, svc)

    def create_pod(self, ctx: st.Ctx, *, rtype: str, index: int) -> None:
        try:
            pod = desired.pod(ctx.job, ctx.kind, replica_type=rtype, index=index, options=self.options)
        except ValueError as exc:
            ctx.events.append(("Warning", "FailedCreatePod", f"Error creating: {exc}"))
            raise InvalidJob(f"cannot build pod {rtype} {index}: {exc}") from exc
        if pod["metadata"]["name"] in ctx.previous:
            return  # its name is taken until the old pod is gone; that deletion queues the job again
        if desired.template_sets_restart_policy(ctx.job, ctx.kind, replica_type=rtype):
            ctx.events.append(("Warning", "SetPodTemplateRestartPolicy",
                               "Restart policy in pod template will be overwritten by restart policy in replica spec"))
        if self.gang is not None:
            self.gang.decorate(ctx, pod, rtype)
        self.writes.create(ctx, PODS, pod)

    def _restart_pod(self, ctx: st.Ctx, pod: dict[str, Any]) -> None:
        """A failed pod deleted so the next pass creates it again (its status is written by now)."""
        self.writes.delete(ctx, PODS, pod)
        code = st.exit_code(pod, ctx.kind.facts.container)
        journal.pod_restarted(ctx.key, pod["metadata"]["name"], None if code == st.EXIT_CODE_UNKNOWN else code)

    def _commit_attempt(self, ctx: st.Ctx, attempt: int, cause: str, message: str) -> None:
        """A whole-job restart decided: on the run's record, then its one Event, sent now."""
        assert self.records is not None
        self.records.settle(ctx)
        self.records.commit_attempt(self.writes, ctx, attempt=attempt, cause=cause)
        journal.job_restarting(ctx.key, message)
        self.recorder.event(ctx.job, "Warning", reason=cond.reason(ctx.kind.name, "Restarting"), message=message,
                            component=ctx.kind.facts.operator_name, wait=True)

    def _mark_previous_run(self, ctx: st.Ctx, pods: list[dict[str, Any]]) -> None:
        """Mark every pod of the run being suspended before it is deleted (controller.jobs.runs)."""
        self.retirer.mark_all(runs.to_mark(pods), runs.SUSPENDED)

    def _clean(self, ctx: st.Ctx, *, pods: list[dict[str, Any]], policy: str | None, finished: bool) -> None:
        """Delete pods and their services per cleanPodPolicy (run_policy.services_to_clean); PodGroup too."""
        cleaned = run_policy.pods_to_clean(pods, policy, finished=finished)
        services = run_policy.services_to_clean(self.owned(ctx.job, ctx.kind, self.services, SERVICES), pods, cleaned,
                                              policy, finished=finished)
        by_name = {s["metadata"]["name"]: s for s in services}
        for pod in cleaned:  # upstream's order: each pod, then its service
            self.writes.delete(ctx, PODS, pod)
            svc = by_name.pop(pod["metadata"]["name"], None)
            if svc is not None:
                self.writes.delete(ctx, SERVICES, svc)
        for svc in by_name.values():  # left by a cleanup cut short
            self.writes.delete(ctx, SERVICES, svc)
        journal.cleaned(ctx.key, pods=len(cleaned), services=len(services),
                        why=f"cleanPodPolicy {policy}" if finished else "suspended")
        if self.gang is not None:
            self.gang.delete(self.writes, ctx)

    def _ttl(self, job: dict[str, Any], ctx: st.Ctx) -> float | None:
        if run_policy.is_suspended(ctx.job):
            return None
        remaining = run_policy.ttl_remaining(ctx.job, ctx.status, ctx.now)
        if remaining is None or remaining > 0:
            return remaining
        meta = job["metadata"]
        self.writes.delete_unexpected(job_resource(ctx.kind), job)
        journal.ttl_deleted(ctx.key, run_policy.run_policy(ctx.job).get("ttlSecondsAfterFinished"))
        ctx.deleted = True
        ctx.events.append(("Normal", "SuccessfulDeleteJob", f"Deleted job: {meta['name']}"))
        return None

    # ------------------------------------------------------------------ reads
    def owned(self, job: dict[str, Any], kind: Kind, informer: Informer, res: Resource) -> list[dict[str, Any]]:
        """Children controlled by this job (orphans with our labels are adopted)."""
        meta = job["metadata"]
        slot = f"{meta.get('namespace', '')}/{kind.facts.operator_name}/{meta['name'].replace('/', '-')}"
        mine: list[dict[str, Any]] = []
        for obj in informer.by_index(slot):
            ref = next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None:
                self._adopt(job, kind, res, obj)
                mine.append(obj)
            elif ref.get("uid") == meta.get("uid"):
                mine.append(obj)
        return mine

    def _adopt(self, job: dict[str, Any], kind: Kind, res: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        patch = {"metadata": {"ownerReferences": [desired.owner_reference(job, kind)], "uid": meta.get("uid")}}
        try:
            self.writes.patch(res, obj, patch, content_type="application/strategic-merge-patch+json")
        except (errors.NotFound, errors.Conflict, errors.Invalid) as exc:
            log.debug("could not adopt %s %s: %s", res.kind, meta["name"], exc)

    # ------------------------------------------------------------------ writes
    def _write_status(self, job: dict[str, Any], kind: Kind, status: dict[str, Any], *, key: str | None = None,
                      hold: bool = False) -> bool:
        """PUT `status` unless the cache holds it already; with --pods-first a plain pass's write
        (`hold`) waits out a pod burst, and any other write replaces what was held for the job."""
        carry_progress(status, job.get("status") or {})  # the endpoint's field, never the pass's
        if not status.get("replicaStatuses"):
            # upstream's field is a Go map with omitempty: an empty one is not written at all
            # (a job suspended at creation has none); the parity test holds us to that
            status.pop("replicaStatuses", None)
        changed = comparable(status) != comparable(job.get("status") or {})
        if key is not None and self.held is not None:
            if hold and changed and self.held.in_burst():
                self.held.status(key, status, self.queue.add)  # released: the job's next pass writes it
                return True
            self.held.drop_status(key)
        if not changed:
            return False
        written = self.writes.update(job_resource(kind), {**job, "status": status}, sub="status")
        if written is not None:
            self.jobs[kind.name].remember(written)
        meta = job["metadata"]
        journal.state(job_key(kind.name, meta.get("namespace", ""), meta["name"]), job.get("status") or {}, status)
        return True

    def _drop_held(self, key: str) -> None:
        if self.held is not None:
            self.held.drop_status(key)

    def _emit_for(self, ctx: st.Ctx, events: list[st.Event]) -> None:
        """The Events of a pass's write answered after the pass (a held create)."""
        self._emit(ctx.job, ctx.kind, events)

    def _emit(self, job: dict[str, Any], kind: Kind, events: list[st.Event]) -> None:
        """The pass's Events, in order; its pod exits, and its stuck pods, when more than one, as one
        combined Event each.

        Why exits: upstream reports ExitedWithCode for every terminated pod on every pass (state,
        not an action: creates and deletes keep an Event each, as upstream's), and they were most
        of an 8-pod job's Event writes in `make bench-scale` (bench/README.md, "Events")."""
        folded = (EXITED, cond.reason(kind.name, stuck.REASON))  # a pass's pod exits, or its stuck pods
        counts = {why: sum(reason == why for _, reason, _ in events) for why in folded}
        for etype, why, message in events:
            self.recorder.event(job, etype, reason=why, message=message, component=kind.facts.operator_name,
                                together=counts.get(why, 0) > 1)

    def _invalid(self, key: str, job: dict[str, Any], kind: Kind, problems: list[str], *, retry: bool) -> float | None:
        message = checks.failure_message(kind, problems)
        why = cond.reason(kind.name, "FailedValidation")
        # sent before the Failed condition is written, as upstream orders them
        self.recorder.event(job, "Warning", reason=why, message=message, component=kind.facts.operator_name, wait=True)
        if retry:
            raise InvalidJob(message)  # upstream's MPIJob/MXJob checks: event, no condition, retry with backoff
        status = jsondata.copy(job.get("status") or {})
        now = self.clock()
        cond.set_condition(status, cond.CREATED, state="True", reason=cond.reason(kind.name, "Created"),
                           message=f"{kind.name} {job['metadata']['name']} is created.", now=now)
        if not cond.is_true(status, cond.FAILED):
            status.setdefault("completionTime", cond.timestamp(now))
        cond.set_condition(status, cond.FAILED, state="True", reason=why, message=message, now=now)
        self._write_status(job, kind, status)
        return None

