"""The one API client: raw JSON dicts in and out, our errors, every request counted.

Why not the generated model classes and their ApiClient: turning a relist of thousands of
pods into them is ~9x slower than parsing the JSON (controller-design.md), the controller
only needs dicts, and the generated request path changes signature between releases
(`ApiClient.update_params_for_auth` did in kubernetes 37, and the controller could not
start). So the `kubernetes` package only reads the kubeconfig or in-cluster config, and
`foundation.cluster.connection` sends the requests with urllib3 (TLS, proxy, credentials and their
renewal on a 401). `counts` tallies requests by (verb, group/resource) so tests can assert
"a settled job makes zero writes" and the install ClusterRole can be compared with what
the controller really uses; `observer` (set by `controller.runtime.metrics`) sees every request's
verb, resource, code and latency.

Why the hot path looks as it does (bench/README.md, "what the controller spends"): on a
burst of pod creates the controller shares the machine's CPU with the API server, and
JSON was its largest cost, so bodies and answers go through orjson (same values, parsed and
encoded faster than by the standard library: bench/README.md); a create whose answer nobody reads (`answer=False`: the
pass's pods and Services, Events) is checked for its status and not parsed; and requests
go straight to the one connection pool of the API server instead of through the
PoolManager, which parses the URL and looks the pool up again on every request.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

import orjson
import urllib3

from foundation.cluster import errors, kubelib
from foundation.cluster.connection import Connection
from foundation.cluster.resource import (  # the descriptors, also kube.* to callers
    CONFIGMAPS,
    EVENTS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
    Resource,
)


def timestamp(now: datetime) -> str:
    """metav1.Time's JSON form: RFC 3339, UTC, whole seconds."""
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})




class Client:
    """Thread-safe raw-JSON access to one API server through one shared `Connection`."""

    def __init__(self, connection: Connection, *, timeout: float = 30.0) -> None:
        self.connection = connection
        self.timeout = timeout
        self.counts: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        # metrics hook: (verb, group/resource[/sub], HTTP code or "<error>", seconds to headers)
        self.observer: Callable[[str, str, str, float], None] | None = None

    @classmethod
    def connect(cls, kubeconfig: str | None = None, *, context: str | None = None, pool_size: int = 16) -> Client:
        """From a kubeconfig file, else in-cluster config, else ~/.kube/config."""
        return cls(Connection(config_loader(kubeconfig, context), pool_size=pool_size))

    def close(self) -> None:
        self.connection.close()

    def writes(self) -> int:
        with self._lock:
            return sum(n for (verb, _), n in self.counts.items() if verb in WRITE_VERBS)

    def snapshot(self) -> Counter[tuple[str, str]]:
        with self._lock:
            return Counter(self.counts)

    # ------------------------------------------------------------------ raw request
    def _send(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        res: Resource,
        sub: str | None = None,
        name: str | None = None,
        namespace: str | None = None,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: Any = None,
    ) -> Any:
        with self._lock:
            self.counts[(verb, res.audit_name(sub))] += 1
        params = {k: v for k, v in (query or {}).items() if v is not None}
        if params and method in ("GET", "DELETE"):
            path += "?" + urlencode(params)
        headers = {"Accept": "application/json", "Content-Type": content_type}
        payload = orjson.dumps(body) if body is not None else None
        timeout = timeout or urllib3.Timeout(connect=10.0, read=self.timeout)
        started = time.monotonic()
        try:
            auth = self.connection.auth()
            resp = self.connection.urlopen(method, path, body=payload, headers={**headers, **auth}, timeout=timeout)
            if resp.status == 401 and self.connection.renew(auth):  # stale credentials: once more with fresh ones
                resp.drain_conn()
                resp.release_conn()
                resp = self.connection.urlopen(method, path, body=payload, headers={**headers, **self.connection.auth()},
                                               timeout=timeout)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            self._observe(verb, res, sub, "<error>", started)
            raise errors.Retryable(verb, res.kind, namespace, name, str(exc)) from exc
        self._observe(verb, res, sub, str(resp.status), started)
        return resp

    def _observe(self, verb: str, res: Resource, sub: str | None, code: str, started: float) -> None:
        if self.observer is not None:
            self.observer(verb, res.audit_name(sub), code, time.monotonic() - started)

    def _json(self, resp: Any, verb: str, res: Resource, namespace: str | None, name: str | None, *,
              answer: bool = True) -> Any:
        """The answer's JSON (an error for a non-2xx); `answer=False` reads it without parsing."""
        try:
            data = resp.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise errors.Retryable(verb, res.kind, namespace, name, str(exc)) from exc
        finally:
            resp.release_conn()
        if not 200 <= resp.status < 300:
            raise error_for(resp.status, data, verb=verb, kind=res.kind, namespace=namespace, name=name)
        return orjson.loads(data) if data and answer else None

    def call(self, method: str, res: Resource, *, verb: str, namespace: str | None = None, name: str | None = None,
             sub: str | None = None, query: dict[str, Any] | None = None, body: Any = None,
             content_type: str = "application/json") -> Any:
        path = res.path(namespace, name, sub)
        resp = self._send(method, path, verb=verb, res=res, sub=sub, name=name, namespace=namespace,
                          query=query, body=body, content_type=content_type)
        return self._json(resp, verb, res, namespace, name)

    # ------------------------------------------------------------------ verbs
    def list(self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None,
             limit: int | None = None, cont: str | None = None) -> dict[str, Any]:
        query = {"labelSelector": label_selector, "limit": limit, "continue": cont}
        return self.call("GET", res, verb="list", namespace=namespace, query=query)

    def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any]:
        return self.call("GET", res, verb="get", namespace=namespace, name=name)

    def create(self, res: Resource, namespace: str | None, body: dict[str, Any], *,
               answer: bool = True) -> Any:
        """POST `body`; the created object, or None with `answer=False` (not parsed: the
        pass's children and Events, whose answers the watch brings anyway)."""
        name = (body.get("metadata") or {}).get("name")
        resp = self._send("POST", res.path(namespace), verb="create", res=res, name=name, namespace=namespace, body=body)
        return self._json(resp, "create", res, namespace, name, answer=answer)

    def update(self, res: Resource, body: dict[str, Any], *, sub: str | None = None) -> dict[str, Any]:
        meta = body["metadata"]
        return self.call("PUT", res, verb="update", namespace=meta.get("namespace"), name=meta["name"], sub=sub, body=body)

    def patch(self, res: Resource, namespace: str | None, name: str, patch: Any, *, sub: str | None = None,
              content_type: str = "application/merge-patch+json") -> dict[str, Any]:
        return self.call("PATCH", res, verb="patch", namespace=namespace, name=name, sub=sub, body=patch,
                         content_type=content_type)

    def delete(self, res: Resource, namespace: str | None, name: str, *, uid: str | None = None,
               propagation: str | None = None) -> None:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        if propagation:
            body["propagationPolicy"] = propagation
        self.call("DELETE", res, verb="delete", namespace=namespace, name=name, body=body)

    def watch(self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None,
              resource_version: str, timeout_seconds: int, on_open: Any = None) -> Iterator[dict[str, Any]]:
        """Yield watch events until the server closes the stream (timeoutSeconds) or it breaks."""
        query = {
            "watch": "true", "allowWatchBookmarks": "true", "resourceVersion": resource_version,
            "timeoutSeconds": timeout_seconds, "labelSelector": label_selector,
        }
        resp = self._send("GET", res.path(namespace), verb="watch", res=res, namespace=namespace, query=query,
                          timeout=urllib3.Timeout(connect=10.0, read=timeout_seconds + 30))
        if not 200 <= resp.status < 300:
            self._json(resp, "watch", res, namespace, None)
        if on_open is not None:
            on_open(resp)
        try:
            rest = b""
            for chunk in resp.stream(64 * 1024, decode_content=True):
                *lines, rest = (rest + chunk).split(b"\n")  # one pass per chunk, however many events
                for line in lines:
                    if line.strip():
                        yield orjson.loads(line)
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            raise errors.Retryable("watch", res.kind, namespace, None, str(exc)) from exc
        finally:
            resp.release_conn()


def end_stream(resp: Any) -> None:
    """Cut a streaming answer (a watch) short from another thread, so its reader wakes with an
    error now instead of at the stream's timeout; nothing if it is already closed."""
    try:
        resp.shutdown()  # urllib3 >= 2.3 (pyproject's floor: close() would not wake the reader)
    except OSError:
        pass


def error_for(code: int, data: bytes | str | None, *, verb: str, kind: str, namespace: str | None,
              name: str | None) -> errors.ApiError:
    """Map an API answer to our hierarchy, keeping the server's own message."""
    reason, message = "", ""
    try:
        status = orjson.loads(data or b"{}")
        reason, message = status.get("reason", ""), status.get("message", "")
    except (ValueError, AttributeError):
        message = (data.decode(errors="replace") if isinstance(data, bytes) else str(data or ""))[:300]
    text = message or reason or f"HTTP {code}"
    cls: type[errors.ApiError]
    if code == 404:
        cls = errors.NotFound
    elif code == 409:
        cls = errors.AlreadyExists if reason == "AlreadyExists" else errors.Conflict
    elif code in (400, 422):
        cls = errors.Invalid
    elif code == 403:
        cls = errors.Forbidden
    elif code == 410:
        cls = errors.Expired
    elif code == 429 or code >= 500 or code == 0:
        cls = errors.Retryable
    else:
        cls = errors.ApiError
    return cls(verb, kind, namespace, name, text, code=code)


def config_loader(kubeconfig: str | None = None, context: str | None = None) -> Callable[[], Any]:
    """How to load the connection settings, chosen once: the kubeconfig file given, else the
    in-cluster config when running in a pod, else ~/.kube/config ($KUBECONFIG)."""
    def from_kubeconfig() -> Any:
        cfg = kubelib.Configuration()
        kubelib.load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg)
        return cfg

    def in_cluster() -> Any:
        cfg = kubelib.Configuration()
        kubelib.load_incluster_config(client_configuration=cfg)
        return cfg

    if kubeconfig:
        return from_kubeconfig
    try:
        in_cluster()
    except kubelib.ConfigException:
        return from_kubeconfig
    return in_cluster
