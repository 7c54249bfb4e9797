"""Create/delete expectations: do not act on a job's children until the watch caught up.

After the controller asks for `pods/foo-worker-0` to be created it records that name;
until the pod informer shows it (or the expectation times out) the job's reconcile only
refreshes status and does not create or delete children, because a stale cache would
otherwise make it act twice. Names are deterministic, so entries are the exact
(resource, name) pairs rather than upstream's counters.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

Item = tuple[str, str]  # (resource plural, object name)


class Expectations:
    def __init__(self, *, timeout: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._creates: dict[str, dict[Item, float]] = {}
        self._deletes: dict[str, dict[Item, float]] = {}

    def expect_create(self, key: str, items: Iterable[Item]) -> None:
        self._add(self._creates, key, items)

    def expect_delete(self, key: str, items: Iterable[Item]) -> None:
        self._add(self._deletes, key, items)

    def created(self, key: str, item: Item) -> None:
        """The watch showed `item` (or its create failed): stop waiting for it."""
        self._drop(self._creates, key, item)

    def deleted(self, key: str, item: Item) -> None:
        self._drop(self._deletes, key, item)

    def satisfied(self, key: str) -> bool:
        """True when nothing is pending for `key` (expired entries are dropped)."""
        now = self._clock()
        with self._lock:
            pending = False
            for table in (self._creates, self._deletes):
                entries = table.get(key)
                if not entries:
                    continue
                for item, deadline in list(entries.items()):
                    if deadline <= now:
                        del entries[item]
                pending = pending or bool(entries)
            return not pending

    def next_deadline(self, key: str) -> float | None:
        """Seconds until the earliest pending expectation of `key` expires."""
        with self._lock:
            deadlines = [d for table in (self._creates, self._deletes) for d in (table.get(key) or {}).values()]
        return max(0.0, min(deadlines) - self._clock()) if deadlines else None

    def forget(self, key: str) -> None:
        with self._lock:
            self._creates.pop(key, None)
            self._deletes.pop(key, None)

    def _add(self, table: dict[str, dict[Item, float]], key: str, items: Iterable[Item]) -> None:
        deadline = self._clock() + self.timeout
        with self._lock:
            entries = table.setdefault(key, {})
            for item in items:
                entries[item] = deadline

    def _drop(self, table: dict[str, dict[Item, float]], key: str, item: Item) -> None:
        with self._lock:
            entries = table.get(key)
            if entries is not None:
                entries.pop(item, None)
                if not entries:
                    del table[key]
