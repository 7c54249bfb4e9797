"""The pure half of status: replica counts and each framework's success/failure rule.

`update(ctx)` is upstream's per-kind `UpdateJobStatus` (semantics §6) rewritten as data in,
data out: it reads the replica counts already put in `ctx.status` by the pod pass and
adds conditions, `startTime`, `completionTime` and `selector`, and collects the Events
upstream records alongside. The seven kinds' rules are one loop over the replica types; how
a kind's differs (which types decide, its messages, which policy restarts) is its adapter's
`StatusRule` (foundation/frameworks/operator.py), so this module names no kind and no replica
type. No I/O happens here, so every rule is unit-tested directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.jobs import conditions as cond
from controller.jobs.conditions import FAILED, RESTARTING, RUNNING, SUCCEEDED
from controller.jobs.kinds import Kind
from controller.runtime.creates import Batch
from controller.runtime.writes import job_key
from foundation.frameworks.operator import StatusRule
from schemas.upstream import INDEX_LABEL, JOB_NAME_LABEL, OPERATOR_LABEL, TYPE_LABEL

EXIT_CODE_UNKNOWN = 0xBEEF  # upstream's sentinel when the default container has no exit code

Event = tuple[str, str, str]  # (type, reason, message)


@dataclass
class Ctx:
    """One reconcile pass's view: the defaulted job, the working status, pods by type."""

    kind: Kind
    job: dict[str, Any]
    status: dict[str, Any]
    pods: dict[str, list[dict[str, Any]]]
    now: datetime
    events: list[Event] = field(default_factory=list)
    # actions that destroy the evidence a decision was made from (deleting a failed pod
    # to restart it, cleaning up after a failure limit) run only once the status that
    # records the decision is written: if that write loses a race, nothing was deleted
    deferred: list[Callable[[], None]] = field(default_factory=list)
    deleted: bool = False  # the job itself was deleted in this pass (TTL): nothing to write
    creates: Batch | None = None  # the pass's open batch: creates started, not yet answered
    # pods of a suspended run still terminating, by name: not counted, their names not reused (controller.jobs.runs)
    previous: dict[str, dict[str, Any]] = field(default_factory=dict)
    run: Any = None  # the run's controller.jobs.run_records.Run (None: a finished or suspended job's pass)
    # a whole-job restart waits for every pod of the old attempt to be gone, a replaced run for every pod
    # of the run it replaced: no pod is created in this pass
    awaiting_old_attempt: bool = False

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.job["metadata"].get("namespace", "default"))

    @property
    def key(self) -> str:
        """The job's work-queue key, `Kind/namespace/name` (controller.runtime.writes.job_key)."""
        return job_key(self.kind.name, self.namespace, self.name)

    def admit_pod(self, pod: dict[str, Any]) -> bool:
        """Whether the pass may create `pod` now, stamping it with its run's record if so: not
        while a previous run's pod still holds its name (controller.jobs.runs), nor while a
        whole-job restart waits for the old attempt (controller.jobs.restarts)."""
        if pod["metadata"]["name"] in self.previous or self.awaiting_old_attempt:
            return False
        if self.run is not None:
            self.run.stamp(pod)  # the run's record (and attempt) on the pod (controller.jobs.run_records)
        return True

    def before_delete(self, pod: dict[str, Any]) -> None:
        """Before the pass deletes one of the job's pods while its run goes on: the run's start
        stays written somewhere (controller.jobs.run_records, Run.before_delete)."""
        if self.run is not None and not cond.is_finished(self.status):
            self.run.before_delete(pod)

    @property
    def replicas(self) -> dict[str, Any]:
        return self.job["spec"][self.kind.facts.replica_specs]

    def set(self, ctype: str, *, why: str, message: str, state: str = "True") -> None:
        """Set condition `ctype` with reason `{Kind}{why}`."""
        cond.set_condition(self.status, ctype, state=state, reason=cond.reason(self.kind.name, why), message=message,
                           now=self.now)

    def event(self, etype: str, *, why: str, message: str) -> None:
        """Record an Event with reason `{Kind}{why}`."""
        self.events.append((etype, cond.reason(self.kind.name, why), message))

    def complete(self) -> None:
        self.status.setdefault("completionTime", cond.timestamp(self.now))


def count(pods: Iterable[dict[str, Any]], *, phase_only: bool = False) -> dict[str, int]:
    """active/succeeded/failed by phase; a Running pod being deleted counts as failed, as upstream's
    replica pass counts it, unless `phase_only` (upstream's MPIJob pass counts by phase alone). A
    suspended run's pods, deleted by the controller, never get here (controller.jobs.runs)."""
    out = {"active": 0, "succeeded": 0, "failed": 0}
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            out["failed" if pod["metadata"].get("deletionTimestamp") and not phase_only else "active"] += 1
        elif phase == "Succeeded":
            out["succeeded"] += 1
        elif phase == "Failed":
            out["failed"] += 1
    return out


def compact(counts: dict[str, Any]) -> dict[str, Any]:
    """Drop zero counts: the Go fields are `omitempty`."""
    return {key: value for key, value in counts.items() if value not in (0, None, "")}


def exit_code(pod: dict[str, Any], container: str) -> int:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if status.get("name") == container and terminated is not None:
            return int(terminated.get("exitCode", 0))
    return EXIT_CODE_UNKNOWN


def selector(ctx: Ctx, replica_type: str) -> str:
    labels = {
        OPERATOR_LABEL: ctx.kind.facts.operator_name,
        JOB_NAME_LABEL: ctx.name.replace("/", "-"),
        TYPE_LABEL: replica_type.lower(),
    }
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def _numbers(ctx: Ctx, replica_type: str) -> tuple[int, int, int, int]:
    """(replicas, succeeded, running, failed) for one replica type."""
    rs = (ctx.status.get("replicaStatuses") or {}).get(replica_type) or {}
    replicas = int(ctx.replicas[replica_type].get("replicas", 1))
    return replicas, int(rs.get("succeeded", 0)), int(rs.get("active", 0)), int(rs.get("failed", 0))


def _visited(ctx: Ctx, rule: StatusRule) -> list[str]:
    """The job's replica types in the rule's order (its own list only), else the kind's and then the rest sorted."""
    if rule.visit is not None:
        return [t for t in rule.visit if t in ctx.replicas]
    present = [t for t in ctx.kind.facts.replica_types if t in ctx.replicas]
    return present + sorted(t for t in ctx.replicas if t not in present)


def _succeed(ctx: Ctx, message: str) -> None:
    ctx.event("Normal", why="Succeeded", message=message)
    ctx.complete()
    ctx.set(SUCCEEDED, why="Succeeded", message=message)


def _fail_or_restart(ctx: Ctx, rule: StatusRule, replica_type: str, *, failed: int, restart: bool) -> None:
    """A replica type's failure: Restarting, or Failed (with the rule's reason and words)."""
    subject = rule.failure_subject or ctx.kind.name
    if restart:
        msg = f"{subject} {ctx.name} is restarting because {failed} {replica_type} replica(s) failed."
        ctx.event("Warning", why="Restarting", message=msg)
        ctx.set(RESTARTING, why="Restarting", message=msg)
        return
    if rule.namespaced:
        msg = f"{subject} {ctx.namespace}/{ctx.name} has failed because {failed} {replica_type} replica(s) failed."
    else:
        msg = f"{subject} {ctx.name} is failed because {failed} {replica_type} replica(s) failed."
    ctx.event("Normal", why="Failed", message=msg)
    ctx.complete()
    ctx.set(FAILED, why=rule.failed_reason, message=msg)


def _restarts(rule: StatusRule, policy: Any) -> bool:
    if rule.restart == "unless-never":
        return policy != "Never"
    return rule.restart == "exit-code" and policy == "ExitCode"


def _sole(ctx: Ctx, rule: StatusRule) -> bool:
    """The job is one replica of `rule.sole` and none of `rule.sole_unless`."""
    counts = {t: int(ctx.replicas[t].get("replicas", 1)) for t in ctx.replicas}
    return rule.sole is not None and counts.get(rule.sole, 0) == 1 and not any(counts.get(t, 0) for t in rule.sole_unless)


def _early_success(ctx: Ctx, rule: StatusRule, succeeded: int) -> bool:
    """The workers have succeeded before all of them are done (StatusRule.early_success)."""
    if rule.early_success == "elastic":
        return ctx.job["spec"].get("elasticPolicy") is not None and succeeded > 0
    if rule.early_success == "worker-0":
        unless = rule.early_success_unless
        if unless is not None and ctx.job["spec"].get(unless[0]) == unless[1]:
            return False
        return _first_completed(ctx, rule.workers)
    return False


def _first_completed(ctx: Ctx, replica_type: str | None) -> bool:
    """Index 0 of `replica_type` succeeded with exit code 0 in the kind's container."""
    for pod in ctx.pods.get(replica_type or "", []):
        if pod["metadata"].get("labels", {}).get(INDEX_LABEL) == "0":
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded" and exit_code(pod, ctx.kind.facts.container) == 0:
                return True
    return False


def _apply(ctx: Ctx, rule: StatusRule) -> None:
    """Upstream's UpdateJobStatus conditions for the kind whose rule `rule` is (StatusRule)."""
    kind, ns_name = ctx.kind.name, f"{ctx.namespace}/{ctx.name}"
    named = ns_name if rule.namespaced else ctx.name
    done = f"{kind} {ns_name} successfully completed." if rule.namespaced else f"{kind} {ctx.name} is successfully completed."
    restarting = cond.get(ctx.status, RESTARTING) if rule.keeps_restarting else None
    saved = (restarting.get("reason"), restarting.get("message")) if restarting else None
    deciders = {*rule.deciders, *([rule.sole] if rule.sole is not None and _sole(ctx, rule) else [])}
    has_decider = any(t in ctx.replicas for t in rule.deciders)
    for rtype in _visited(ctx, rule):
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        if rtype in deciders:
            if running > 0:
                ctx.set(RUNNING, why="Running", message=f"{kind} {named} is running.")
            if replicas - succeeded == 0:
                if rule.running_with_outcome:
                    ctx.set(RUNNING, why="Running", message=f"{kind} {named} is running.")
                _succeed(ctx, done)
                if rule.stops:
                    return
        elif not has_decider and rtype == rule.workers:
            if replicas - succeeded == 0 or _early_success(ctx, rule, succeeded):
                _succeed(ctx, f"{kind} {ns_name} successfully completed.")
            elif running > 0:
                ctx.set(RUNNING, why="Running", message=f"{kind} {ns_name} is running.")
        if failed == 0 or (rule.failures_while_short and replicas <= succeeded + running):
            continue
        if rule.running_with_outcome:
            ctx.set(RUNNING, why="Running", message=f"{kind} {named} is running.")
        if saved is not None:
            cond.set_condition(ctx.status, RESTARTING, state="True", reason=saved[0], message=saved[1], now=ctx.now)
        elif not (rule.dynamic_workers and ctx.job["spec"].get(rule.dynamic_workers) and rtype == rule.workers):
            _fail_or_restart(ctx, rule, rtype, failed=failed, restart=_restarts(rule, ctx.replicas[rtype].get("restartPolicy")))


def update(ctx: Ctx) -> None:
    """Upstream's UpdateJobStatus for `ctx.kind` (startTime, selectors, conditions)."""
    ctx.status.setdefault("startTime", cond.timestamp(ctx.now))
    statuses = ctx.status.setdefault("replicaStatuses", {})
    for rtype in ctx.replicas:
        entry = statuses.setdefault(rtype, {})
        if ctx.kind.operator.fills_selector:
            entry["selector"] = selector(ctx, rtype)
    _apply(ctx, ctx.kind.operator.status)
