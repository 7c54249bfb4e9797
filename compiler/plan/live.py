"""A job's state as the cluster has it, for `--live`: read by the CLI, judged here.

The CLI reads the jobs through `compiler/cli/cluster.py` (the one module that may reach a
cluster) and hands them in as plain objects; nothing here talks to an API server. The
state is `foundation.runs.state`'s, the one `train-compile status` prints too (the newest
true condition, a TrainJob's child Jobs when it has none); `absent` when the cluster has no
such job. The live job's `trainforge.dev/source` says which spec it was compiled from: a job
of the same name from another spec (another folder or repository) is named as such, not
taken for this one's run. Whether a job's run has started is read as train-controller reads it
(`foundation.runs.started`: its current run record and its pods), so the plan holds a change of
a started run only. A running job that reported progress (`foundation.progress`) also prices its
run: how far it got and the GPU-hours of progress a kill or restart throws away.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from foundation.progress.reading import price
from foundation.runs import started as runstart
from foundation.runs.state import job_state
from schemas.durations import age
from schemas.marks import SOURCE

CHILDREN = ("Pod", "ControllerRevision")  # read beside the jobs: whether a run has started (`started`)


@dataclass(frozen=True)
class Live:
    state: str
    since: Optional[datetime] = None  # when that condition became true
    source: Optional[str] = None  # the live job's trainforge.dev/source: the spec it was compiled from
    started: Optional[bool] = None  # its run has started (train-controller's record and pods); None: no record
    obj: Optional[dict[str, Any]] = field(default=None, compare=False, repr=False)  # the live job as read

    def price(self, gpus: int, now: datetime) -> Optional[str]:
        """What stopping its run throws away, from the progress it reported (`at 62%, 3 h 10 min
        left, 96 GPU-hours of progress`); None when the job reported none or is not running."""
        if self.obj is None or self.state in ("absent", "Succeeded", "Failed", "Suspended"):
            return None
        return price(self.obj, gpus, now, since=self.since)

    def fact(self, now: datetime) -> str:
        """`Running for 3h12m`, the age as `status` says it (or the bare state when the cluster gives no time)."""
        if self.since is None or self.state == "absent":
            return self.state
        return f"{self.state} for {age(max(0.0, (now - self.since).total_seconds()))}"


ABSENT = Live("absent")


def state_of(obj: Optional[dict[str, Any]], states: Optional[LiveIndex] = None) -> Live:
    """The state of one live job object (None: absent); with the index it came from, whether its
    run has started, as train-controller decides it (foundation.runs.started)."""
    if obj is None:
        return ABSENT
    found = job_state(obj)
    started = None
    if states is not None:
        pods, records = states.children.get(str(obj["metadata"].get("uid")), ([], []))
        record = runstart.current_record(records)
        started = None if record is None else runstart.started(pods, record)
    return Live(found.state, found.since_time, ((obj.get("metadata") or {}).get("annotations") or {}).get(SOURCE),
                started, obj)


class LiveIndex(dict[tuple[str, str, str], dict[str, Any]]):
    """(kind, namespace, name) -> live job; `children`: job uid -> (its pods, its run records)."""

    children: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]


def index(objects: list[dict[str, Any]]) -> LiveIndex:
    """The live jobs by (kind, namespace, name), and the pods and records each controls."""
    out = LiveIndex()
    out.children = {}
    for o in objects:
        if o.get("kind") in CHILDREN:
            owner = next((r.get("uid") for r in o["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if owner is not None:
                pods, records = out.children.setdefault(str(owner), ([], []))
                (pods if o.get("kind") == "Pod" else records).append(o)
            continue
        out[(o.get("kind", ""), o["metadata"].get("namespace", ""), o["metadata"]["name"])] = o
    return out
