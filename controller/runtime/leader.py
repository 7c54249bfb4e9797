"""Leader election on a `coordination.k8s.io/v1` Lease, with client-go's semantics.

Two replicas run; only the one holding the Lease starts informers and workers, the other
waits. The rules are client-go's `leaderelection` package so the Lease reads the same in
`kubectl get lease -o yaml` and behaves the same under failure:

- A candidate takes the Lease when it is absent, released (empty `holderIdentity`) or
  expired. Expiry is judged by the *local* time at which this process last saw the
  record change, plus `leaseDurationSeconds`, never by comparing clocks with the holder.
- The holder renews every `retry_period`; if it has not renewed for `renew_deadline`
  (a watchdog thread counts, so a hung request cannot stretch it) or sees someone else
  holding the Lease, it has lost, and `on_lost` runs: the process must stop acting at
  once (the CLI exits 1, as client-go's OnStoppedLeading).
  `renew_deadline < lease_duration` is what keeps an old leader from overlapping a new
  one: it gives up before any standby may take over.
- On graceful shutdown the holder releases (ReleaseOnCancel): `holderIdentity` empty and
  `leaseDurationSeconds: 1`, so a standby takes over on its next retry, not after expiry.

Requests are get, create and update on leases, nothing else (the ClusterRole grants
exactly those). Errors other than our own hierarchy's are bugs and propagate.
"""

from __future__ import annotations

import logging
import math
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource

log = logging.getLogger(__name__)

LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
JITTER = 1.2  # client-go's JitterFactor for the acquire loop


def default_identity() -> str:
    """`<pod or host name>_<uuid>` as controller-runtime does: unique per process, so a
    restarted container never mistakes its predecessor's Lease for its own."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


def micro_time(when: datetime) -> str:
    """A Lease MicroTime: RFC 3339 with microseconds, UTC."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderConfig:
    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if self.lease_duration < 1:
            raise ValueError("leader election lease duration must be at least 1s (leaseDurationSeconds is whole seconds)")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leader election lease duration must be greater than the renew deadline")
        if self.renew_deadline <= JITTER * self.retry_period:
            raise ValueError(f"leader election renew deadline must be greater than {JITTER} x the retry period")
        if self.retry_period <= 0:
            raise ValueError("leader election retry period must be positive")

    @property
    def lease_seconds(self) -> int:
        return max(1, math.floor(self.lease_duration))


class LeaderElector:
    """Run with `start()`; `wait_leading()` blocks until this process holds the Lease.

    `stop(release=True)` ends the loop and releases a held Lease; call it after the
    workers have finished, so the next leader never overlaps an in-flight reconcile.
    """

    def __init__(self, client: Client, config: LeaderConfig, *, on_lost: Callable[[], None],
                 on_change: Callable[[bool], None] | None = None, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(timezone.utc)) -> None:
        # the Lease gets its own request timeout: a hung renew must not outlive the deadline
        self.client = Client(client.connection, timeout=config.renew_deadline)
        self.client.observer = client.observer
        self.config, self.on_lost, self.on_change = config, on_lost, on_change
        self._clock, self._wall = clock, wall
        self._stop = threading.Event()
        self._leading = threading.Event()
        self._done = threading.Event()
        self._lose_lock = threading.Lock()
        self._lease: dict[str, Any] | None = None  # the last Lease object read or written
        self._observed: tuple[Any, ...] | None = None  # the record as last seen
        self._observed_at = 0.0
        self.renewed_at = 0.0  # monotonic time of our last successful create/update
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)

    # ------------------------------------------------------------------ public
    @property
    def identity(self) -> str:
        return self.config.identity

    @property
    def is_leader(self) -> bool:
        return self._leading.is_set()

    def start(self) -> None:
        log.info("leader election: %s waiting for lease %s/%s", self.identity, self.config.namespace, self.config.name)
        self._thread.start()

    def wait_leading(self, stop: threading.Event, poll: float = 0.1) -> bool:
        """Block until leading (True) or until `stop` is set or the loop ended (False)."""
        while not stop.is_set() and not self._done.is_set():
            if self._leading.wait(poll):
                return True
        return self._leading.is_set()

    def stop(self, *, release: bool = True, timeout: float = 5.0) -> None:
        self._stop.set()
        if threading.current_thread() is not self._thread and self._thread.is_alive():
            self._thread.join(timeout)
        if release and self._leading.is_set():
            self._release()

    def healthy(self, tolerance: float = 20.0) -> bool:
        """client-go's HealthzAdaptor: a leader that has not renewed for a lease duration
        plus `tolerance` is stuck (its loop would have given up), so liveness fails."""
        if not self._leading.is_set():
            return True
        return self._clock() - self.renewed_at <= self.config.lease_duration + tolerance

    # ------------------------------------------------------------------ loop
    def _run(self) -> None:
        try:
            if self._acquire():
                self._renew()
        finally:
            self._done.set()

    def _acquire(self) -> bool:
        while not self._stop.is_set():
            if self._try_acquire_or_renew():
                self._leading.set()
                log.info("leader election: %s became leader of %s/%s", self.identity, self.config.namespace, self.config.name)
                self._changed(True)
                return True
            self._stop.wait(self.config.retry_period * (1 + random.random() * JITTER))
        return False

    def _renew(self) -> None:
        threading.Thread(target=self._watch_deadline, name="leader-deadline", daemon=True).start()
        while not self._stop.wait(self.config.retry_period) and self._leading.is_set():
            # no attempt may outlive the deadline (client-go bounds it with a context)
            self.client.timeout = max(0.05, self.config.renew_deadline - (self._clock() - self.renewed_at))
            if not self._try_acquire_or_renew() and self._lost_to_other():
                self._lose()
                return

    def _watch_deadline(self) -> None:
        """Give up once the deadline passes, even while a renew request hangs."""
        while self._leading.is_set() and not self._stop.wait(self.config.retry_period / 2):
            if self._clock() - self.renewed_at >= self.config.renew_deadline:
                self._lose()
                return

    def _lose(self) -> None:
        with self._lose_lock:
            if self._stop.is_set() or not self._leading.is_set():
                return  # shutting down anyway (release will tell), or already reported
            self._leading.clear()
        log.error("leader election: %s lost lease %s/%s (holder now %r)", self.identity,
                  self.config.namespace, self.config.name, self._holder() or "unknown")
        self._changed(False)
        self.on_lost()

    def _changed(self, leading: bool) -> None:
        if self.on_change is not None:
            self.on_change(leading)

    # ------------------------------------------------------------------ one attempt
    def _try_acquire_or_renew(self) -> bool:
        cfg, now, wall = self.config, self._clock(), micro_time(self._wall())
        try:
            lease = self.client.get(LEASES, cfg.namespace, cfg.name)
        except errors.NotFound:
            return self._create(wall, now)
        except errors.ApiError as exc:
            log.warning("leader election: failed to get lease %s/%s: %s", cfg.namespace, cfg.name, exc.reason)
            return False
        self._observe(lease, now)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        mine = holder == self.identity
        if holder and not mine and self._observed_at + int(spec.get("leaseDurationSeconds") or 0) > now:
            return False  # held by someone else and not expired
        transitions = int(spec.get("leaseTransitions") or 0)
        return self._update({**lease, "spec": {  # a new dict: what we observed stays as it was
            "holderIdentity": self.identity,
            "leaseDurationSeconds": cfg.lease_seconds,
            "acquireTime": spec.get("acquireTime") if mine and spec.get("acquireTime") else wall,
            "renewTime": wall,
            "leaseTransitions": transitions if mine else transitions + 1,
        }}, now)

    def _create(self, wall: str, now: float) -> bool:
        cfg = self.config
        body = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": cfg.name, "namespace": cfg.namespace},
            "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": cfg.lease_seconds,
                     "acquireTime": wall, "renewTime": wall, "leaseTransitions": 0},
        }
        try:
            created = self.client.create(LEASES, cfg.namespace, body)
        except errors.ApiError as exc:  # AlreadyExists: another candidate was first
            log.info("leader election: failed to create lease %s/%s: %s", cfg.namespace, cfg.name, exc.reason)
            return False
        self._observe(created, now)
        self.renewed_at = now
        return True

    def _update(self, lease: dict[str, Any], now: float) -> bool:
        try:
            written = self.client.update(LEASES, lease)
        except errors.ApiError as exc:  # Conflict: someone else wrote it first
            log.info("leader election: failed to update lease %s/%s: %s", self.config.namespace, self.config.name, exc.reason)
            return False
        self._observe(written, now)
        self.renewed_at = now
        return True

    def _observe(self, lease: dict[str, Any], now: float) -> None:
        self._lease = lease
        spec = lease.get("spec") or {}
        record = tuple(spec.get(k) for k in ("holderIdentity", "leaseDurationSeconds", "acquireTime", "renewTime",
                                              "leaseTransitions"))
        if record != self._observed:
            self._observed, self._observed_at = record, now

    def _holder(self) -> str:
        return ((self._lease or {}).get("spec") or {}).get("holderIdentity") or ""

    def _lost_to_other(self) -> bool:
        holder = self._holder()
        return bool(holder) and holder != self.identity

    def _release(self) -> None:
        """Give the Lease up now (client-go ReleaseOnCancel) so a standby need not wait."""
        lease = self._lease
        if lease is None or self._holder() != self.identity:
            return
        wall = micro_time(self._wall())
        self.client.timeout = self.config.renew_deadline
        spec = lease.get("spec") or {}
        released = {**lease, "spec": {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": wall,
                                      "renewTime": wall, "leaseTransitions": int(spec.get("leaseTransitions") or 0)}}
        try:
            self.client.update(LEASES, released)
        except errors.ApiError as exc:
            log.warning("leader election: failed to release lease %s/%s: %s", self.config.namespace, self.config.name,
                        exc.reason)
            return
        self._leading.clear()
        self._changed(False)
        log.info("leader election: %s released lease %s/%s", self.identity, self.config.namespace, self.config.name)
