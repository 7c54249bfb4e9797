"""What "stuck" means for a training pod, and after how long: one rule for the controller and `status`.

A pod waits for a reason it does not get past without a person (`podstate.STUCK`: an image
that cannot be pulled, a missing Secret or ConfigMap, a program that keeps crashing, no node
that fits), measured from when that wait began (`podstate.Why.since`; unknown: as long as the
threshold). Until it has waited `threshold` seconds it is *waiting*: an image pull or a
cluster scale-up often clears on its own, and a crash loop's back-off has not yet grown past
the threshold. From then on it is *stuck*. A threshold of 0 (or less) calls no pod stuck.

The default, `STUCK_AFTER` (3 minutes), is longer than an image pull or a scale-up usually
takes and shorter than the kubelet's longest crash back-off (5 minutes), so a crash loop is
called stuck once its back-off has grown past it. train-controller's `--stuck-pod-threshold`
(a Warning Event on the job) and `train-compile status --stuck-pod-threshold` (exit code 3)
both default to it, so the two call the same pod stuck at the same moment.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from foundation.runs.podstate import why
from foundation.runs.clock import parse_time

STUCK_AFTER = 180.0  # seconds


@dataclass(frozen=True)
class Wait:
    """How one pod waits for a reason it cannot get past alone."""

    reason: str
    message: str
    waited: float  # seconds since the wait began
    stuck: bool  # waited past the threshold
    left: float  # seconds until it is stuck (0 once it is)


def wait_of(pod: dict[str, Any], *, now: datetime, threshold: float = STUCK_AFTER) -> Optional[Wait]:
    """How `pod` waits (module docstring); None when it waits for no such reason, is being
    deleted, or the threshold is 0 (no pod is ever stuck)."""
    if threshold <= 0 or (pod.get("metadata") or {}).get("deletionTimestamp"):
        return None
    said = why(pod)
    if not said.stuck:
        return None
    began = parse_time(said.since)
    waited = (now - began).total_seconds() if began is not None else threshold
    stuck = waited >= threshold
    return Wait(said.reason, said.message, waited, stuck, 0.0 if stuck else threshold - waited)
