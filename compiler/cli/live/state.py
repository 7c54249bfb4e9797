"""A live job's state: its newest true condition, and since when.

The words are the plan contract's (`Created`, `Running`, `Restarting`, `Suspended`,
`Succeeded`, `Failed`): what the cluster has, read as the kubeflow.org/v1 operator and
Kubeflow Trainer write it. Which condition means success, failure or suspension is the
health table's (`compiler.gitops.health.RULES`: a TrainJob ends `Complete`), so the
Argo CD check, the Flux expressions and `status` read a job the same way. A job with no
true condition yet reads `Created` since its creation. Trainer v2.3 writes no condition
while a TrainJob runs, so there `Running` comes from its child Jobs (`jobsStatus`: one
with a pod ready or active), the nearest the TrainJob says to one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from foundation.rfc3339 import parse as parse_time

TERMINAL = ("Succeeded", "Failed")
# --wait CONDITION: the states that count as having reached it (Running is reached by a job
# that ran and finished while nobody looked; a failure ends every wait but a wait for it)
REACHED = {
    "Created": ("Created", "Running", "Restarting", "Suspended", "Succeeded"),
    "Running": ("Running", "Restarting", "Succeeded"),
    "Succeeded": ("Succeeded",),
    "Failed": ("Failed",),
}


@dataclass(frozen=True)
class JobState:
    state: str
    since: Optional[str]  # RFC 3339: the condition's lastTransitionTime (the creation when none)
    reason: str = ""
    message: str = ""

    @property
    def finished(self) -> bool:
        return self.state in TERMINAL


def job_state(job: dict[str, Any]) -> JobState:
    """The state of `job` (a kubeflow.org/v1 job or a TrainJob) as the cluster has it."""
    from compiler.gitops.health import RULES

    rule = RULES.get(str(job.get("kind")))
    words = {} if rule is None else {rule.succeeded: "Succeeded", rule.failed: "Failed", rule.suspended: "Suspended"}
    status = job.get("status") or {}
    true = [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("status") == "True"]
    if true:
        # the newest transition wins; among equal times (one-second resolution) the later entry,
        # as the operator appends conditions in the order they happen
        newest = max(enumerate(true), key=lambda ic: (parse_time(ic[1].get("lastTransitionTime")) is not None,
                                                      str(ic[1].get("lastTransitionTime") or ""), ic[0]))[1]
        ctype = str(newest.get("type"))
        return JobState(words.get(ctype, ctype), newest.get("lastTransitionTime"),
                        str(newest.get("reason") or ""), str(newest.get("message") or ""))
    created = (job.get("metadata") or {}).get("creationTimestamp")
    children = status.get("jobsStatus") or []
    if any(int(j.get("ready") or 0) or int(j.get("active") or 0) for j in children if isinstance(j, dict)):
        return JobState("Running", created, "", "child Jobs are active (jobsStatus)")
    return JobState("Created", created)
