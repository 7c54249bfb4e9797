"""Job conditions exactly as upstream's `UpdateJobConditions` sets them (semantics §1).

Clients read these (kubectl's State column takes the LAST condition, the Kubeflow SDK and
Argo CD health checks look for `Succeeded`/`Failed` = True), so the quirks are kept:
recency order, `Running` flipped to False (not removed) when the job finishes, no change
at all once `Failed` is True. Everything works on the status as a plain JSON dict.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from foundation.cluster.kube import (
    timestamp,  # the conditions' times (also cond.timestamp to callers)
)
from foundation.runs.clock import parse_time  # RFC 3339, as every rule on runs reads it (also cond.parse_time)

CREATED, RUNNING, RESTARTING, SUCCEEDED, SUSPENDED, FAILED = (
    "Created",
    "Running",
    "Restarting",
    "Succeeded",
    "Suspended",
    "Failed",
)


def reason(kind: str, suffix: str) -> str:
    """`{Kind}{Suffix}`, e.g. PyTorchJobRunning (upstream's NewReason)."""
    return f"{kind}{suffix}"


def get(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for condition in status.get("conditions") or []:
        if condition.get("type") == ctype:
            return condition
    return None


def is_true(status: dict[str, Any], ctype: str) -> bool:
    condition = get(status, ctype)
    return condition is not None and condition.get("status") == "True"


def is_finished(status: dict[str, Any]) -> bool:
    return is_true(status, SUCCEEDED) or is_true(status, FAILED)


def set_condition(status: dict[str, Any], ctype: str, *, state: str, reason: str, message: str, now: datetime) -> None:
    """Upstream's setCondition + filterOutCondition, including their quirks."""
    if is_true(status, FAILED):
        return  # a failed job's conditions never change again
    current = get(status, ctype)
    if current is not None and current.get("status") == state and current.get("reason") == reason:
        return
    stamp = timestamp(now)
    condition = {
        "type": ctype,
        "status": state,
        "reason": reason,
        "message": message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
    }
    if current is not None and current.get("status") == state:
        condition["lastTransitionTime"] = current.get("lastTransitionTime", stamp)
    kept: list[dict[str, Any]] = []
    for existing in status.get("conditions") or []:
        etype = existing.get("type")
        if etype == ctype:
            continue
        if (ctype, etype) in ((RESTARTING, RUNNING), (RUNNING, RESTARTING)):
            continue
        if ctype in (FAILED, SUCCEEDED) and etype == RUNNING:
            existing = {**existing, "status": "False"}
        kept.append(existing)
    status["conditions"] = [*kept, condition]
