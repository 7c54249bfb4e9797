"""The progress endpoint's parts for one Manager: its caches, the store, the CA publisher.

The Manager builds this when progress is on (`--progress-bind-address`) and the process
serves `endpoint` over HTTPS on every replica (controller.progress.server); only the leader's
caches are synced, so only the leader answers with anything but 503. The CA publisher is a
thread of its own: a job in a namespace not seen before queues that namespace, and the
thread writes the CA ConfigMap there (controller.progress.certs), retrying a failure a few
seconds later, so a reconcile never waits on it.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.jobs.kinds import job_resource
from controller.progress.auth import Authenticator
from controller.progress.certs import publish_ca
from controller.progress.server import Endpoint, JobKind
from controller.progress.store import INTERVAL, ProgressStore
from foundation.cluster import errors
from foundation.progress.endpoint import AUDIENCE

if TYPE_CHECKING:
    from controller.manager import Manager

log = logging.getLogger(__name__)

PUBLISH_RETRY = 5.0


@dataclass(frozen=True)
class ProgressOptions:
    interval: float = INTERVAL
    audience: str = AUDIENCE
    ca_pem: bytes | None = None  # published into each job namespace's CA ConfigMap; None: not published


class Progress:
    def __init__(self, manager: Manager, options: ProgressOptions) -> None:
        self.options = options
        metrics = manager.metrics
        self.store = ProgressStore(manager.client, interval=options.interval, on_write=metrics.progress_write)
        self.auth = Authenticator(manager.client, audience=options.audience)
        kinds = {k.facts.plural: JobKind(job_resource(k), manager.job_informers[k.name]) for k in manager.kinds.values()}
        self.endpoint = Endpoint(kinds=kinds, pods=manager.pod_informer, auth=self.auth, store=self.store,
                                 ready=manager.ready, count=metrics.progress_report)
        self.client = manager.client
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._todo: queue.Queue[str | None] = queue.Queue()
        self._publisher = threading.Thread(target=self._publish_loop, name="progress-ca", daemon=True)
        self._started = False

    def saw_namespace(self, namespace: str) -> None:
        """A job lives in `namespace`: make sure its pods can read the CA (once per process)."""
        if self.options.ca_pem is None or not namespace:
            return
        with self._lock:
            if namespace in self._seen:
                return
            self._seen.add(namespace)
        self._todo.put(namespace)

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.store.start()
        self._publisher.start()

    def stop(self) -> None:
        if not self._started:
            return
        self._todo.put(None)
        self.store.stop(flush=True)  # SIGTERM: what was accepted is written before the Lease goes

    def _publish_loop(self, sleep: Callable[[float], None] = time.sleep) -> None:
        assert self.options.ca_pem is not None
        while True:
            namespace = self._todo.get()
            if namespace is None:
                return
            try:
                publish_ca(self.client, namespace, self.options.ca_pem)
            except errors.NotFound:
                continue  # the namespace went away
            except errors.ApiError as exc:
                log.warning("could not publish the progress CA in %s (%s); trying again", namespace, exc)
                sleep(PUBLISH_RETRY)
                self._todo.put(namespace)
