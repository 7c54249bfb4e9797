"""Run policy decisions (semantics §6 steps 1-4 and §9), pure so they are unit-tested.

Which pods a finished job's `cleanPodPolicy` removes, the two upstream `backoffLimit`
triggers, `activeDeadlineSeconds` measured from `startTime`, suspend/resume status
edits, and when `ttlSecondsAfterFinished` deletes the job. The reconciler asks these
and performs the deletes; new policies (gang scheduling, elastic scaling) plug in
beside them without touching the pod pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from foundation import admission
from controller.jobs import conditions as cond
from controller.jobs.diff import of_type
from controller.jobs.status import Ctx


def run_policy(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"].get("runPolicy") or {}


def managed_elsewhere(job: dict[str, Any], kind: str | None = None) -> bool:
    """Another controller runs the job (upstream skips it). For the kinds upstream's webhook
    checks, only a supported value (MultiKueue) counts: any other one is refused at admission,
    so at reconcile time it is a validation failure, not a job to leave alone forever."""
    managed_by = ((job.get("spec") or {}).get("runPolicy") or {}).get("managedBy")
    if managed_by is None or managed_by == admission.OPERATOR:
        return False
    return kind not in admission.KIND_RULES or managed_by in admission.MANAGED_BY


def is_suspended(job: dict[str, Any]) -> bool:
    return bool(run_policy(job).get("suspend"))


def pods_to_clean(pods: list[dict[str, Any]], policy: str | None, *, finished: bool) -> list[dict[str, Any]]:
    """Upstream's DeletePodsAndServices: the policy only applies once the job finished."""
    alive = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    if not finished:
        return alive
    if policy == "None" or policy is None:
        return []
    if policy == "Running":
        return [p for p in alive if (p.get("status") or {}).get("phase") in ("Running", "Pending")]
    return alive


def services_to_clean(services: list[dict[str, Any]], pods: list[dict[str, Any]], cleaned: list[dict[str, Any]],
                      policy: str | None, *, finished: bool) -> list[dict[str, Any]]:
    """The services that go with `cleaned`, plus those whose same-named pod is gone.

    Upstream deletes a service only right after its pod, so a controller killed between
    the two leaves the service for good; the pod's absence is the evidence the next pass
    needs to finish that cleanup. `cleanPodPolicy: None` keeps everything, as upstream."""
    if finished and policy in ("None", None):
        return []
    going = {p["metadata"]["name"] for p in cleaned}
    present = {p["metadata"]["name"] for p in pods if not p["metadata"].get("deletionTimestamp")}
    return [s for s in services if not s["metadata"].get("deletionTimestamp")
            and (s["metadata"]["name"] in going or s["metadata"]["name"] not in present)]


def succeeded_absorbs_active(status: dict[str, Any]) -> None:
    """A succeeded job reports leftover active replicas as succeeded."""
    if not cond.is_true(status, cond.SUCCEEDED):
        return
    for entry in (status.get("replicaStatuses") or {}).values():
        active = entry.pop("active", 0)
        if active:
            entry["succeeded"] = entry.get("succeeded", 0) + active


def suspend(ctx: Ctx) -> None:
    for entry in (ctx.status.get("replicaStatuses") or {}).values():
        entry.pop("active", None)
    msg = f"{ctx.kind.name} {ctx.name} is suspended."
    if cond.is_true(ctx.status, cond.RUNNING):
        ctx.set(cond.RUNNING, why="Suspended", message=msg, state="False")
    if not cond.is_true(ctx.status, cond.SUSPENDED):
        ctx.set(cond.SUSPENDED, why="Suspended", message=msg)
    ctx.event("Normal", why="Suspended", message=msg)


def resume_if_suspended(ctx: Ctx) -> None:
    if cond.is_true(ctx.status, cond.SUSPENDED):
        msg = f"{ctx.kind.name} {ctx.name} is resumed."
        ctx.set(cond.SUSPENDED, why="Resumed", message=msg, state="False")
        ctx.status["startTime"] = cond.timestamp(ctx.now)
        ctx.event("Normal", why="Resumed", message=msg)


def _restart_counts(pod: dict[str, Any]) -> int:
    status = pod.get("status") or {}
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    return sum(int(s.get("restartCount", 0)) for s in statuses)


def past_backoff_limit(ctx: Ctx, pods: list[dict[str, Any]], *, requeues: int) -> bool:
    """Either upstream trigger: new pod failures past the limit, or container restarts."""
    limit = run_policy(ctx.job).get("backoffLimit")
    if limit is None:
        return False
    limit = int(limit)
    active = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
              and not p["metadata"].get("deletionTimestamp")]
    failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
    total = sum(int(r.get("replicas", 1)) for r in ctx.replicas.values())
    previously_failed = sum(int(e.get("failed", 0)) for e in (ctx.status.get("replicaStatuses") or {}).values())
    if failed > previously_failed and len(active) != total and requeues + 1 > limit:
        return True
    restarts = 0
    for rtype, replica in ctx.replicas.items():
        if replica.get("restartPolicy") not in ("OnFailure", "Always", "ExitCode"):
            continue
        restarts += sum(_restart_counts(p) for p in of_type(pods, rtype) if (p.get("status") or {}).get("phase") == "Running")
    return restarts > 0 if limit == 0 else restarts >= limit


def deadline_remaining(ctx: Ctx) -> float | None:
    """Seconds until activeDeadlineSeconds passes (<= 0: passed); None if not set."""
    deadline = run_policy(ctx.job).get("activeDeadlineSeconds")
    start = cond.parse_time(ctx.status.get("startTime"))
    if deadline is None or start is None:
        return None
    return float(deadline) - (ctx.now - start).total_seconds()


def backoff_message(ctx: Ctx) -> str:
    return f"Job {ctx.name} has failed because it has reached the specified backoff limit"


def failure_message(ctx: Ctx, pods: list[dict[str, Any]], *, requeues: int, per_pod: bool = True) -> str | None:
    """The Failed message if backoff or deadline fails the job now, else None. Without `per_pod`
    (restart scope job) upstream's backoff triggers do not apply: whole-job restarts count
    against backoffLimit instead (controller.jobs.restarts)."""
    if per_pod and past_backoff_limit(ctx, pods, requeues=requeues):
        return backoff_message(ctx)
    remaining = deadline_remaining(ctx)
    if remaining is not None and remaining <= 0:
        return f"Job {ctx.name} has failed because it was active longer than specified deadline"
    return None


def ttl_remaining(job: dict[str, Any], status: dict[str, Any], now: datetime) -> float | None:
    """Seconds until the finished job must be deleted (<= 0: now); None without TTL."""
    ttl = run_policy(job).get("ttlSecondsAfterFinished")
    done = cond.parse_time(status.get("completionTime"))
    if ttl is None or done is None:
        return None
    return float(ttl) - (now - done).total_seconds()
