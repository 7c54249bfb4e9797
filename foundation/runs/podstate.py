"""Why a pod waits, as the kubelet and the scheduler say it, and since when: read from its status.

Shared by `train-compile status` (each waiting pod with its reason and message) and
train-controller (a pod stuck past its threshold gets an Event on its job), so both call the
same pod stuck for the same reason; after how long a wait is "stuck" is
`foundation.runs.stuck`'s. Pure: a pod's `status` in, words out.

The reason: the scheduler's verdict when it has placed the pod nowhere (`PodScheduled` False,
`Unschedulable` with its message: which nodes and why), else the first container (init
containers first) whose state is `waiting`, with the kubelet's reason and message
(`ImagePullBackOff`, `CrashLoopBackOff` with how the last run ended,
`CreateContainerConfigError` naming the missing Secret ...), else how a failed pod ended.
`STUCK` are the reasons a pod does not get past without a person: a wrong image, a missing
Secret or ConfigMap, a program that keeps crashing, no node that fits.

Since when it waits (`Why.since`, a status timestamp): the `PodScheduled` condition's last
transition for the scheduler's verdict; for a container, when its last run ended if it ran
before (a crash loop waits out the kubelet's back-off from there, so a loop is stuck once a
back-off lasts longer than the threshold: the kubelet's grows from 10 s to 5 min), else since
the kubelet took the pod (`startTime`), else since it was created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

STUCK = frozenset({
    "Unschedulable", "ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull",
    "CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
})
STARTING = ("ContainerCreating", "PodInitializing")  # waiting reasons that are no reason to look


@dataclass(frozen=True)
class Why:
    reason: str = ""  # why it waits or how it failed; "" while all is well
    message: str = ""
    container: str = ""  # the container the reason is about
    since: Optional[str] = None  # when the wait began (a timestamp of the pod's status); None: unknown

    @property
    def stuck(self) -> bool:
        return self.reason in STUCK


def why(pod: dict[str, Any]) -> Why:
    """Why `pod` waits (or failed), read from its status (module docstring)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if status.get("phase") == "Succeeded":  # every container ended 0: nothing waits (most pods of a pass)
        return Why()
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    scheduled = conditions.get("PodScheduled") or {}
    if scheduled.get("status") == "False":
        return Why(str(scheduled.get("reason") or "Unscheduled"), one_line(scheduled.get("message")), "",
                   scheduled.get("lastTransitionTime") or meta.get("creationTimestamp"))
    containers = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    for c in containers:
        waiting = (c.get("state") or {}).get("waiting")
        if waiting and waiting.get("reason") not in (None, *STARTING):
            message = one_line(waiting.get("message"))
            last = (c.get("lastState") or {}).get("terminated")
            if last:  # a crash loop: how the last run ended is what to look at
                message += f"{'; ' if message else ''}last run exited {last.get('exitCode')} ({last.get('reason')})"
            since = (last or {}).get("finishedAt") or status.get("startTime") or meta.get("creationTimestamp")
            return Why(str(waiting["reason"]), message, str(c.get("name") or ""), since)
    if status.get("phase") == "Failed":
        for c in containers:
            ended = (c.get("state") or {}).get("terminated") or {}
            if int(ended.get("exitCode") or 0):
                return Why(str(ended.get("reason") or "Error"), f"exit code {ended['exitCode']}", str(c.get("name") or ""))
        return Why(str(status.get("reason") or "Failed"), one_line(status.get("message")))
    return Why()


def one_line(text: Any) -> str:
    return " ".join(str(text or "").split())
