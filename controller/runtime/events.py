"""Kubernetes Events on the job (what `kubectl describe` shows): every distinct one recorded,
repeats and bursts folded into counts, sent off the reconcile thread.

Upstream records an Event for every pod/service created or deleted, every restart and every
terminal transition through client-go's recorder: an EventCorrelator (an identical Event
within 10 min PATCHes count/lastTimestamp; past 10 similar messages on an object, type and
reason, one "(combined from similar events)" Event; a spam filter of 25 per object then one
per 5 min) in front of a 1,000-event channel that drops what does not fit. A thousand 8-pod
PyTorchJobs applied at once (`make bench-scale`) overflow it, and so did an earlier queue of
ours that dropped when full: most pod-create Events were lost (bench/README.md, "Figures
the controller's code cites"). A lost Event is a `kubectl describe` that shows nothing.

So the queue holds writes, not events: an ordered map from an Event's key to a `Pending`
write, and `controller.runtime.event_correlator` decides which key an event joins (its own; an
identical Event written or pending: the count grows; its object's combined Event). An
event never waits for a request of its own when one is already due for its key: it folds
into it (count + 1, lastTimestamp, and for a combined Event its message is listed). When
`fold_at` writes (128) are pending, i.e. the senders are behind, a new event joins its
object's combined Event instead of adding a write: a burst costs one write per (job, type,
reason) while it lasts, not one per event, and the counts stay right (fewer Event writes per
job than upstream's recorder, and every distinct Event recorded: `make bench-scale`,
bench/README.md). A sender takes the
oldest pending write and POSTs it (a new Event, the caller's message unchanged unless
combined) or PATCHes the Event its key wrote (count, lastTimestamp, message); one key is
never in flight twice, so a repeat PATCHes instead of racing a second POST. Memory is
bounded: at most `queue_size` (8,192) pending writes of at most ~1 KB of messages each
(~10 MB worst case; an 8-pod job's ~4 writes take ~2 KB), LRU caches of 4,096 (written
Events, similar messages, token buckets), as client-go's. With the queue full of distinct
keys (8,192 objects x reasons behind at once: a burst of more than ~4,000 jobs) `event`
waits up to `full_wait` s for a slot (back-pressure on the reconcile; the senders send
meanwhile, even during a pod burst) before it drops and counts `overflowed`: only a server
that does not answer gets there. PATCH needs `patch` on events, which upstream's ClusterRole grants
and so does controller/install/clusterrole.yaml (tests/controller/test_install_rbac.py shows the
restart path needs it). With `patch=False` (an install that grants only `create`) a repeat
after its Event was written is a new Event carrying the repeats' count (same number of
requests, the counts still sum right, `kubectl describe` shows two lines). An Event the
server refuses to PATCH is written the same way, once said in the log.

A growing backlog gets another sender per `backlog_step` pending, up to `max_senders`, each
leaving once the backlog is back under its step. `close` flushes what is pending. With
`pod_burst` (train-controller --pods-first, controller.runtime.burst) the senders also wait while
pods are being created (what they hold folds meanwhile), up to its `max_hold` at a time.
`wait=True` sends on the caller's thread, for an Event that must land before what the caller
writes next. Failing to record an Event is logged, never fatal.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Optional

from foundation.cluster import errors
from controller.runtime.event_correlator import (
    Correlator,
    Key,
    Pending,
    Sent,
    add_message,
    combined_message,
)
from foundation.cluster.kube import EVENTS, Client, timestamp

log = logging.getLogger(__name__)


class EventRecorder:
    def __init__(self, client: Client, *, dedupe_seconds: float = 600.0, burst: int = 25, refill_per_second: float = 1 / 10,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 4096, queue_size: int = 8192,
                 fold_at: int = 128, similar: int = 10, full_wait: float = 5.0,
                 backlog_step: int = 512, max_senders: int = 4, pod_burst: Any = None,
                 patch: bool = True) -> None:
        self.client = client
        self.correlator = Correlator(window=dedupe_seconds, similar=similar, burst=burst, refill=refill_per_second,
                                     cache_size=max_keys, clock=clock)
        self.instance = os.environ.get("POD_NAME") or os.uname().nodename
        # folding starts before the queue is full, so the slots left take new objects' combined Events
        self.queue_size, self.fold_at, self.full_wait = queue_size, min(fold_at, queue_size // 2), full_wait
        self.backlog_step, self.max_senders = backlog_step, max_senders
        self.folded = 0  # events that joined a write already due (no request of their own)
        self.overflowed = 0  # dropped: the queue stayed full for `full_wait` s
        self._blocked = 0  # callers of `event` waiting for a slot: the senders then never wait out a pod burst
        self.patch_refused = not patch  # True: never PATCH, write a repeat as a new Event
        self._queue: OrderedDict[Key, Pending] = OrderedDict()
        self._inflight: set[Key] = set()
        self._wake = threading.Condition()
        self._senders: list[threading.Thread] = []
        self._closed = False
        self.pod_burst = pod_burst  # has settling() and max_hold (controller.runtime.burst.Held), or None

    def event(self, obj: dict[str, Any], etype: str, *, reason: str, message: str, component: str,
              wait: bool = False, together: bool = False) -> bool:
        """Record one Event on `obj`; False only if it was dropped (queue full too long) or,
        with `wait`, could not be sent.

        Queued for the sender (or folded into a write already queued) unless `wait`; then sent now.
        `together`: the caller saw this event with others of its reason at once (one pass's pod
        exits), so a new message joins the object's combined Event as under pressure; an identical
        repeat still folds into its own Event."""
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        stamp = timestamp(datetime.now(timezone.utc))
        involved = (obj.get("apiVersion"), obj.get("kind"), meta.get("name"), meta.get("namespace"), meta.get("uid"),
                    meta.get("resourceVersion"))
        namespace = meta.get("namespace", "default")
        with self._wake:
            deadline = None
            while True:
                key = self.correlator.route(uid, etype, reason, message, self._due,
                                            pressure=together or len(self._queue) >= self.fold_at)
                item = self._queue.get(key)
                if item is not None or wait or self._closed or len(self._queue) < self.queue_size:
                    break
                deadline = deadline or time.monotonic() + self.full_wait
                if time.monotonic() >= deadline:
                    self.overflowed += 1
                    if self.overflowed == 1 or self.overflowed % 1000 == 0:
                        log.warning("event queue full (%d writes) for %.0f s: dropped %d event(s) so far",
                                    self.queue_size, self.full_wait, self.overflowed)
                    return False
                self._blocked += 1
                try:
                    self._wake.wait(0.05)
                finally:
                    self._blocked -= 1
            if item is not None:
                self.folded += 1
                item.fold(message, stamp)
                if not wait or key in self._inflight:
                    return True
                del self._queue[key]  # this caller sends it, this event with it
            else:
                item = Pending(key, namespace, involved, component, stamp)
                item.fold(message, stamp)
                if not (wait or self._closed) or (key in self._inflight and not self._closed):
                    self._queue[key] = item
                    self._start_sender()
                    self._wake.notify()
                    return True
            self._inflight.add(key)
        try:
            return self._send(item)
        finally:
            with self._wake:
                self._inflight.discard(key)
                self._wake.notify_all()

    def _due(self, key: Key) -> bool:
        return key in self._queue or key in self._inflight

    def pending(self) -> int:
        """Writes queued or being sent."""
        with self._wake:
            return len(self._queue) + len(self._inflight)

    def sizes(self) -> dict[str, int]:
        """How many entries each bounded structure holds (pending writes and the correlator's caches)."""
        with self._wake:
            return {"pending": len(self._queue), **self.correlator.sizes()}

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
            left = len(self._queue) + len(self._inflight)
            self._queue.clear()
        if left:
            log.warning("stopping with %d event write(s) not sent", left)
        return left == 0

    # ------------------------------------------------------------------ sending
    def _start_sender(self) -> None:
        if len(self._queue) > self.backlog_step * len(self._senders) and len(self._senders) < self.max_senders:
            sender = threading.Thread(target=self._run, name=f"event-sender-{len(self._senders)}", daemon=True)
            self._senders.append(sender)
            sender.start()

    def _wait_out_burst(self) -> None:
        """Let a pod burst finish first, unless someone waits for a slot in a full queue.

        Why the exception: the burst's held Service creates record Events too, and the burst is
        "settling" until they are sent. With the queue full (5,000 8-pod jobs applied at once are
        10,000 pod/Service-create keys, more than its 8,192 slots) they wait for a slot while the
        senders waited for them: one write per `max_hold`, every caller dropping after `full_wait`,
        the controller idle with jobs never given a status (`make bench-curve`, bench/README.md).
        A full queue is back-pressure, so it is sent at once."""
        if self.pod_burst is None:
            return
        until = time.monotonic() + self.pod_burst.max_hold
        while (not self._closed and not self._blocked and self.pod_burst.settling()
               and time.monotonic() < until):
            time.sleep(0.05)

    def _next(self) -> Optional[Pending]:
        """The oldest pending write whose key is not in flight (popped), or None."""
        for key in self._queue:
            if key not in self._inflight:
                self._inflight.add(key)
                return self._queue.pop(key)
        return None

    def _run(self) -> None:
        me = threading.current_thread()
        while True:
            self._wait_out_burst()
            with self._wake:
                while True:
                    item = self._next()
                    if item is not None:
                        break
                    if not self._queue and self._closed:
                        return  # closed and flushed
                    if not self._queue and self._senders.index(me) > 0:  # an extra sender: the backlog is gone
                        self._senders.remove(me)
                        return
                    self._wake.wait(0.5)
                extra = self._senders.index(me)
                if extra and len(self._queue) < self.backlog_step * extra and not self._closed:
                    self._senders.remove(me)  # the backlog is back under this sender's step
                    self._queue[item.key] = item  # put back, first in line
                    self._queue.move_to_end(item.key, last=False)
                    self._inflight.discard(item.key)
                    return
            try:
                self._send(item)
            finally:
                with self._wake:
                    self._inflight.discard(item.key)
                    self._wake.notify_all()

    def _send(self, item: Pending) -> bool:
        """PATCH the Event `item`'s key wrote in the window, else POST a new one."""
        with self._wake:
            before = self.correlator.written(item.key)
        if before is not None and not self.patch_refused:
            combined = item.key[3] is None
            if combined:  # the Event's messages and the new ones
                holder = _Messages(list(before.messages), before.more)
                for message in item.messages:
                    add_message(holder, message)
                holder.more += item.more
            count = before.count + item.count
            patch: dict[str, Any] = {"count": count, "lastTimestamp": item.last}
            if combined:
                patch["message"] = combined_message(holder.messages, holder.more)
            try:
                self.client.patch(EVENTS, before.namespace, before.name, patch,
                                  content_type="application/strategic-merge-patch+json")
            except errors.ApiError as exc:
                if isinstance(exc, errors.Forbidden):
                    if not self.patch_refused:
                        log.warning("the API server refused to PATCH an Event (%s): repeats are written as new "
                                    "Events with their count; grant 'patch' on events to fold them", exc)
                    self.patch_refused = True
                log.debug("could not patch event %s: %s; writing a new one", before.name, exc)
            else:
                with self._wake:
                    self.correlator.record(item.key, before._replace(
                        count=count, messages=tuple(holder.messages) if combined else before.messages,
                        more=holder.more if combined else before.more, at=self.correlator._clock()))  # noqa: SLF001
                return True
        return self._post(item)

    def _post(self, item: Pending) -> bool:
        api_version, kind, name, namespace, uid, resource_version = item.involved
        combined = item.key[3] is None
        message = combined_message(item.messages, item.more) if combined else str(item.key[3])
        event_name = f"{name}.{time.time_ns():x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": item.namespace},
            "involvedObject": {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace,
                               "uid": uid, "resourceVersion": resource_version},
            "reason": item.key[2],
            "message": message,
            "type": item.key[1],
            "source": {"component": item.component},
            "firstTimestamp": item.first,
            "lastTimestamp": item.last,
            "count": item.count,
            "reportingComponent": item.component,
            "reportingInstance": self.instance,
        }
        try:
            self.client.create(EVENTS, item.namespace, body, answer=False)
        except errors.ApiError as exc:
            log.warning("could not record event %s on %s/%s: %s", item.key[2], namespace, name, exc)
            return False
        with self._wake:
            self.correlator.record(item.key, Sent(event_name, item.namespace, item.count, item.first,
                                                  tuple(item.messages), item.more, self.correlator._clock()))  # noqa: SLF001
        return True


class _Messages:
    """A combined Event's messages being merged (what `add_message` appends to)."""

    def __init__(self, messages: list[str], more: int) -> None:
        self.messages, self.more = messages, more
