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
as `status` says it. Whether the run has started is read as train-controller reads it
(`foundation.runs.started`: its current run record and its pods), so the plan holds a change of
a started run only. A running job that reported progress (`foundation.progress`) also prices
its run: how far it got and the GPU-hours of progress a kill or restart throws away. The live
job's `trainforge.dev/source` says which spec it was compiled from: a job of the same name from
another spec (another folder or repository) is named as such, not taken for this one's run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from foundation.progress.reading import price
from foundation.runs import current as runs
from foundation.runs import started as runstart
from foundation.runs.clock import parse_time
from foundation.runs.record import controller_uid
from foundation.runs.state import job_state
from schemas.durations import age
from schemas.marks import SOURCE

RECORDS, PODS = "ControllerRevision", "Pod"  # the other objects --live reads, by kind


@dataclass(frozen=True)
class Live:
    state: str
    since: Optional[datetime] = None  # when that condition became true
    source: Optional[str] = None  # the live job's trainforge.dev/source: the spec it was compiled from
    started: Optional[bool] = None  # its run has started (train-controller's record and pods); None: no record
    obj: Optional[dict[str, Any]] = field(default=None, compare=False, repr=False)  # the live job as read
    start: Optional[datetime] = None  # its run's first container start (None: not started, or not read)
    record: Optional[str] = None  # train-controller's run record of the current run
    revision: Optional[int] = None  # the record's number
    gpus: Optional[int] = None  # GPUs its pods placed on a node hold now (None: its pods were not read)

    def price(self, gpus: int, now: datetime) -> Optional[str]:
        """What stopping its run throws away, from the progress it reported (`at 62%, 3 h 10 min
        left, 96 GPU-hours of progress`); None when the job reported none or is not running."""
        if self.obj is None or self.state in ("absent", "Succeeded", "Failed", "Suspended"):
            return None
        return price(self.obj, gpus, now, since=self.since)

    def fact(self, now: datetime) -> str:
        """`Running for 3h12m`, the age as `status` says it: a running job's from its run's start,
        another state's from its condition (or the bare state when the cluster gives no time)."""
        since = self.start if self.state == "Running" and self.start else self.since
        if since is None or self.state == "absent":
            return self.state
        return f"{self.state} for {age(max(0.0, (now - since).total_seconds()))}"

    def run(self, now: datetime) -> str:
        """`run bert-5f6d (revision 2) started 3m ago, 16 GPUs in use`: what an update reaches."""
        parts = []
        if self.record:
            parts.append(f"run {self.record}" + (f" (revision {self.revision})" if self.revision else ""))
        if self.start is not None:
            parts.append(f"started {age(max(0.0, (now - self.start).total_seconds()))} ago")
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
        return {"state": self.state, "since": _stamp(self.since), "started": _stamp(self.start),
                "runStarted": self.started, "record": self.record, "revision": self.revision, "gpus": self.gpus}


ABSENT = Live("absent")


class LiveIndex(dict[tuple[str, str, str], dict[str, Any]]):
    """(kind, namespace, name) -> live job; `children`: job uid -> (its pods, its namespace's run
    records); `unread`: the namespaces whose pods or records the credentials may not list."""

    children: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]
    unread: set[str]


def state_of(obj: Optional[dict[str, Any]], states: Optional[LiveIndex] = None) -> Live:
    """The state of one live job object (None: absent); with the index it came from, its run:
    whether it has started, as train-controller decides it (foundation.runs.started), its start,
    record and the GPUs its pods hold (none where they could not be read)."""
    if obj is None:
        return ABSENT
    found = job_state(obj)
    meta = obj.get("metadata") or {}
    source = (meta.get("annotations") or {}).get(SOURCE)
    if states is None or meta.get("namespace", "") in states.unread:
        return Live(found.state, found.since_time, source, None, obj)
    pods, records = states.children.get(str(meta.get("uid")), ([], []))
    run = runs.current(obj, pods, records)
    started = None if run.record is None else runstart.started(pods, run.record)
    return Live(found.state, found.since_time, source, started, obj, parse_time(run.started), run.name,
                run.number, runs.gpus_held(pods))


def index(objects: list[dict[str, Any]]) -> LiveIndex:
    """The live jobs by (kind, namespace, name), with each one's pods (those it controls, or that
    carry its name in the label its maker puts on them: a TrainJob's come through a JobSet) and
    the run records it controls; a namespace whose pods or records could not be read (`unread`)
    gives no run facts."""
    out = LiveIndex()
    out.children, out.unread = {}, set()
    jobs = [o for o in objects if o.get("kind") not in (RECORDS, PODS)]
    children = [o for o in objects if o.get("kind") in (RECORDS, PODS) and not o.get(UNREAD)]
    out.unread = {o["metadata"].get("namespace", "") for o in objects if o.get(UNREAD)}
    # one pass over the children, not one per job: a project's pods are ~8 per job
    owned: dict[str, list[int]] = {}  # controller uid -> positions of its children
    for i, child in enumerate(children):
        uid = controller_uid(child)
        if uid is not None:
            owned.setdefault(uid, []).append(i)
    labelled: dict[tuple[str, str, str], list[int]] = {}  # (namespace, label, value) -> positions of pods
    for label in {runs.labels_for(str(j.get("apiVersion") or "kubeflow.org/v1")).job for j in jobs}:
        for i, child in enumerate(children):
            value = (child["metadata"].get("labels") or {}).get(label) if child.get("kind") == PODS else None
            if value is not None:
                labelled.setdefault((child["metadata"].get("namespace", ""), label, str(value)), []).append(i)
    for job in jobs:
        meta = job["metadata"]
        key = (job.get("kind", ""), meta.get("namespace", ""), meta["name"])
        out[key] = job
        label, uid = runs.labels_for(str(job.get("apiVersion") or "kubeflow.org/v1")).job, str(meta.get("uid"))
        mine = owned.get(uid, [])
        at = sorted({*(i for i in mine if children[i].get("kind") == PODS), *labelled.get((key[1], label, key[2]), [])})
        out.children[uid] = ([children[i] for i in at], [children[i] for i in mine if children[i].get("kind") == RECORDS])
    return out


UNREAD = "trainforge.dev/unread"  # on the stand-in for a list the credentials may not read


def unread(kind: str, namespace: str) -> dict[str, Any]:
    """What the reader hands in for a list of pods or records it was refused: no run facts there."""
    return {"kind": kind, "metadata": {"namespace": namespace, "name": ""}, UNREAD: True}


def _stamp(at: Optional[datetime]) -> Optional[str]:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ") if at is not None else None
