"""Kubernetes Events on the job (what `kubectl describe` shows), deduplicated and rate-limited.

Upstream records an Event for every pod/service created or deleted, every restart and
every terminal transition, and its status rules re-emit some on each pass (client-go's
correlator folds those). We keep the same reasons and messages but drop an identical
(object, type, reason, message) seen in the last `dedupe_seconds`, and cap each object
with a token bucket, so a hot loop can never flood etcd. Failing to record an Event is
logged, never fatal.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from controller import errors
from controller.conditions import timestamp
from controller.kube import EVENTS, Client

log = logging.getLogger(__name__)


class EventRecorder:
    def __init__(self, client: Client, *, dedupe_seconds: float = 600.0, burst: int = 25, refill_per_second: float = 1 / 10,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 8192) -> None:
        self.client = client
        self.dedupe_seconds, self.burst, self.refill = dedupe_seconds, burst, refill_per_second
        self._clock = clock
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._seen: OrderedDict[tuple[str, str, str, str], float] = OrderedDict()
        self._buckets: dict[str, tuple[float, float]] = {}
        self.instance = os.environ.get("POD_NAME") or os.uname().nodename
        self.dropped = 0

    def event(self, obj: dict[str, Any], etype: str, *, reason: str, message: str, component: str) -> bool:
        """Record one Event on `obj`; returns False if it was deduplicated or rate-limited."""
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        if not self._admit((uid, etype, reason, message), uid):
            return False
        now = datetime.now(timezone.utc)
        stamp = timestamp(now)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta.get('name')}.{time.time_ns():x}", "namespace": meta.get("namespace", "default")},
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": etype,
            "source": {"component": component},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": self.instance,
        }
        try:
            self.client.create(EVENTS, meta.get("namespace", "default"), body)
        except errors.ApiError as exc:
            log.warning("could not record event %s on %s/%s: %s", reason, meta.get("namespace"), meta.get("name"), exc)
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
