"""The creates of one reconcile pass, sent concurrently through a small shared pool.

Upstream creates a pass's missing pods and services one request after another, so a
4-pod job's first pass waits on 8 round trips and a 64-node job's on 128, while the API
server could take them at once. Here, while a pass has a `Batch` open,
`Writes.create` (controller.runtime.writes) only starts the request on the `CreatePool` (at most `size`
creates in flight for the whole controller, in the order asked) and the pass waits for
them all at its end, or before it deletes anything (a delete never overtakes a create
that upstream's order puts first). What stays upstream's: each expectation is recorded
before its request (by `Writes`, which hands the batch the request to make: the batch never
touches the expectations); AlreadyExists counts as created (the second guard: names are
deterministic); each object's outcome is its own Event, in upstream's order; the first
failure in that order fails the pass (retried with backoff); and once a create has
failed, creates of the pass not yet started are not sent, as upstream stops at the
first failure (those already in flight, e.g. a pod's Service, still land).
"""

from __future__ import annotations

import threading
from concurrent import futures
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Callable
from typing import Any

from foundation.cluster import errors
from controller.runtime.burst import Held
from foundation.cluster.kube import PODS, Client, Resource
from controller.runtime.writes import created_event, failed_create_event

# (skip) -> None: the create's request (controller.runtime.writes.Writes._send), raising what the
# API server answered; with skip=True it is not sent (an earlier create of the batch failed)
Send = Callable[..., None]

_SKIPPED = object()  # not sent: an earlier create of the pass failed


class CreatePool:
    """The threads that send creates for every worker (a bound on writes in flight)."""

    def __init__(self, client: Client, *, size: int = 16, held: Held | None = None) -> None:
        self.client, self.size = client, size
        self.held = held  # --pods-first: told when a pod create starts and is answered (controller.runtime.burst)
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="create")

    def batch(self, events: list[Any]) -> Batch:
        return Batch(self, events)

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        return self._executor.submit(fn, *args)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


class Batch:
    """The creates one pass started: `add` sends, `wait` collects outcomes into the Events."""

    def __init__(self, pool: CreatePool, events: list[Any]) -> None:
        self.pool, self.events = pool, events
        self._started: list[tuple[Resource, str, int, Future[Any]]] = []  # (res, name, event slot, outcome)
        self._failed = threading.Event()

    def add(self, res: Resource, obj: dict[str, Any], send: Send) -> None:
        """Start `send`, the request that creates `obj` (its expectation already raised)."""
        self.events.append(None)  # this create's Event goes here, whenever its answer comes
        burst = self.pool.held if res is PODS else None
        if burst is not None:
            burst.pod_started()
        future = self.pool.submit(self._send, send, burst)
        self._started.append((res, obj["metadata"]["name"], len(self.events) - 1, future))

    def _send(self, send: Send, burst: Held | None) -> Any:
        try:
            if self._failed.is_set():
                send(skip=True)
                return _SKIPPED
            send()
        except errors.AlreadyExists as exc:
            return exc
        except errors.ApiError as exc:
            self._failed.set()
            return exc
        finally:
            if burst is not None:
                burst.pod_answered()
        return None

    def wait(self) -> None:
        """Wait for every create started so far, fill in their Events; raise the first failure."""
        futures.wait([future for *_, future in self._started])
        first: BaseException | None = None
        for res, name, slot, future in self._started:
            outcome = future.exception() or future.result()  # an exception here is a bug in a create thread
            if outcome is None:
                self.events[slot] = created_event(res, name)
                continue
            if outcome is _SKIPPED or isinstance(outcome, errors.AlreadyExists):
                continue
            if isinstance(outcome, errors.ApiError):
                self.events[slot] = failed_create_event(res, outcome)
            first = first or outcome
        self._started.clear()
        self.events[:] = [event for event in self.events if event is not None]
        if first is not None:
            raise first
