"""Kubernetes Events on the job (what `kubectl describe` shows), deduplicated, rate-limited, sent
off the reconcile thread.

Upstream records an Event for every pod/service created or deleted, every restart and
every terminal transition, and its status rules re-emit some on each pass (client-go's
correlator folds those). We keep the same reasons and messages but drop an identical
(object, type, reason, message) seen in the last `dedupe_seconds`, and cap each object
with a token bucket, so a hot loop can never flood etcd. As client-go's recorder does,
`event` only queues: one sender thread POSTs them in order, so a reconcile never waits
on an Event (a 4-pod job's first pass records 8) and they yield the API server to pod
creates in a burst. A backlog that keeps growing (1,000 jobs applied at once record
8,000) gets another sender per `backlog_step` queued, up to `max_senders`, each leaving
once the backlog is back under its step. The queue is bounded (`queue_size`, ~3 MB);
when it is full an Event is dropped and counted in `overflowed`. `close` flushes what is
queued (graceful shutdown). With `pod_burst` (train-controller --pods-first, controller.burst)
the senders also wait while pods are being created and then while the Services held
through the burst are sent, up to its `max_hold` at a time.
`wait=True` sends on the caller's thread, for an Event that must land before what the
caller writes next. Failing to record an Event is logged, never fatal.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, NamedTuple

from controller import errors
from controller.conditions import timestamp
from controller.kube import EVENTS, Client

log = logging.getLogger(__name__)


class _Event(NamedTuple):
    """What a queued Event needs, held as references to strings its object already has."""

    namespace: str
    name: str
    involved: tuple[Any, ...]  # apiVersion, kind, name, namespace, uid, resourceVersion
    etype: str
    reason: str
    message: str
    component: str
    stamp: str


class EventRecorder:
    def __init__(self, client: Client, *, dedupe_seconds: float = 600.0, burst: int = 25, refill_per_second: float = 1 / 10,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 8192, queue_size: int = 8192,
                 backlog_step: int = 512, max_senders: int = 4, pod_burst: Any = None) -> None:
        self.client = client
        self.dedupe_seconds, self.burst, self.refill = dedupe_seconds, burst, refill_per_second
        self._clock = clock
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str, str, str], float] = OrderedDict()
        self._buckets: dict[str, tuple[float, float]] = {}
        self.instance = os.environ.get("POD_NAME") or os.uname().nodename
        self.dropped = 0  # deduplicated or rate-limited
        self.queue_size, self.backlog_step, self.max_senders = queue_size, backlog_step, max_senders
        self.overflowed = 0  # dropped because the queue was full
        self._queue: deque[_Event] = deque()
        self._sending = 0
        self._wake = threading.Condition()
        self._senders: list[threading.Thread] = []
        self._closed = False
        self.pod_burst = pod_burst  # has settling() and max_hold (controller.burst.Held), or None

    def event(self, obj: dict[str, Any], etype: str, *, reason: str, message: str, component: str,
              wait: bool = False) -> bool:
        """Record one Event on `obj`; False if deduplicated, rate-limited or dropped (queue full).

        Queued for the sender unless `wait`; then sent now (False if it could not be)."""
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if not self._admit((uid, etype, reason, message), uid):
            return False
        namespace = meta.get("namespace", "default")
        item = _Event(
            namespace=namespace, name=f"{meta.get('name')}.{time.time_ns():x}",
            involved=(obj.get("apiVersion"), obj.get("kind"), meta.get("name"), meta.get("namespace"), meta.get("uid"),
                      meta.get("resourceVersion")),
            etype=etype, reason=reason, message=message, component=component,
            stamp=timestamp(datetime.now(timezone.utc)),
        )
        with self._wake:
            if not (wait or self._closed):  # closed: a reconcile that outlived stop() still sends its own
                if len(self._queue) >= self.queue_size:
                    self.overflowed += 1
                    if self.overflowed == 1 or self.overflowed % 1000 == 0:
                        log.warning("event queue full (%d): dropped %d event(s) so far", self.queue_size,
                                    self.overflowed)
                    return False
                self._queue.append(item)
                if len(self._queue) > self.backlog_step * len(self._senders) and len(self._senders) < self.max_senders:
                    sender = threading.Thread(target=self._run, name=f"event-sender-{len(self._senders)}", daemon=True)
                    self._senders.append(sender)
                    sender.start()
                self._wake.notify()
                return True
        return self._send(item)

    def pending(self) -> int:
        """Events queued or being sent."""
        with self._wake:
            return len(self._queue) + self._sending

    def close(self, timeout: float = 5.0) -> bool:
        """Send what is queued (up to `timeout` s), then stop; True if nothing was left behind."""
        with self._wake:
            self._closed = True
            self._wake.notify_all()
            senders = list(self._senders)
        deadline = time.monotonic() + timeout
        for sender in senders:
            sender.join(max(0.0, deadline - time.monotonic()))
        with self._wake:
            left = len(self._queue) + self._sending
            self._queue.clear()
        if left:
            log.warning("stopping with %d event(s) not recorded", left)
        return left == 0

    # ------------------------------------------------------------------ sending
    def _wait_out_burst(self) -> None:
        if self.pod_burst is None:
            return
        until = time.monotonic() + self.pod_burst.max_hold
        while not self._closed and self.pod_burst.settling() and time.monotonic() < until:
            time.sleep(0.05)

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            self._wait_out_burst()
            with self._wake:
                while not self._queue and not self._closed:
                    if self._senders.index(me) > 0:  # an extra sender: the backlog is gone
                        self._senders.remove(me)
                        return
                    self._wake.wait()
                if not self._queue:
                    return  # closed and flushed
                extra = self._senders.index(me)
                if extra and len(self._queue) < self.backlog_step * extra and not self._closed:
                    self._senders.remove(me)  # the backlog is back under this sender's step
                    return
                item = self._queue.popleft()
                self._sending += 1
            try:
                self._send(item)
            finally:
                with self._wake:
                    self._sending -= 1

    def _send(self, item: _Event) -> bool:
        api_version, kind, name, namespace, uid, resource_version = item.involved
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": item.name, "namespace": item.namespace},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace,
                               "uid": uid, "resourceVersion": resource_version},
            "reason": item.reason,
            "message": item.message,
            "type": item.etype,
            "source": {"component": item.component},
            "firstTimestamp": item.stamp,
            "lastTimestamp": item.stamp,
            "count": 1,
            "reportingComponent": item.component,
            "reportingInstance": self.instance,
        }
        try:
            self.client.create(EVENTS, item.namespace, body, answer=False)
        except errors.ApiError as exc:
            log.warning("could not record event %s on %s/%s: %s", item.reason, namespace, name, exc)
            return False
        return True

    def _admit(self, key: tuple[str, str, str, str], uid: str) -> bool:
        now = self._clock()
        with self._lock:
            seen = self._seen.get(key)
            if seen is not None and now - seen < self.dedupe_seconds:
                self.dropped += 1
                return False
            tokens, last = self._buckets.get(uid, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - last) * self.refill)
            if tokens < 1.0:
                self._buckets[uid] = (tokens, now)
                self.dropped += 1
                return False
            self._buckets[uid] = (tokens - 1.0, now)
            self._seen[key] = now
            self._seen.move_to_end(key)
            while len(self._seen) > self._max_keys:
                self._seen.popitem(last=False)
            if len(self._buckets) > self._max_keys:
                self._buckets.clear()
            return True
