"""`train-compile logs --follow`: every selected pod's log as it is written, until the jobs end.

The Kubeflow SDK's follow returns when no pod exists yet (kubeflow/sdk#182); here the
job and its pods are waited for. Each poll (one GET of each job, one list of its pods)
starts a stream for every container run that has begun (a pod that appears later, a
restarted container: each run has a log of its own) and marks a stream done once its run
ended. A kubelet ends a followed log when the container exits; a stream that stays open
after its run ended (kwok's never does) is closed once it has been quiet for `DRAIN`
seconds, so the last lines still arrive. The follow ends when every job has finished
(Succeeded or Failed) and every stream is done; Ctrl-C ends it at once.

Streams run in threads, one per container run; lines are written whole, one writer at a
time, each with its pod as prefix when several pods can show up.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from compiler.cli import cluster
from compiler.cli.live.logsource import JobRef, Lines, Pick, ended, instance
from compiler.cli.live.pods import STUCK, labels_for, pod_view
from foundation.runs.state import job_state

POLL = 1.0
DRAIN = 2.0


@dataclass
class Run:
    """One container run's stream, read by its own thread."""

    namespace: str
    pod: str
    container: str
    key: tuple[str, int]
    lines: Lines
    opened: Optional[cluster.Stream] = None
    last_data: float = field(default_factory=time.monotonic)
    over: bool = False  # the run ended: close once quiet
    done: threading.Event = field(default_factory=threading.Event)
    error: Optional[Exception] = None


class Follower:
    def __init__(self, reader: cluster.Reader, jobs: list[Callable[[], Optional[JobRef]]], *, pick: Pick,
                 tail: Optional[int], prefix: Callable[[list[tuple[JobRef, Optional[dict[str, Any]]]]], bool],
                 write: Callable[[str], None], note: Callable[[str], None],
                 check: Callable[[JobRef, dict[str, Any], list[dict[str, Any]]], None] = lambda ref, job, pods: None,
                 ) -> None:
        self.reader, self.jobs, self.pick, self.tail = reader, jobs, pick, tail
        self.prefix, self.write, self.note, self.check = prefix, write, note, check
        self.runs: dict[tuple[str, int, str], Run] = {}  # (pod uid, restart count, container) -> its run
        self.lock = threading.Lock()
        self.said: dict[str, str] = {}
        self.prefixed: Optional[bool] = None

    def emit(self, text: str) -> None:
        with self.lock:
            self.write(text)

    def run(self) -> None:
        try:
            while not self.poll():
                time.sleep(POLL)
        finally:
            for r in self.runs.values():
                if r.opened is not None:
                    r.opened.close()
            for r in self.runs.values():
                r.done.wait(5)

    def poll(self) -> bool:
        """One look at the jobs and pods; True when the follow is over."""
        found = [(ref, self.reader.get(ref.kind, ref.namespace, ref.name) if ref else None)
                 for ref in (resolve() for resolve in self.jobs)]
        if self.prefixed is None and all(job is not None for _, job in found):
            self.prefixed = self.prefix(found)  # once the jobs are known; never flips afterwards
        pods: dict[tuple[str, str], tuple[JobRef, dict[str, Any]]] = {}
        for ref, job in found:
            if ref is not None and job is not None:
                every = self.reader.list(cluster.PODS, namespace=ref.namespace, label_selector=ref.selector) or []
                self.check(ref, job, every)  # a selection it can never have ends the follow at once
                for pod in every:
                    if self.pick.wants(pod, ref.labels):
                        pods[(ref.namespace, pod["metadata"]["name"])] = (ref, pod)
        for (_, name), (ref, pod) in sorted(pods.items()):
            container = self.pick.container_of(pod, ref.kind.kind)
            self._say_why(pod, ref)
            run = instance(pod, container)
            if run is not None:
                self._start(ref, pod=name, container=container, run=run, prefixed=self.prefixed is not False)
        now = time.monotonic()
        finished = all(job is not None and job_state(job).finished for _, job in found)
        for key, r in list(self.runs.items()):
            entry = pods.get((r.namespace, r.pod))
            # a finished job's kept pods may still run (a deadline, a failed peer): its log is over too
            r.over = r.over or finished or ended(entry[1] if entry else None, r.container, run=r.key)
            if r.error is not None and r.done.is_set():
                if isinstance(r.error, cluster.ClusterForbidden):
                    raise r.error
                if not r.over:  # e.g. it was read just before the container started: again next time
                    if self.said.get(f"{r.pod} error") != str(r.error):  # once, not every poll
                        self.note(f"{r.pod}: {r.error}")
                        self.said[f"{r.pod} error"] = str(r.error)
                    del self.runs[key]
            elif r.over and r.opened is not None and not r.done.is_set() and now - r.last_data >= DRAIN:
                r.opened.close()
        return finished and all(r.done.is_set() for r in self.runs.values())

    def _start(self, ref: JobRef, *, pod: str, container: str, run: tuple[str, int], prefixed: bool) -> None:
        key = (*run, container)
        if key in self.runs:
            return
        first = not any(r.pod == pod for r in self.runs.values())
        r = Run(ref.namespace, pod, container, run, Lines(f"[{pod}] " if prefixed else "", self.emit))
        self.runs[key] = r
        query = {"container": container, "follow": "true", "tailLines": self.tail if first else None}
        threading.Thread(target=self._read, args=(ref, r), kwargs={"query": query}, daemon=True, name=f"log-{pod}").start()

    def _read(self, ref: JobRef, r: Run, *, query: dict[str, Any]) -> None:
        try:
            r.opened = self.reader.open_stream(cluster.PODS, ref.namespace, r.pod, sub="log", query=query)
            for chunk in r.opened.chunks():
                r.last_data = time.monotonic()
                r.lines.feed(chunk)
        except cluster.ClusterError as exc:
            r.error = exc
        finally:
            r.lines.close()
            r.done.set()

    def _say_why(self, pod: dict[str, Any], ref: JobRef) -> None:
        """A pod that cannot start says so once per reason (on stderr): its log will not come."""
        view = pod_view(pod, labels_for(ref.api_version))
        said = f"{view.reason}: {view.message}" if view.reason in STUCK else ""
        if said and self.said.get(view.name) != said:
            self.note(f"{view.name} waits: {said}")
        self.said[view.name] = said


def stdout_write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
