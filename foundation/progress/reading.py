"""A job's last reported progress, read one way for `status` and for the plan's price of a kill.

Both targets keep the last report in the job's `status.trainerStatus` (the Trainer on a
TrainJob, train-controller on a kubeflow.org/v1 job), so one reader serves both. The words
are shared too: `62%, 3 h 10 min left`, and for what a kill or restart throws away, the
GPU-hours of progress: the job's GPUs times the time its run has trained. That time is the
run's own (`status.startTime`, which train-controller and the Training Operator write when a
run's pods first start; else since the job's current state began), not the ETA's guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from foundation.progress.protocol import TRAINER_STATUS
from foundation.runs.clock import parse_time
from schemas.durations import prose as duration


@dataclass(frozen=True)
class Progress:
    percentage: Optional[int]
    eta_seconds: Optional[int]
    metrics: tuple[tuple[str, str], ...]
    updated: Optional[datetime]

    def to_json(self) -> dict[str, Any]:
        return {"percentage": self.percentage, "etaSeconds": self.eta_seconds,
                "metrics": [{"name": n, "value": v} for n, v in self.metrics],
                "updated": self.updated.isoformat().replace("+00:00", "Z") if self.updated else None}


def progress_of(job: Optional[dict[str, Any]]) -> Optional[Progress]:
    """The job's last report; None when it has none (not instrumented, or not reported yet)."""
    raw = ((job or {}).get("status") or {}).get(TRAINER_STATUS)
    if not isinstance(raw, dict):
        return None
    pct, eta = raw.get("progressPercentage"), raw.get("estimatedRemainingSeconds")
    metrics = tuple((str(m.get("name")), str(m.get("value"))) for m in raw.get("metrics") or [] if isinstance(m, dict))
    return Progress(pct if isinstance(pct, int) else None, eta if isinstance(eta, int) else None, metrics,
                    parse_time(raw.get("lastUpdatedTime")))


def headline(progress: Progress) -> str:
    """`62%, 3 h 10 min left` (either part alone when the other was not reported)."""
    parts = []
    if progress.percentage is not None:
        parts.append(f"{progress.percentage}%")
    if progress.eta_seconds is not None:
        parts.append(f"{duration(progress.eta_seconds)} left")
    return ", ".join(parts) or "reported, no percentage or ETA"


def trained_seconds(job: dict[str, Any], now: datetime, *, since: Optional[datetime] = None) -> Optional[float]:
    """How long the job's current run has trained: from `status.startTime`, else from `since`."""
    start = parse_time((job.get("status") or {}).get("startTime")) or since
    return max(0.0, (now - start).total_seconds()) if start is not None else None


def gpu_hours_text(gpus: int, seconds: Optional[float]) -> Optional[str]:
    """`96 GPU-hours of progress` (None when there are no GPUs or no known start)."""
    if not gpus or seconds is None:
        return None
    hours = gpus * seconds / 3600
    return f"{hours:.0f} GPU-hours of progress" if hours >= 10 else f"{hours:.1f} GPU-hours of progress"


def price(job: dict[str, Any], gpus: int, now: datetime, *, since: Optional[datetime] = None) -> Optional[str]:
    """What stopping the job's run throws away: `at 62%, 3 h 10 min left, 96 GPU-hours of
    progress`; None when the job never reported progress."""
    progress = progress_of(job)
    if progress is None:
        return None
    parts = [headline(progress)]
    if progress.percentage is not None or progress.eta_seconds is not None:
        parts[0] = "at " + parts[0]
    hours = gpu_hours_text(gpus, trained_seconds(job, now, since=since))
    if hours:
        parts.append(hours)
    return ", ".join(parts)
