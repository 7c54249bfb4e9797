"""When a status write that only moves replica counts may wait: the reconciler's coalescing.

Where it sits: below `controller.jobs.reconcile`, which asks it before each status write. Why
it exists: the counts of an 8-pod job move with each pod that starts or ends, a second or so
apart, and each was a write of its own, a third of the status writes in `make bench-scale`
(bench/README.md). Held at most COALESCE s from the first such pass, the next change of a
condition, a start or completion time takes them along, as upstream's busy work queue folds
them; nothing else waits, and a held count is the next leader's to write. State is per job
key and guarded by a lock: the manager's workers reconcile different keys at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

COALESCE = 2.0  # seconds a change of replica counts alone may wait for the job's next change


def comparable(status: dict[str, Any]) -> dict[str, Any]:
    """A job status as the write decision compares it: `lastReconcileTime` aside, no
    `replicaStatuses` the same as an empty one (upstream omits an empty map)."""
    out = {k: v for k, v in status.items() if k != "lastReconcileTime"}
    out.setdefault("replicaStatuses", {})
    return out


class CountWrites:
    """Which jobs' count-only status changes are waiting, and since when."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}  # job key -> when a change of its replica counts alone was held
        self._lock = threading.Lock()

    def wait(self, key: str, old: dict[str, Any], status: dict[str, Any]) -> float | None:
        """Seconds `status` waits before it is written over `old`, or None to write now."""
        now = time.monotonic()
        counts_only = comparable(status) != comparable(old) and all(
            status.get(k) == old.get(k) for k in set(status) | set(old) if k not in ("replicaStatuses", "lastReconcileTime"))
        with self._lock:
            if not counts_only:
                self._since.pop(key, None)
                return None
            first = self._since.setdefault(key, now)
            left = COALESCE - (now - first)
            if left <= 0:
                del self._since[key]
                return None
        return left

    def forget(self, key: str) -> None:
        with self._lock:
            self._since.pop(key, None)
