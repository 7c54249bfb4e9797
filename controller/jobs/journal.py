"""The controller's INFO log, a line a person can follow per thing that happened to a job.

At INFO train-controller says, each line opening with the job's key (`Kind/namespace/name`):
a state change (the job's newest true condition, as kubectl's STATE column, the Argo CD health
check and `train-compile status` read it, with the reason and message of what changed), a
restart (a pod deleted to be created again, a whole-job restart, or a run that had not started
taking an edit of the job), a deletion (the job past
its `ttlSecondsAfterFinished`; the pods and Services a finish, a failure or a suspension
cleans up; pods a scale-down removes), and a pod stuck past its threshold (controller.jobs.stuck).
Everything else a pass does is DEBUG; what went wrong is WARNING or ERROR as before. The
lines are written where the thing is done, after its request succeeded: a status write that
lost a race (409) and is retried says its change once, when it lands.
"""

from __future__ import annotations

import logging
from typing import Any

from controller.jobs.stuck import Stuck
from schemas.durations import go  # the threshold as its flag takes it

log = logging.getLogger(__name__)


def _newest_true(status: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in reversed(status.get("conditions") or []) if c.get("status") == "True"), None)


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    """The conditions of `new` whose status or reason differs from `old`'s, true ones first."""
    before = {c.get("type"): (c.get("status"), c.get("reason")) for c in old.get("conditions") or []}
    changed = [c for c in new.get("conditions") or [] if before.get(c.get("type")) != (c.get("status"), c.get("reason"))]
    return sorted(changed, key=lambda c: c.get("status") != "True")


def state(key: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """A status written: one line if the job's state (its newest true condition) changed."""
    was, now = _newest_true(old), _newest_true(new)
    if now is None or (was is not None and was.get("type") == now.get("type")):
        return
    changed = _changed(old, new)
    why = now if any(c is now for c in changed) else next(iter(changed), now)  # what made it, else what changed
    move = now["type"] if was is None else f"{was['type']} -> {now['type']}"
    log.info("%s: %s (%s: %s)", key, move, why.get("reason"), why.get("message"))


def pod_restarted(key: str, pod: str, code: int | None) -> None:
    said = f"exited with code {code}" if code is not None else "failed"
    log.info("%s: restarting pod %s, which %s (deleted; created again by the next pass)", key, pod, said)


def job_restarting(key: str, message: str) -> None:
    log.info("%s: %s", key, message)


def spec_applied(key: str, change: str) -> None:
    log.info("%s: the run had not started: its pods are created again from the changed spec (%s)", key, change)


def cleaned(key: str, *, pods: int, services: int, why: str) -> None:
    if pods or services:
        log.info("%s: deleted %d pod(s) and %d service(s) (%s)", key, pods, services, why)


def scaled_down(key: str, pod: str, replica_type: str, replicas: int) -> None:
    log.info("%s: deleted pod %s (%s replicas: %d)", key, pod, replica_type, replicas)


def ttl_deleted(key: str, ttl: Any) -> None:
    log.info("%s: deleted, %ss after it finished (ttlSecondsAfterFinished)", key, ttl)


def stuck(key: str, pod: Stuck, threshold: float) -> None:
    log.info("%s: pod %s stuck in %s for more than %s: %s", key, pod.pod, pod.reason, go(threshold),
             pod.message or "(no message)")
