"""A job's state as the cluster has it, for `--live`: read by the CLI, judged here.

The CLI reads the jobs through `compiler/cli/cluster.py` (the one module that may reach a
cluster) and hands them in as plain objects; nothing here talks to an API server. The
state is the job's newest true condition (by `lastTransitionTime`, the later entry on a
tie): `Created`, `Running`, `Restarting`, `Suspended`, `Succeeded` or `Failed`; a Trainer v2
`Complete` reads `Succeeded`. A job with no true condition reads `Created`, except a
TrainJob whose JobSet reports active pods, which reads `Running` (Trainer v2.3 has no
Running condition). `absent` when the cluster has no such job. The live job's
`trainforge.dev/source` says which spec it was compiled from: a job of the same name from
another spec (another folder or repository) is named as such, not taken for this one's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Optional

from foundation.rfc3339 import parse as _time
from schemas.durations import age
from schemas.marks import SOURCE

STATES = ("Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed")
RENAMED = {"Complete": "Succeeded"}


@dataclass(frozen=True)
class Live:
    state: str
    since: Optional[datetime] = None  # when that condition became true
    source: Optional[str] = None  # the live job's trainforge.dev/source: the spec it was compiled from

    def fact(self, now: datetime) -> str:
        """`Running for 3h12m`, the age as `status` says it (or the bare state when the cluster gives no time)."""
        if self.since is None or self.state == "absent":
            return self.state
        return f"{self.state} for {age(max(0.0, (now - self.since).total_seconds()))}"


ABSENT = Live("absent")


def state_of(obj: Optional[dict[str, Any]]) -> Live:
    """The state of one live job object (None: absent)."""
    if obj is None:
        return ABSENT
    source = ((obj.get("metadata") or {}).get("annotations") or {}).get(SOURCE)
    status = obj.get("status") or {}
    newest: Optional[tuple[datetime, int, dict[str, Any]]] = None
    for i, cond in enumerate(status.get("conditions") or []):
        kind = RENAMED.get(cond.get("type"), cond.get("type"))
        if cond.get("status") != "True" or kind not in STATES:
            continue
        at = _time(cond.get("lastTransitionTime")) or datetime.min.replace(tzinfo=timezone.utc)
        if newest is None or (at, i) >= newest[:2]:
            newest = (at, i, {**cond, "type": kind})
    if newest is not None:
        cond = newest[2]
        return Live(cond["type"], _time(cond.get("lastTransitionTime")), source)
    created = _time((obj.get("metadata") or {}).get("creationTimestamp"))
    if obj.get("kind") == "TrainJob" and any((j.get("active") or 0) > 0 for j in status.get("jobsStatus") or []):
        return Live("Running", created, source)
    return Live("Created", created, source)


def index(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(kind, namespace, name) -> live object."""
    return {(o.get("kind", ""), o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
