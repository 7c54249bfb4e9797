"""A job's state and run as the cluster has them, for `--live`: read by the CLI, judged here.

The CLI reads the jobs, their pods and train-controller's run records (one list per kind,
and per namespace one of pods and one of records: `compiler.plan.build.wanted`) through
`compiler/cli/cluster.py` (the one module that may reach a cluster) and hands them in as
plain objects; nothing here talks to an API server. The state is `foundation.runs.state`'s,
the one `train-compile status` prints too (the newest true condition, a TrainJob's child Jobs
when it has none); `absent` when the cluster has no such job. The run is
`foundation.runs.current`'s, `status`' too: when it started (the first container of its pods),
its run record (train-controller's ControllerRevision, with its number) and the GPUs its pods
hold now: the pods placed on a node, not the compiled figure (a job whose pods never
scheduled holds none). A running job's age is its run's, to the second (`Running for 25s`),
as `status` says it. The live job's `trainforge.dev/source` says which spec it was compiled
from: a job of the same name from another spec (another folder or repository) is named as
such, not taken for this one's run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from foundation.runs import current as runs
from foundation.runs.clock import parse_time
from foundation.runs.state import job_state
from schemas.durations import age
from schemas.marks import SOURCE

RECORDS, PODS = "ControllerRevision", "Pod"  # the other objects --live reads, by kind


@dataclass(frozen=True)
class Live:
    state: str
    since: Optional[datetime] = None  # when that condition became true
    source: Optional[str] = None  # the live job's trainforge.dev/source: the spec it was compiled from
    started: Optional[datetime] = None  # its run's first container start (None: not started, or not read)
    record: Optional[str] = None  # train-controller's run record of the current run
    revision: Optional[int] = None  # the record's number
    gpus: Optional[int] = None  # GPUs its pods placed on a node hold now (None: its pods were not read)

    def fact(self, now: datetime) -> str:
        """`Running for 3h12m`, the age as `status` says it: a running job's from its run's start,
        another state's from its condition (or the bare state when the cluster gives no time)."""
        since = self.started if self.state == "Running" and self.started else self.since
        if since is None or self.state == "absent":
            return self.state
        return f"{self.state} for {age(max(0.0, (now - since).total_seconds()))}"

    def run(self, now: datetime) -> str:
        """`run bert-5f6d (revision 2) started 3m ago, 16 GPUs in use`: what an update reaches."""
        parts = []
        if self.record:
            parts.append(f"run {self.record}" + (f" (revision {self.revision})" if self.revision else ""))
        if self.started is not None:
            parts.append(f"started {age(max(0.0, (now - self.started).total_seconds()))} ago")
        if self.gpus is not None:
            parts.append(f"{self.gpus} GPUs in use")
        return ", ".join(parts)

    def note(self, now: datetime) -> str:
        """`; Running for 3m (run bert-5f6d (revision 2) started 3m ago, 16 GPUs in use)`: an
        update's live facts, said after its lead."""
        if self.state == "absent":
            return ""
        run = self.run(now)
        return f"; {self.fact(now)}" + (f" ({run})" if run else "")

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "since": _stamp(self.since), "started": _stamp(self.started),
                "record": self.record, "revision": self.revision, "gpus": self.gpus}


ABSENT = Live("absent")


def state_of(obj: Optional[dict[str, Any]], pods: Optional[list[dict[str, Any]]] = None,
             records: Optional[list[dict[str, Any]]] = None) -> Live:
    """The state of one live job object (None: absent) and, given its pods and its namespace's
    run records (None: not read), its run."""
    if obj is None:
        return ABSENT
    found = job_state(obj)
    source = ((obj.get("metadata") or {}).get("annotations") or {}).get(SOURCE)
    if pods is None:
        return Live(found.state, found.since_time, source)
    run = runs.current(obj, pods, records or [])
    return Live(found.state, found.since_time, source, parse_time(run.started), run.name, run.number,
                runs.gpus_held(pods))


def index(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], Live]:
    """(kind, namespace, name) -> the live job's state and run, from the jobs, pods and records
    read (a namespace whose pods could not be read, `unread`, gives no run facts)."""
    jobs = [o for o in objects if o.get("kind") not in (RECORDS, PODS)]
    pods = [o for o in objects if o.get("kind") == PODS and not o.get(UNREAD)]
    read = {o["metadata"].get("namespace") for o in objects if o.get("kind") == PODS and o.get(UNREAD)}
    out = {}
    for job in jobs:
        meta = job["metadata"]
        key = (job.get("kind", ""), meta.get("namespace", ""), meta["name"])
        label = runs.labels_for(str(job.get("apiVersion") or "kubeflow.org/v1")).job
        own = [p for p in pods if (p["metadata"].get("namespace") == key[1]
                                   and (p["metadata"].get("labels") or {}).get(label) == key[2])]
        records = [r for r in objects if r.get("kind") == RECORDS and r["metadata"].get("namespace") == key[1]
                   and not r.get(UNREAD)]
        out[key] = state_of(job, own if key[1] not in read else None, records)
    return out


UNREAD = "trainforge.dev/unread"  # on the stand-in for a list the credentials may not read


def unread(kind: str, namespace: str) -> dict[str, Any]:
    """What the reader hands in for a list of pods or records it was refused: no run facts there."""
    return {"kind": kind, "metadata": {"namespace": namespace, "name": ""}, UNREAD: True}


def _stamp(at: Optional[datetime]) -> Optional[str]:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None
