"""Pods stuck where they cannot get past without a person, said on their job (issue 37).

A pod that cannot pull its image, lacks a Secret, crash-loops or fits on no node leaves its job
`Created` or `Running`, exactly as upstream's operator does: the conditions stay upstream's (the
Kubeflow SDK, Argo CD and Flux read them), so what is wrong is said beside them. Once a pod of
a running job is stuck (`foundation.runs.stuck`: it has waited `threshold` for a reason it
cannot get past alone, the rule `train-compile status` applies too), the reconciler gets the
pod, its reason and its message from `stuck` and says so once: a Warning Event on the job, reason `{Kind}PodStuck` (the
recorder folds repeats and, past 10 on a job, combines them, as client-go's correlator), an INFO
log line with the job's key, and the `trainforge_stuck_pods{controller,reason}` gauge
(controller.runtime.metrics). A pod still short of the threshold gives the pass the seconds
until it will be past it, so the job is queued then (`add_after`); nothing polls.

Not reported: the pods of a job that has finished, is suspended or is between two attempts of
a whole-job restart (the reconciler asks only in a running pass), pods being deleted, and a
pod once reported for a reason (`Reported`: one Event per pod and reason for the life of the
process; a restarted controller or a new leader says it once more).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from foundation.runs.stuck import wait_of
from schemas.durations import go  # the threshold as its flag takes it

REASON = "PodStuck"  # the Event's reason, after the kind's name
KEPT = 65536  # (pod uid, reason) pairs remembered as reported (the oldest forgotten past it)


@dataclass(frozen=True)
class Stuck:
    pod: str
    uid: str
    reason: str
    message: str
    waited: float  # seconds since the wait began


def stuck(pods: list[dict[str, Any]], *, now: datetime, threshold: float) -> tuple[list[Stuck], float | None]:
    """(the pods stuck past `threshold` s, by name; the seconds until the next waiting pod will be)."""
    found: list[Stuck] = []
    wake: float | None = None
    for pod in pods:
        wait = wait_of(pod, now=now, threshold=threshold)
        if wait is None:
            continue
        meta = pod["metadata"]
        if wait.stuck:
            found.append(Stuck(meta["name"], str(meta.get("uid", "")), wait.reason, wait.message, wait.waited))
        else:
            wake = min(wait.left, wake if wake is not None else threshold)
    return sorted(found, key=lambda s: s.pod), wake


def event_message(pod: Stuck, threshold: float) -> str:
    text = f"Pod {pod.pod} is stuck in {pod.reason} for more than {go(threshold)}"
    return f"{text}: {pod.message}" if pod.message else text


class Reported:
    """Which (pod, reason) have been said, and how many pods of each job are stuck now (the gauge)."""

    def __init__(self, *, kept: int = KEPT) -> None:
        self._lock = threading.Lock()
        self._said: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._now: dict[str, list[Stuck]] = {}  # job key -> its pods stuck now
        self.kept = kept

    def news(self, key: str, pods: list[Stuck]) -> list[Stuck]:
        """Record `pods` as the job's stuck pods now; returns those not said before."""
        out = []
        with self._lock:
            if pods:
                self._now[key] = pods
            else:
                self._now.pop(key, None)
            for pod in pods:
                said = (pod.uid or pod.pod, pod.reason)
                if said not in self._said:
                    self._said[said] = None
                    out.append(pod)
                    while len(self._said) > self.kept:
                        self._said.popitem(last=False)
        return out

    def forget(self, key: str) -> None:
        """The job finished, was suspended or is gone: none of its pods counts as stuck now."""
        with self._lock:
            self._now.pop(key, None)

    def counts(self) -> dict[tuple[str, str], int]:
        """(controller, reason) -> pods stuck now; controller is the kind in lower case (the metrics')."""
        out: dict[tuple[str, str], int] = {}
        with self._lock:
            for key, pods in self._now.items():
                controller = key.split("/", 1)[0].lower()
                for pod in pods:
                    out[(controller, pod.reason)] = out.get((controller, pod.reason), 0) + 1
        return out
