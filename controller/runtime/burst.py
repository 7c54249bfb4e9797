"""Pods first (`--pods-first`, the default; `--no-pods-first` for upstream's order): during a
burst of pod creates, hold back the headless Service creates and the status writes until the
burst is over.

Why: on a busy API server pods/s is bounded by the server CPU each pod brings along
(bench/server_cost.py). Upstream's pass sends a pod's Service and the job's status write
in the same pass as the pods, so a burst of jobs pays for their Services and status writes
before its last pod exists, about twice the server CPU of the pods alone (bench/README.md,
"Figures the controller's code cites"). The pods are what the scheduler, the image pulls and
eventually the training wait for; the Services are only resolved once the containers
run, and the status records what has happened. So with this mode a pass sends its pods
as usual and hands the rest to `Held`, which lets it go once no pod create has been
started or answered for `quiet` seconds (or an item has waited `max_hold`, so a
never-ending stream of jobs cannot starve them); the Event senders wait the same way
(controller.runtime.events).

What stays upstream's: each job's Services are created after its pods (later than
upstream, never before); every Service create raises its expectation before it is held,
so the job's next pass waits for it as for any create in flight; each outcome is still its
own `SuccessfulCreateService` or `FailedCreateService` Event on the job, and a failure
retries the job with backoff. Status: only a plain pass's write is held, the latest per
job (a later pass replaces it and starts from it, so nothing it recorded is recomputed).
Releasing it queues the job: its next pass, which the work queue never runs beside
another pass of the same job, starts from the held status and, outside the burst, writes
it as any pass would, only if it still differs from the cache, so a held write can never
race one of our own. A terminal status, a pass that deletes after writing, and every
write outside a burst go out at once as before, replacing anything held for that job.
What differs: Services and status land up to one burst later; a leader that stops or
dies holding writes loses the statuses and the next leader recomputes them (level-based,
as after any crash); held creates are sent on a graceful stop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass
class _Status:
    since: float
    status: Any
    release: Callable[[str], None]
    released: bool = False


class Held:
    """Writes held while pods are being created; sent together once the burst is quiet."""

    def __init__(self, *, quiet: float = 0.2, max_hold: float = 5.0, senders: int = 8,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet, self.max_hold = quiet, max_hold
        self._clock = clock
        self._cond = threading.Condition()
        self._pods_in_flight = 0
        self._last_pod = -float("inf")
        self._creates: deque[tuple[float, Callable[[], None]]] = deque()  # oldest first (clock order)
        self._statuses: dict[str, _Status] = {}
        self._sending = 0
        self._closed = False
        self.rounds = 0  # times the sender looked for what is due (what a test waits on to see one did not go)
        self._pool = ThreadPoolExecutor(max_workers=senders, thread_name_prefix="held")
        self._thread = threading.Thread(target=self._run, name="pods-first", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the burst
    def pod_started(self) -> None:
        with self._cond:
            self._pods_in_flight += 1
            self._last_pod = self._clock()

    def pod_answered(self) -> None:
        with self._cond:
            self._pods_in_flight -= 1
            self._last_pod = self._clock()
            if not self._pods_in_flight:  # the quiet time may start: only then can anything fall due
                self._cond.notify_all()

    def in_burst(self) -> bool:
        """A pod create is in flight or was answered less than `quiet` s ago."""
        with self._cond:
            return self._in_burst()

    def settling(self) -> bool:
        """In a burst, or its held creates not all sent yet: what the Event senders wait out.

        Jobs wait for their held Services (their expectations) before they can go Running, and
        nothing waits for an Event, so Events go last: sent beside the Services, they slowed
        "pods Running -> all jobs Running" (bench/README.md, "Pods first")."""
        with self._cond:
            return self._in_burst() or bool(self._creates) or self._sending > 0

    def _in_burst(self) -> bool:
        return self._pods_in_flight > 0 or self._clock() - self._last_pod < self.quiet

    # ------------------------------------------------------------------ holding
    def create(self, send: Callable[[], None]) -> None:
        """Hold one create (`send` does the request and handles its own outcome)."""
        with self._cond:
            self._creates.append((self._clock(), send))
            self._cond.notify_all()

    def status(self, key: str, status: Any, release: Callable[[str], None]) -> None:
        """Hold `key`'s status write, replacing one held before (it keeps its place in time unless
        it was released already); `release(key)` is called once it may go (it queues the job)."""
        with self._cond:
            entry = self._statuses.get(key)
            since = entry.since if entry is not None and not entry.released else self._clock()
            self._statuses[key] = _Status(since, status, release)
            self._cond.notify_all()

    def held_status(self, key: str) -> Any:
        """The status held for `key` (what its next pass starts from), or None."""
        with self._cond:
            entry = self._statuses.get(key)
            return entry.status if entry is not None else None

    def drop_status(self, key: str) -> None:
        """The job's pass wrote (or no longer needs) the held status."""
        with self._cond:
            self._statuses.pop(key, None)

    def pending(self) -> int:
        """Writes held, being sent, or released to a pass that has not written them yet."""
        with self._cond:
            return len(self._creates) + len(self._statuses) + self._sending

    def close(self, timeout: float = 5.0) -> None:
        """Send the held creates now (graceful shutdown), forget the statuses, then stop."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
        self._pool.shutdown(wait=True)
        with self._cond:
            self._statuses.clear()

    # ------------------------------------------------------------------ sending
    def _due(self) -> list[Callable[[], None]]:
        """What to send now: everything once the burst is quiet, else what waited max_hold.

        Called on every wake of the sender, so it costs O(due) for the creates, never O(held):
        a 464-pod burst woke it once per pod answer and rescanned every held Service each time."""
        now = self._clock()
        cut = now if (self._closed or not self._in_burst()) else now - self.max_hold
        due = []
        while self._creates and self._creates[0][0] <= cut:  # held in clock order: the due ones lead
            due.append(self._creates.popleft()[1])
        for key, entry in self._statuses.items():
            if not entry.released and entry.since <= cut and not self._closed:
                entry.released = True
                due.append(lambda release=entry.release, key=key: release(key))
        return due

    def _run(self) -> None:
        while True:
            with self._cond:
                due = self._due()
                self.rounds += 1
                if not due:
                    if self._closed:
                        return
                    self._cond.wait(self.quiet / 2)
                    continue
                self._sending += len(due)
            for _ in self._pool.map(self._send, due):
                pass

    def _send(self, send: Callable[[], None]) -> None:
        try:
            send()
        except Exception:  # noqa: BLE001 - a held write must never stop the sender
            log.exception("held write failed")
        finally:
            with self._cond:
                self._sending -= 1
