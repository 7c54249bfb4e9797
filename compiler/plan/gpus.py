"""GPUs and GPU-hours, per environment and per namespace and Kueue queue within it.

A job's GPUs are what it requests when all its pods run (the target's own layout of the
rendered job). Its budget is the most GPU-hours one run can bill: GPUs x `activeDeadline`
(no deadline, no bound). Before and after are the sums over each side's jobs, known only
when every job has a deadline. What the change can add at most is the sum over the changed
jobs of what each starts or grows: a whole budget for a new run (a create, a rename, a
resume, a restart by Kueue), the growth of the budget for an update of a run in progress,
nothing for a delete or a job the head keeps suspended; a job that will run again after its
TTL, or that starts or grows without a deadline, leaves it without a bound (None, named).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from compiler.plan.model import GpuHours, Gpus, Group
from compiler.plan.sides import Job
from compiler.targets.base import at_path

NEW_RUN = ("restarts-run",)


@dataclass(frozen=True)
class Row:
    """One job of the plan as the sums see it."""

    key: str  # namespace/name
    namespace: str
    queue: Optional[str]
    change: str
    old: Optional[Job]
    new: Optional[Job]
    hazards: tuple[str, ...]

    def added(self) -> Optional[float]:
        if self.change in ("delete", "unchanged") or self.new is None:
            return 0.0
        if "reruns-finished" in self.hazards:
            return None
        new = budget(self.new)
        if suspended_in_git(self.new):
            return 0.0
        if self.change in ("create", "rename") or any(h in self.hazards for h in NEW_RUN):
            return new
        old = budget(self.old) if self.old is not None else 0.0
        if new is None:
            return None if self.new.gpus > 0 else 0.0
        return max(0.0, new - (old or 0.0))


def budget(job: Optional[Job]) -> Optional[float]:
    if job is None:
        return 0.0
    if job.gpus == 0:
        return 0.0
    return None if job.deadline is None else job.gpus * job.deadline / 3600


def suspended_in_git(job: Job) -> bool:
    """Suspended in git and not Kueue's (a queued job's suspend is Kueue's to flip)."""
    return bool(at_path(job.rendered, job.plan_facts.suspend)) and job.queue is None


def _sum(values: Iterable[Optional[float]]) -> Optional[float]:
    total = 0.0
    for value in values:
        if value is None:
            return None
        total += value
    return round(total, 2)


def sums(rows: list[Row]) -> tuple[Gpus, GpuHours]:
    gpus = Gpus(sum(r.old.gpus for r in rows if r.old is not None), sum(r.new.gpus for r in rows if r.new is not None))
    added = [(r, r.added()) for r in rows]
    hours = GpuHours(
        before=_sum(budget(r.old) for r in rows if r.old is not None),
        after=_sum(budget(r.new) for r in rows if r.new is not None),
        added=_sum(value for _, value in added),
        unbounded=tuple(r.key for r, value in added if value is None),
    )
    return gpus, hours


def groups(rows: list[Row], by: Callable[[Row], Optional[str]]) -> list[Group]:
    """The sums per value of `by` (rows where it is None are left out)."""
    named: dict[str, list[Row]] = {}
    for row in rows:
        name = by(row)
        if name is not None:
            named.setdefault(name, []).append(row)
    return [Group(name, *sums(members)) for name, members in sorted(named.items())]
