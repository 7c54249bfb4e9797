"""A job's state as the cluster has it: its newest true condition, and since when.

The words are the plan contract's (`Created`, `Running`, `Restarting`, `Suspended`,
`Succeeded`, `Failed`): what the kubeflow.org/v1 operator (and train-controller) and Kubeflow
Trainer write, read one way. Which condition type means success, failure or suspension is a
kind's (`ENDINGS`: a TrainJob ends `Complete`); the Argo CD and Flux health checks
(compiler.gitops.health) read the same table. A condition counts only when its status is the
string "True", and only when its type is one of the words (another type says nothing the
contract has a word for). The newest one wins: the latest `lastTransitionTime` (any RFC 3339
precision; an unreadable or missing time counts as the oldest), and among equal times (they
have one-second resolution) the later entry, as the operator appends conditions in the
order they happen. A job with no true condition reads `Created` since its creation, except
one whose child Jobs run: Trainer v2.3 writes no condition while a TrainJob runs, so there
`Running` comes from its `jobsStatus`, a child Job with a pod `active` (pending or running) or
`ready` (JobSet counts a Job not yet finished whose ready and succeeded pods reach its
parallelism: its pods have all started, or all succeeded an instant before the Job
completes; either way the run has begun and not ended).

Where it sits: foundation, below both products. `train-compile plan --live` judges hazards by
this state and `train-compile status` prints it; before this module each had its own copy,
and they disagreed (the plan's took `active` child Jobs only and read only `...:SSZ` times).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from foundation.frameworks import BY_KIND
from foundation.runs.clock import parse_time
from foundation.frameworks.stock_runtimes import TRAINJOB

STATES = ("Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed")
TERMINAL = ("Succeeded", "Failed")


@dataclass(frozen=True)
class Endings:
    """How a kind's conditions say it ended or was suspended (status "True")."""

    failed: str = "Failed"
    succeeded: str = "Succeeded"
    suspended: str = "Suspended"

    def words(self) -> dict[str, str]:
        """condition type -> the contract's word."""
        return {self.failed: "Failed", self.succeeded: "Succeeded", self.suspended: "Suspended"}

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


# The kubeflow.org/v1 kinds use the words themselves; Trainer v2.3's TrainJob ends Complete (its
# JobSet's Completed) or Failed, and is Suspended while suspended (by git or by Kueue).
ENDINGS: dict[str, Endings] = {**{kind: Endings() for kind in BY_KIND}, TRAINJOB: Endings(succeeded="Complete")}


@dataclass(frozen=True)
class JobState:
    state: str  # one of STATES
    since: Optional[str]  # RFC 3339 as the cluster wrote it: the condition's lastTransitionTime, else the creation
    reason: str = ""
    message: str = ""

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL

    @property
    def since_time(self) -> Optional[datetime]:
        return parse_time(self.since)


_OLDEST = datetime.min.replace(tzinfo=timezone.utc)


def job_state(job: dict[str, Any]) -> JobState:
    """The state of `job` (a kubeflow.org/v1 job or a TrainJob) as the cluster has it."""
    words = ENDINGS.get(str(job.get("kind")), Endings()).words()
    status = job.get("status") or {}
    newest: Optional[tuple[datetime, int, str, dict[str, Any]]] = None
    for i, cond in enumerate(status.get("conditions") or []):
        if not isinstance(cond, dict) or cond.get("status") != "True":
            continue
        word = words.get(str(cond.get("type")), str(cond.get("type")))
        if word not in STATES:
            continue
        at = parse_time(cond.get("lastTransitionTime")) or _OLDEST
        if newest is None or (at, i) >= newest[:2]:
            newest = (at, i, word, cond)
    if newest is not None:
        _, _, word, cond = newest
        return JobState(word, cond.get("lastTransitionTime"), str(cond.get("reason") or ""),
                        str(cond.get("message") or ""))
    created = (job.get("metadata") or {}).get("creationTimestamp")
    children = [j for j in status.get("jobsStatus") or [] if isinstance(j, dict)]
    if any(int(j.get("ready") or 0) or int(j.get("active") or 0) for j in children):
        return JobState("Running", created, "", "child Jobs are active (jobsStatus)")
    return JobState("Created", created)
