"""The pure half of status: replica counts and each framework's success/failure rule.

`update(ctx)` is upstream's per-kind `UpdateJobStatus` (semantics §6) rewritten as data in,
data out: it reads the replica counts already put in `ctx.status` by the pod pass and
adds conditions, `startTime`, `completionTime` and `selector`, and collects the Events
upstream records alongside. No I/O happens here, so every rule is unit-tested directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from controller.jobs import conditions as cond
from controller.jobs.conditions import FAILED, RESTARTING, RUNNING, SUCCEEDED
from controller.jobs.kinds import Kind
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
    creates: Any = None  # the pass's open controller.runtime.creates.Batch: creates started, not yet answered
    # pods of a suspended run still terminating, by name: not counted, their names not reused (controller.jobs.runs)
    previous: dict[str, dict[str, Any]] = field(default_factory=dict)
    run: Any = None  # the run's controller.jobs.run_revisions.Run (None: a finished or suspended job's pass)
    hold_pods: bool = False  # create no pod in this pass (a whole-job restart waits for the old attempt to go)

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.job["metadata"].get("namespace", "default"))

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


def count(pods: Iterable[dict[str, Any]]) -> dict[str, int]:
    """active/succeeded/failed by phase; a Running pod being deleted counts as failed, as upstream
    (a suspended run's pods, deleted by the controller, never get here: controller.jobs.runs)."""
    out = {"active": 0, "succeeded": 0, "failed": 0}
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            out["failed" if pod["metadata"].get("deletionTimestamp") else "active"] += 1
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


def _ordered(ctx: Ctx, order: Iterable[str] | None = None) -> list[str]:
    order = list(order or ctx.kind.facts.replica_types)
    present = [t for t in order if t in ctx.replicas]
    return present + sorted(t for t in ctx.replicas if t not in present)


def _fail_or_restart(ctx: Ctx, replica_type: str, *, failed: int, restart: bool, prefix: str) -> None:
    if restart:
        msg = f"{prefix} {ctx.name} is restarting because {failed} {replica_type} replica(s) failed."
        ctx.event("Warning", why="Restarting", message=msg)
        ctx.set(RESTARTING, why="Restarting", message=msg)
    else:
        msg = f"{prefix} {ctx.name} is failed because {failed} {replica_type} replica(s) failed."
        ctx.event("Normal", why="Failed", message=msg)
        ctx.complete()
        ctx.set(FAILED, why="Failed", message=msg)


def _succeed(ctx: Ctx, message: str) -> None:
    ctx.event("Normal", why="Succeeded", message=message)
    ctx.complete()
    ctx.set(SUCCEEDED, why="Succeeded", message=message)


def _master_style(ctx: Ctx, *, elastic_success: bool) -> None:
    """PyTorchJob and PaddleJob: Master decides if present, else the workers."""
    kind, ns_name = ctx.kind.name, f"{ctx.namespace}/{ctx.name}"
    has_master = "Master" in ctx.replicas
    for rtype in _ordered(ctx):
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        expected = replicas - succeeded
        if has_master and rtype == "Master":
            if running > 0:
                ctx.set(RUNNING, why="Running", message=f"{kind} {ctx.name} is running.")
            if expected == 0:
                _succeed(ctx, f"{kind} {ctx.name} is successfully completed.")
                return
        elif not has_master and rtype == "Worker":
            elastic = elastic_success and ctx.job["spec"].get("elasticPolicy") is not None and succeeded > 0
            if expected == 0 or elastic:
                _succeed(ctx, f"{kind} {ns_name} successfully completed.")
            elif running > 0:
                ctx.set(RUNNING, why="Running", message=f"{kind} {ns_name} is running.")
        if failed > 0 and replicas > succeeded + running:
            policy = ctx.replicas[rtype].get("restartPolicy")
            _fail_or_restart(ctx, rtype, failed=failed, restart=policy != "Never", prefix=kind)


def _pytorch(ctx: Ctx) -> None:
    _master_style(ctx, elastic_success=True)


def _paddle(ctx: Ctx) -> None:
    _master_style(ctx, elastic_success=False)


def _jax(ctx: Ctx) -> None:
    ns_name = f"{ctx.namespace}/{ctx.name}"
    for rtype in _ordered(ctx):
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        if rtype == "Worker":
            if replicas - succeeded == 0:
                _succeed(ctx, f"JAXJob {ns_name} successfully completed.")
            elif running > 0:
                ctx.set(RUNNING, why="Running", message=f"JAXJob {ns_name} is running.")
        if failed > 0 and replicas > succeeded + running:
            policy = ctx.replicas[rtype].get("restartPolicy")
            _fail_or_restart(ctx, rtype, failed=failed, restart=policy != "Never", prefix=ctx.kind.name)


def _worker0_completed(ctx: Ctx) -> bool:
    for pod in ctx.pods.get("Worker", []):
        if pod["metadata"].get("labels", {}).get(INDEX_LABEL) == "0":
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded" and exit_code(pod, ctx.kind.facts.container) == 0:
                return True
    return False


def _tensorflow(ctx: Ctx) -> None:
    ns_name = f"{ctx.namespace}/{ctx.name}"
    restarting = cond.get(ctx.status, RESTARTING)
    saved = (restarting.get("reason"), restarting.get("message")) if restarting else None
    chief_or_master = any(t in ctx.replicas for t in ("Chief", "Master"))
    worker0_done = _worker0_completed(ctx) if "Worker" in ctx.replicas else True
    for rtype in [t for t in ("Chief", "Evaluator", "Master", "PS", "Worker") if t in ctx.replicas]:
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        expected = replicas - succeeded
        if chief_or_master and rtype in ("Chief", "Master"):
            if running > 0:
                ctx.set(RUNNING, why="Running", message=f"TFJob {ns_name} is running.")
            if expected == 0:
                _succeed(ctx, f"TFJob {ns_name} successfully completed.")
        elif not chief_or_master and rtype == "Worker":
            all_workers = ctx.job["spec"].get("successPolicy") == "AllWorkers"
            if expected == 0 or (worker0_done and not all_workers):
                _succeed(ctx, f"TFJob {ns_name} successfully completed.")
            elif running > 0:
                ctx.set(RUNNING, why="Running", message=f"TFJob {ns_name} is running.")
        if failed > 0:
            if saved is not None:
                cond.set_condition(ctx.status, RESTARTING, state="True", reason=saved[0], message=saved[1], now=ctx.now)
            elif ctx.job["spec"].get("enableDynamicWorker") and rtype == "Worker":
                continue
            else:
                msg = f"TFJob {ns_name} has failed because {failed} {rtype} replica(s) failed."
                ctx.event("Normal", why="Failed", message=msg)
                ctx.complete()
                ctx.set(FAILED, why="Failed", message=msg)


def _xgboost(ctx: Ctx) -> None:
    running_msg = f"XGBoostJob {ctx.name} is running."
    for rtype in _ordered(ctx):
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        if rtype == "Master":
            if running > 0:
                ctx.set(RUNNING, why="Running", message=running_msg)
            if replicas - succeeded == 0:
                ctx.set(RUNNING, why="Running", message=running_msg)
                _succeed(ctx, f"XGBoostJob {ctx.name} is successfully completed.")
                return
        if failed > 0:
            ctx.set(RUNNING, why="Running", message=running_msg)
            policy = ctx.replicas[rtype].get("restartPolicy")
            _fail_or_restart(ctx, rtype, failed=failed, restart=policy == "ExitCode", prefix=ctx.kind.name)


def _mpi(ctx: Ctx) -> None:
    for rtype in _ordered(ctx):
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        if rtype == "Launcher":
            if running > 0:
                ctx.set(RUNNING, why="Running", message=f"MPIJob {ctx.name} is running.")
            if replicas - succeeded == 0:
                _succeed(ctx, f"MPIJob {ctx.name} is successfully completed.")
                return
        if failed > 0:
            if ctx.replicas[rtype].get("restartPolicy") == "ExitCode":
                _fail_or_restart(ctx, rtype, failed=failed, restart=True, prefix=ctx.kind.name)
            else:
                msg = f"MPIJob {ctx.name} is failed because {failed} {rtype} replica(s) failed."
                ctx.event("Normal", why="Failed", message=msg)
                ctx.complete()
                # upstream applies the Kind prefix twice here: reason "MPIJobMPIJobFailed"
                ctx.set(FAILED, why="MPIJobFailed", message=msg)


def _mxnet(ctx: Ctx) -> None:
    counts = {t: int(ctx.replicas[t].get("replicas", 1)) for t in ctx.replicas}
    single = counts.get("Scheduler", 0) == 0 and counts.get("Server", 0) == 0 and counts.get("Worker", 0) == 1
    for rtype in _ordered(ctx):
        replicas, succeeded, running, failed = _numbers(ctx, rtype)
        if rtype == "Scheduler" or (single and rtype == "Worker"):
            if running > 0:
                ctx.set(RUNNING, why="Running", message=f"MXJob {ctx.name} is running.")
            if replicas - succeeded == 0:
                _succeed(ctx, f"MXJob {ctx.name} is successfully completed.")
                return
        if failed > 0:
            policy = ctx.replicas[rtype].get("restartPolicy")
            _fail_or_restart(ctx, rtype, failed=failed, restart=policy == "ExitCode", prefix="mxjob")


# upstream's UpdateJobStatus rules, by the name a kind's adapter gives (`Operator.status_rule`)
RULES: dict[str, Callable[[Ctx], None]] = {
    "master-elastic": _pytorch,
    "tensorflow": _tensorflow,
    "xgboost": _xgboost,
    "master": _paddle,
    "jax": _jax,
    "launcher": _mpi,
    "mxnet": _mxnet,
}


def update(ctx: Ctx) -> None:
    """Upstream's UpdateJobStatus for `ctx.kind` (startTime, selectors, conditions)."""
    ctx.status.setdefault("startTime", cond.timestamp(ctx.now))
    statuses = ctx.status.setdefault("replicaStatuses", {})
    for rtype in ctx.replicas:
        entry = statuses.setdefault(rtype, {})
        if ctx.kind.operator.fills_selector:
            entry["selector"] = selector(ctx, rtype)
    RULES[ctx.kind.operator.status_rule](ctx)
