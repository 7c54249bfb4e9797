"""List+watch caches: the controller reads these, never the API server, on the hot path.

One `Informer` per resource type (each job kind; pods, services and the MPI helpers
filtered by the `training.kubeflow.org/operator-name` label so only our children
arrive). It lists (paginated), then watches from the list's resourceVersion with
bookmarks and a server-side `timeoutSeconds` (plus a client read timeout, so a silent
connection is noticed), resumes from the last version it saw, and relists on 410 Gone,
emitting synthetic ADDED/MODIFIED/DELETED for whatever changed meanwhile. The cache
keeps plain dicts, passed through a `transform` first (client-go's SetTransform: the
manager trims and compacts them, foundation.jsondata), and an index (e.g. by owning
job) maintained on every change; handlers only enqueue keys. Cached objects are shared:
readers never mutate them.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from foundation.cluster import errors
from foundation.jsondata import Transform
from foundation.cluster.kube import Client, Resource, end_stream

log = logging.getLogger(__name__)

Handler = Callable[[str, "dict[str, Any] | None", "dict[str, Any] | None"], None]  # (type, old, new)
IndexFn = Callable[[dict[str, Any]], Iterable[str]]


def _rv_number(obj: dict[str, Any]) -> int:
    """resourceVersions are opaque, but etcd's are increasing integers; -1 if not one."""
    try:
        return int(obj["metadata"].get("resourceVersion", ""))
    except ValueError:
        return -1


def object_key(obj: dict[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


class Informer:
    def __init__(self, client: Client, resource: Resource, *, handler: Handler, namespace: str | None = None,
                 label_selector: str | None = None, index: IndexFn | None = None, watch_timeout: int = 300,
                 page_size: int = 500, transform: Transform | None = None,
                 on_relist: Callable[[float], None] | None = None) -> None:
        self.client, self.resource = client, resource
        self.namespace, self.label_selector = namespace, label_selector
        self.handler, self.index_fn = handler, index
        self.transform = transform
        self.on_relist = on_relist  # called after each (re)list with the monotonic time it began
        self.watch_timeout, self.page_size = watch_timeout, page_size
        self._lock = threading.RLock()
        self._items: dict[str, dict[str, Any]] = {}
        self._remembered: dict[str, int] = {}  # key -> resourceVersion of an object we wrote
        self._index: dict[str, set[str]] = {}
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._resp: Any = None
        self._rv: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"informer-{resource.plural}", daemon=True)
        self.relists = 0

    # ------------------------------------------------------------------ cache reads
    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(f"{namespace or ''}/{name}")

    def by_index(self, value: str) -> list[dict[str, Any]]:
        with self._lock:
            return [self._items[k] for k in sorted(self._index.get(value, ())) if k in self._items]

    def items(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._items.values())

    def remember(self, obj: dict[str, Any]) -> None:
        """Cache an object we just wrote, so the next pass does not act on the older copy.

        The watch delivers the same version shortly after; until then this saves a
        guaranteed 409 on the next status write."""
        obj = self._cacheable(obj)
        key = object_key(obj)
        with self._lock:
            self._store(key, obj)
            self._remembered[key] = _rv_number(obj)

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._resp is not None:
            end_stream(self._resp)
        self._thread.join(timeout)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                if self._rv is None:
                    self._relist()
                self._watch()
                failures = 0
            except errors.Expired:
                log.debug("%s: watch expired (410), relisting", self.resource.plural)
                self._rv = None
            except errors.ApiError as exc:
                if self._stop.is_set():
                    return
                failures += 1
                delay = min(0.1 * 2**failures, 5.0) * (0.5 + random.random())
                log.warning("%s: %s; retrying in %.1fs", self.resource.plural, exc, delay)
                if failures >= 5:
                    self._rv = None  # long outage: start over with a fresh list
                self._stop.wait(delay)

    def _relist(self) -> None:
        began = time.monotonic()
        fresh: dict[str, dict[str, Any]] = {}
        cont: str | None = None
        while True:
            page = self.client.list(self.resource, namespace=self.namespace, label_selector=self.label_selector,
                                    limit=self.page_size, cont=cont)
            for obj in page.get("items") or []:
                obj = self._cacheable(obj)
                fresh[object_key(obj)] = obj
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                rv = (page.get("metadata") or {}).get("resourceVersion")
                break
        with self._lock:
            old = self._items
            # a version we wrote and cached (remember) was never announced: if the watch broke
            # before delivering it, the relist below is the only chance to, though its
            # resourceVersion equals the cached one (a finished job's cleanup waits on it)
            unannounced, self._remembered = self._remembered, {}
            self._items = {}
            self._index = {}
            for key, obj in fresh.items():
                self._store(key, obj)
        self.relists += 1
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self._emit("ADDED", None, obj)
            elif prev["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion") or key in unannounced:
                self._emit("MODIFIED", prev, obj)
        for key, prev in old.items():
            if key not in fresh:
                self._emit("DELETED", prev, None)
        self._rv = rv
        self._synced.set()
        if self.on_relist is not None:
            self.on_relist(began)

    def _watch(self) -> None:
        timeout = int(self.watch_timeout * (1 + random.random()))
        events = self.client.watch(self.resource, namespace=self.namespace, label_selector=self.label_selector,
                                   resource_version=self._rv or "0", timeout_seconds=timeout, on_open=self._opened)
        try:
            for event in events:
                if self._stop.is_set():
                    return
                self._apply(event)
        finally:
            self._resp = None

    def _opened(self, resp: Any) -> None:
        self._resp = resp
        if self._stop.is_set():
            resp.close()

    def _apply(self, event: dict[str, Any]) -> None:
        etype, obj = event.get("type"), event.get("object") or {}
        if etype == "ERROR":
            code = int(obj.get("code", 0))
            if code == 410:
                raise errors.Expired("watch", self.resource.kind, self.namespace, None, obj.get("message", "gone"), code=410)
            raise errors.Retryable("watch", self.resource.kind, self.namespace, None, obj.get("message", str(obj)), code=code)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if etype == "BOOKMARK":
            self._rv = rv or self._rv
            return
        obj = self._cacheable(obj)
        key = object_key(obj)
        with self._lock:
            prev = self._items.get(key)
            mark = self._remembered.pop(key, None)
            if etype == "MODIFIED" and mark is not None and _rv_number(obj) < mark:
                self._remembered[key] = mark  # an older version than the one we wrote: keep ours
                self._rv = rv or self._rv
                return
            if etype == "DELETED":
                self._remove(key)
            else:
                self._store(key, obj)
        self._rv = rv or self._rv
        if etype == "DELETED":
            self._emit("DELETED", prev, None)
        else:
            self._emit("ADDED" if prev is None else "MODIFIED", prev, obj)

    def _cacheable(self, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return obj if self.transform is None else self.transform(obj)

    # ------------------------------------------------------------------ index upkeep
    def _store(self, key: str, obj: dict[str, Any]) -> None:
        self._remove(key)
        self._items[key] = obj
        if self.index_fn is not None:
            for value in self.index_fn(obj):
                self._index.setdefault(value, set()).add(key)

    def _remove(self, key: str) -> None:
        prev = self._items.pop(key, None)
        if prev is not None and self.index_fn is not None:
            for value in self.index_fn(prev):
                keys = self._index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._index[value]

    def _emit(self, etype: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        try:
            self.handler(etype, old, new)
        except (KeyError, TypeError, ValueError, AttributeError):
            log.exception("%s: handler failed on %s", self.resource.plural, etype)
