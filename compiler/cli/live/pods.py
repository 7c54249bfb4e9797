"""A job's pods as `status` shows them: replica type, index, phase, and why a pod waits.

Which labels tie a pod to its job (the kubeflow.org/v1 operator's, or a JobSet's for a
Trainer TrainJob) is `foundation.runs.current.POD_LABELS`, which `plan --live` reads too.

Why a pod waits, as a person needs it, is `foundation.runs.podstate` (train-controller reads
the same to report a pod stuck on its job): the scheduler's verdict when it has none, else the
first waiting container's reason and message, else how a finished pod ended. Whether a pod
waiting for a reason it does not get past without a person (`STUCK`) is stuck yet is
`foundation.runs.stuck`'s rule, the controller's: only once it has waited the threshold
(`status --stuck-pod-threshold`, 3 minutes by default); before, it is waiting.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Optional

from foundation.runs.current import POD_LABELS, PodLabels, labels_for
from foundation.runs.podstate import STUCK, why
from foundation.runs.stuck import STUCK_AFTER, wait_of

__all__ = ["POD_LABELS", "STUCK", "PodLabels", "PodView", "labels_for", "ordered", "phases", "pod_view"]


@dataclass(frozen=True)
class PodView:
    name: str
    replica: str  # Master, Worker (the kind's own spelling), or a replicated job's name
    index: Optional[int]
    phase: str  # Pending, Running, Succeeded, Failed, Unknown, or Terminating (being deleted)
    ready: bool
    restarts: int
    node: str
    reason: str = ""  # why it waits or how it ended; "" while all is well
    message: str = ""
    container: str = ""  # the container the reason is about
    since: Optional[str] = None  # when the pod's state last changed (a condition's transition)
    created: Optional[str] = None
    stuck: bool = False  # waited past the threshold for a reason it cannot get past alone (foundation.runs.stuck)

    @property
    def finished(self) -> bool:
        return self.phase in ("Succeeded", "Failed")


def pod_view(pod: dict[str, Any], labels: PodLabels, *, replica_types: tuple[str, ...] = (),
             now: Optional[datetime] = None, stuck_after: float = STUCK_AFTER) -> PodView:
    """`pod` as `status` shows it; `replica_types` gives the kind's spelling of the type label.
    With `now`, whether it is stuck: waiting `stuck_after` s or longer (foundation.runs.stuck)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    own = meta.get("labels") or {}
    raw = str(own.get(labels.replica, ""))
    replica = next((rt for rt in replica_types if rt.lower() == raw.lower()), raw)
    index = next((int(own[k]) for k in labels.index if str(own.get(k, "")).isdigit()), None)
    phase = "Terminating" if meta.get("deletionTimestamp") else str(status.get("phase") or "Pending")
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    ready = (conditions.get("Ready") or {}).get("status") == "True"
    since = max((str(c.get("lastTransitionTime")) for c in conditions.values() if c.get("lastTransitionTime")),
                default=status.get("startTime") or meta.get("creationTimestamp"))
    said = why(pod)
    reason, message, container = said.reason, said.message, said.container
    wait = wait_of(pod, now=now, threshold=stuck_after) if now is not None else None
    return PodView(str(meta.get("name")), replica, index, phase, ready,
                   sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or []),
                   str(spec.get("nodeName") or ""), reason, message, container, since, meta.get("creationTimestamp"),
                   stuck=wait is not None and wait.stuck)


def phases(views: list[PodView], replica_types: tuple[str, ...] = ()) -> dict[str, Counter[str]]:
    """replica type -> phase -> pods, the kind's replica types in its order, others after."""
    out: dict[str, Counter[str]] = {}
    order = {rt: i for i, rt in enumerate(replica_types)}
    for view in sorted(views, key=lambda v: (order.get(v.replica, len(order)), v.replica, v.index or 0, v.name)):
        out.setdefault(view.replica, Counter())[view.phase] += 1
    return out


def ordered(views: list[PodView], replica_types: tuple[str, ...] = ()) -> list[PodView]:
    order = {rt: i for i, rt in enumerate(replica_types)}
    return sorted(views, key=lambda v: (order.get(v.replica, len(order)), v.replica,
                                        -1 if v.index is None else v.index, v.name))
