"""A work queue of job keys with client-go's guarantees.

Keys (`Kind/namespace/name`) are deduplicated while they wait; a key being processed is
never handed to a second worker (if it is added meanwhile it is queued again when
`done` is called); failures back off per key exponentially (5 ms doubling up to 5
minutes by default, reset by `forget`); `add_after` schedules deadlines and TTLs on one
timer thread, so nothing polls. As in client-go a key waits there once (the earliest
time wins), and a key handed to a worker stops waiting: every pass schedules its own
follow-up (its next deadline, or its backoff after an error), so an older wake-up would
only run a redundant pass (e.g. the expectation timeout of a pass that ran before the
watch showed its creates, minutes after the next event settled the job).

Workers and the timer thread wait on two conditions of one lock, and a new key wakes one
worker (client-go's `cond.Signal`): with a single condition and `notify_all`, every add
woke all workers and the timer, and all but one went back to sleep: the largest single cost
in a py-spy profile of `make bench-scale` (bench/README.md, "controller at scale").
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable


class ShutDown(Exception):
    """The queue was shut down; workers should exit."""


class WorkQueue:
    def __init__(self, *, base_delay: float = 0.005, max_delay: float = 300.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.base_delay, self.max_delay = base_delay, max_delay
        self._clock = clock
        self._cond = threading.Condition()  # the workers wait here; both conditions share its lock
        self._timer_wake = threading.Condition(self._cond)  # the timer thread waits here
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._waiting: list[tuple[float, int, str]] = []  # heap; an entry not in _due_at is void
        self._due_at: dict[str, float] = {}  # key -> when its one live waiting entry fires
        self._seq = itertools.count()
        self._shutdown = False
        self._timer = threading.Thread(target=self._timer_loop, name="workqueue-timer", daemon=True)
        self._timer.start()

    # --------------------------------------------------------------- add / get / done
    def add(self, key: str) -> None:
        with self._cond:
            if self._shutdown or key in self._dirty:
                return
            self._dirty.add(key)
            if key not in self._processing:
                self._queue.append(key)
                self._cond.notify()

    def get(self, timeout: float | None = None) -> str | None:
        """Next key (marked in flight), None on timeout; raises ShutDown when stopped."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while not self._queue:
                if self._shutdown:
                    raise ShutDown()
                remaining = None if deadline is None else deadline - self._clock()
                if remaining is not None and remaining <= 0:
                    return None
                self._cond.wait(remaining)
            key = self._queue.popleft()
            self._processing.add(key)
            self._dirty.discard(key)
            self._due_at.pop(key, None)  # this pass schedules whatever follow-up it needs
            return key

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    # --------------------------------------------------------------- delays and backoff
    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown:
                return
            due = self._clock() + delay
            if self._due_at.get(key, due + 1) <= due:
                return  # it waits already, to run sooner
            self._due_at[key] = due
            entry = (due, next(self._seq), key)
            heapq.heappush(self._waiting, entry)
            if len(self._waiting) > 2 * len(self._due_at) + 64:  # mostly void entries (long TTLs): drop them
                self._waiting = [entry for entry in self._waiting if self._due_at.get(entry[2]) == entry[0]]
                heapq.heapify(self._waiting)
            if self._waiting[0] is entry:  # else the timer wakes for an earlier entry first, and sees this one then
                self._timer_wake.notify()

    def add_rate_limited(self, key: str) -> float:
        """Re-add after this key's next backoff step; returns the delay chosen."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        delay = min(self.base_delay * (2**failures), self.max_delay)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    # --------------------------------------------------------------- lifecycle and metrics
    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def pending_delayed(self) -> int:
        with self._cond:
            return len(self._due_at)

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()
            self._timer_wake.notify()
        self._timer.join(timeout=5)

    @property
    def is_shutdown(self) -> bool:
        return self._shutdown

    def _timer_loop(self) -> None:
        with self._cond:
            while not self._shutdown:
                now = self._clock()
                ready: list[str] = []
                while self._waiting and self._waiting[0][0] <= now:
                    due, _, key = heapq.heappop(self._waiting)
                    if self._due_at.get(key) == due:  # else superseded by a sooner one, or taken by a worker
                        del self._due_at[key]
                        ready.append(key)
                queued = 0
                for key in ready:
                    if key not in self._dirty:
                        self._dirty.add(key)
                        if key not in self._processing:
                            self._queue.append(key)
                            queued += 1
                if queued:
                    self._cond.notify(queued)
                timeout = (self._waiting[0][0] - now) if self._waiting else None
                self._timer_wake.wait(timeout)
