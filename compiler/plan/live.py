"""A job's state as the cluster has it, for `--live`: read by the CLI, judged here.

The CLI reads the jobs through `compiler/cli/cluster.py` (the one module that may reach a
cluster) and hands them in as plain objects; nothing here talks to an API server. The
state is `foundation.runs.state`'s, the one `train-compile status` prints too (the newest
true condition, a TrainJob's child Jobs when it has none); `absent` when the cluster has no
such job. The live job's `trainforge.dev/source` says which spec it was compiled from: a job
of the same name from another spec (another folder or repository) is named as such, not
taken for this one's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from foundation.runs.state import job_state
from schemas.durations import age
from schemas.marks import SOURCE


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
    found = job_state(obj)
    return Live(found.state, found.since_time, ((obj.get("metadata") or {}).get("annotations") or {}).get(SOURCE))


def index(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(kind, namespace, name) -> live object."""
    return {(o.get("kind", ""), o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}
