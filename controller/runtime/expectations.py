"""Create/delete expectations: do not act on a job's children until the watch caught up.

After the controller asks for `pods/foo-worker-0` to be created it records that name;
until the pod informer shows it (or the expectation times out) the job's reconcile only
refreshes status and does not create or delete children, because a stale cache would
otherwise make it act twice. Names are deterministic, so entries are the exact
(resource, name) pairs rather than upstream's counters.

A create held back until a pod burst is over (controller.runtime.burst) is expected `held`:
its wait has no deadline until `sent` starts it, because its request has not gone yet. With
the deadline taken at hold time, the held Services of a burst longer than the timeout
(`make bench-curve` at 10,000 jobs) outlived it, the next pass created them again, and
about a quarter of the Service creates answered AlreadyExists (bench/README.md).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable

Item = tuple[str, str]  # (resource plural, object name)
HELD = math.inf  # the deadline of a held create: none until it is sent


class Expectations:
    def __init__(self, *, timeout: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._creates: dict[str, dict[Item, float]] = {}
        self._deletes: dict[str, dict[Item, float]] = {}

    def expect_create(self, key: str, items: Iterable[Item], *, held: bool = False) -> None:
        """Wait for `items`' ADDED; `held`: their requests go later, and their wait starts with `sent`."""
        self._add(self._creates, key, items, held=held)

    def sent(self, key: str, item: Item) -> None:
        """A held create's request goes now: its timeout starts (if it is still expected)."""
        with self._lock:
            entries = self._creates.get(key)
            if entries is not None and item in entries:
                entries[item] = self._clock() + self.timeout

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
        """Seconds until the earliest pending expectation of `key` expires; `timeout` when only
        held creates are pending (look again then: their sends are what the job waits for)."""
        with self._lock:
            deadlines = [d for table in (self._creates, self._deletes) for d in (table.get(key) or {}).values()]
        if not deadlines:
            return None
        return max(0.0, min(deadlines) - self._clock()) if min(deadlines) < HELD else self.timeout

    def drop_unobservable(self, plural: str, exists: Callable[[str, str], bool], listed_at: float) -> list[str]:
        """After a relist of `plural` that began at `listed_at` (this clock): stop waiting for
        what was expected before it and is not in the list; returns the keys that changed.

        A child created and deleted while the watch was down (a kube-apiserver restart) never
        shows up: no ADDED, and the relist cannot show it either. Waiting would hold the job
        for the whole timeout; a relist is the truth, and deterministic names make a second
        create answer AlreadyExists if the first one lands after all. A held create not sent
        yet stays (its HELD deadline is after any list)."""
        changed = []
        with self._lock:
            for table in (self._creates, self._deletes):
                for key in list(table):
                    namespace = key.split("/", 2)[1]
                    entries = table[key]
                    gone = [item for item, deadline in entries.items()
                            if item[0] == plural and deadline - self.timeout < listed_at and not exists(namespace, item[1])]
                    for item in gone:
                        del entries[item]
                    if not entries:
                        del table[key]
                    if gone:
                        changed.append(key)
        return changed

    def forget(self, key: str) -> None:
        with self._lock:
            self._creates.pop(key, None)
            self._deletes.pop(key, None)

    def _add(self, table: dict[str, dict[Item, float]], key: str, items: Iterable[Item], *, held: bool = False) -> None:
        deadline = HELD if held else self._clock() + self.timeout
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
