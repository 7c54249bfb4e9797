"""Whole-job restarts (`trainforge.dev/restart-scope: job`): which exit restarts the job, pure.

Distributed training is all-or-nothing: when one rank dies the others block in NCCL or in
torchrun's rendezvous, so re-creating the one failed pod (upstream's per-pod restart)
brings back a rank into a gang that is stuck. Under restart scope `job` a retryable exit of
any pod of the current attempt ends the attempt: attempt n+1 is written on the run's
run record (controller.jobs.run_records), which makes every pod of attempt n (each
carries its attempt) one of the previous attempt, counted once against `backoffLimit`; every
such pod is deleted, and once all are gone all are created again as attempt n+1. Which exits are retryable is the replica's
`restartPolicy`, as upstream decides it (foundation.runs.exits): `OnFailure` and `Always` any
failure, `ExitCode` an exit code of 128 or more (or none known), `Never` none. A permanent exit (`Never`, `ExitCode`
1-127) fails the job by upstream's rules, as under scope `pod`. A pod of the attempt
deleted by someone else (an eviction, `kubectl delete`) is a retryable exit of unknown code
unless its policy is `Never`.

Why the pods run with `restartPolicy: Never` under scope job (controller.jobs.run_record.stamp):
with `OnFailure` or `Always` the kubelet restarts the failed container in place, the pod
never fails and the controller learns of the exit only from a `restartCount` that has
already moved, after that rank is back beside the stuck ones: the mixing this scope exists
to prevent, and one the controller could only undo, not avoid. With `Never` every exit
ends its pod, the controller sees it (phase, exit code) before anything restarts, and
applies the replica's policy itself. A success (exit 0) under `Always` is a success.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.jobs import conditions as cond
from controller.jobs import runs
from controller.jobs import status as st
from controller.jobs.run_record import ATTEMPT, RESTART_CAUSE, annotation, attempt_of
from controller.jobs.run_policy import backoff_message, run_policy
from controller.jobs.status import Ctx
from foundation.runs import exits
from schemas.upstream import TYPE_LABEL


@dataclass(frozen=True)
class Exit:
    """The exit that ends an attempt: a pod, and its exit code (None: the pod was deleted)."""

    pod: str
    code: int | None

    @property
    def cause(self) -> str:
        return f"pod {self.pod} was deleted" if self.code is None else f"pod {self.pod} exited with code {self.code}"


def split_attempts(pods: list[dict[str, Any]], attempt: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the pods of the current attempt, the pods of earlier ones: a restart cut short)."""
    current, older = [], []
    for pod in pods:
        (older if attempt_of(pod) < attempt else current).append(pod)
    return current, older


def exit_code(pod: dict[str, Any], container: str) -> int:
    """The kind's container's exit code (upstream's), else the first non-zero one, else unknown."""
    code = st.exit_code(pod, container)
    if code != st.EXIT_CODE_UNKNOWN:
        return code
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (status.get("state") or {}).get("terminated")
        if terminated is not None and int(terminated.get("exitCode", 0)) != 0:
            return int(terminated["exitCode"])
    return code


def _replica(replicas: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
    rtype = (pod["metadata"].get("labels") or {}).get(TYPE_LABEL, "")
    return next((spec for name, spec in replicas.items() if name.lower() == rtype), {})


def ending_exit(pods: list[dict[str, Any]], replicas: dict[str, Any], *, container: str) -> Exit | None:
    """The retryable exit that restarts the job (the first by pod name), or None: no pod ended,
    or one ended for good (upstream's rules then fail the job)."""
    found: Exit | None = None
    for pod in sorted(pods, key=lambda p: p["metadata"]["name"]):
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Failed":
            code: int | None = exit_code(pod, container)
        elif pod["metadata"].get("deletionTimestamp") and not runs.is_previous(pod) and phase != "Succeeded":
            code = None
        else:
            continue
        if exits.retries(_replica(replicas, pod).get("restartPolicy"), code):
            found = found or Exit(pod["metadata"]["name"], code)
        else:
            return None
    return found


def ends_attempt(old: dict[str, Any] | None, new: dict[str, Any] | None) -> bool:
    """A pod of a whole-job run (it carries its attempt) that has just failed: the manager queues
    its job at once instead of batching the pod's update with its siblings'."""
    if old is None or new is None or ATTEMPT not in (new["metadata"].get("annotations") or {}):
        return False
    return (new.get("status") or {}).get("phase") == "Failed" != (old.get("status") or {}).get("phase")


def exhausted(attempt: int, backoff_limit: Any) -> bool:
    """Whether `attempt` restarts already used up `backoffLimit` (None: no limit)."""
    return backoff_limit is not None and attempt >= int(backoff_limit)


def message(kind: str, name: str, *, cause: str, attempt: int, backoff_limit: Any) -> str:
    """The Restarting condition's and Event's message: which pod, which exit, which restart."""
    limit = f"of backoffLimit {int(backoff_limit)}" if backoff_limit is not None else "without a backoffLimit"
    return f"{kind} {name} is restarting every pod (whole-job restart {attempt} {limit}): {cause}."


# ---------------------------------------------------------------------- a pass's part (on its Ctx)
# (ctx, attempt, cause, message): the attempt recorded on the run record, then its Event sent
Commit = Callable[[Ctx, int, str, str], None]
Retire = Callable[[Ctx, list[dict[str, Any]]], None]  # mark and delete pods


def older_attempts(ctx: Ctx, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The current attempt's pods; those of earlier attempts (a restart cut short by a crash or a
    lost status write) join `ctx.previous`, and the status says Restarting again if it does not."""
    assert ctx.run is not None
    pods, older = split_attempts(pods, ctx.run.attempt)
    if older and not cond.is_true(ctx.status, cond.RESTARTING):
        ctx.set(cond.RESTARTING, why="Restarting", message=message(
            ctx.kind.name, ctx.name, cause=annotation(ctx.run.record, RESTART_CAUSE) or "a pod ended",
            attempt=ctx.run.attempt, backoff_limit=run_policy(ctx.job).get("backoffLimit")))
    ctx.previous.update({p["metadata"]["name"]: p for p in older})
    return pods


def end_attempt(ctx: Ctx, pods: list[dict[str, Any]], *, commit: Commit,
                retire: Retire) -> tuple[str | None, list[dict[str, Any]]]:
    """(a failure message, the pods left current): past backoffLimit a retryable exit fails the
    job with upstream's backoff message; below it the next attempt is committed on the run record
    (the one point where a restart is counted) and its Event sent at once (`commit`: a pass's
    Events otherwise go after its deletes, and a controller killed in a 64-pod restart would
    lose it), the status says why, and every pod of the ended attempt is retired once that
    status is written (`ctx.deferred`)."""
    assert ctx.run is not None
    ended = ending_exit(pods, ctx.replicas, container=ctx.kind.facts.container)
    if ended is None:
        return None, pods
    limit = run_policy(ctx.job).get("backoffLimit")
    if exhausted(ctx.run.attempt, limit):
        return backoff_message(ctx), pods
    attempt = ctx.run.attempt + 1
    msg = message(ctx.kind.name, ctx.name, cause=ended.cause, attempt=attempt, backoff_limit=limit)
    commit(ctx, attempt, ended.cause, msg)
    ctx.set(cond.RESTARTING, why="Restarting", message=msg)
    ctx.previous.update({p["metadata"]["name"]: p for p in pods})
    ctx.deferred.append(lambda: retire(ctx, pods))
    return None, []
