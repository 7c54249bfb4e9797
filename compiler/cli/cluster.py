"""Reading a cluster, read-only: the one place `train-compile` talks to an API server.

`plan --live`, `status` and `logs` read jobs, pods, Events and logs through this module
and nothing else; the compile pipeline never reaches a cluster. Import-linter keeps it so:
in `compiler`, only this module may import the cluster client or `kubernetes`.

The facade has no verb that writes: `Reader` sends GETs only (lists, gets, and the log
stream, itself a GET). The requests go through the controller's own client
(`foundation.cluster.kube`: kubeconfig loading with exec plugins and token refresh, TLS,
proxies, our error hierarchy), below both products, so trainforge has a single way of
reaching an API server and a single set of its bugs; the resources are named by its
descriptor (`foundation.cluster.resource.Resource`), light enough to import at start-up.

Where the settings come from, as kubectl and the plan contract say: `--kubeconfig`, else
`KUBECONFIG`, else `~/.kube/config`, and `--context`; inside a pod with none of those, the
pod's service account. Everything that can go wrong on the way (no kubeconfig, an unknown
context, a server that does not answer, a refusal) is one `ClusterError` whose message
names the server or the file and what to do; the CLI prints it and exits 1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from foundation.cluster.resource import (  # what the CLI reads, named as the client names it
    EVENTS,
    PODS,
    Resource,
)


class ClusterError(Exception):
    """The cluster could not be read; the message is one line a user can act on."""


class ClusterForbidden(ClusterError):
    """The credentials may not read it (RBAC): a caller may fall back to a narrower read."""


def kubeconfig_path(given: str | None) -> str | None:
    """The kubeconfig to read: the one given, else the first file of $KUBECONFIG that exists,
    else ~/.kube/config when it exists; None when there is none (in-cluster, or an error)."""
    if given:
        if not Path(given).is_file():
            raise ClusterError(f"no kubeconfig at {given}; pass --kubeconfig with the file kubectl uses")
        return given
    for entry in (os.environ.get("KUBECONFIG") or "").split(os.pathsep):
        if entry and Path(entry).is_file():
            return entry
    home = Path.home() / ".kube" / "config"
    return str(home) if home.is_file() else None


def connect(kubeconfig: str | None = None, *, context: str | None = None, pool_size: int = 4) -> Reader:
    """A reader of the cluster that `kubeconfig` and `context` name (see the module's paragraph);
    `pool_size`: the connections kept open, one per stream read at once (`logs --follow`)."""
    from foundation.cluster.kube import Client  # the client loads only when a cluster is read
    from foundation.cluster.kubelib import LOAD_ERRORS

    path = kubeconfig_path(kubeconfig)
    if path is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise ClusterError("no kubeconfig: pass --kubeconfig PATH, set KUBECONFIG, or create ~/.kube/config")
    try:
        client = Client.connect(path, context=context, pool_size=pool_size)
    except LOAD_ERRORS as exc:
        where = f"kubeconfig {path}" if path else "the in-cluster config"
        ctx = f" (context {context})" if context else ""
        raise ClusterError(f"cannot load {where}{ctx}: {exc}") from None
    return Reader(client, context=context, kubeconfig=path)


class Reader:
    """GETs against one API server; every failure is a `ClusterError` naming the server."""

    def __init__(self, client: Any, *, context: str | None, kubeconfig: str | None) -> None:
        self._client = client
        self.context = context
        self.kubeconfig = kubeconfig
        self.server = client.connection.host

    @property
    def namespace(self) -> str:
        """The namespace kubectl would use here: the context's, the pod's own in-cluster, else default."""
        return default_namespace(self.kubeconfig, self.context)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def list(self, res: Resource, *, namespace: str | None = None, label_selector: str | None = None,
             field_selector: str | None = None) -> list[dict[str, Any]] | None:
        """Every object of `res` (in `namespace`, or all), following `continue` pages;
        None when the server does not serve it (its CRD is not installed)."""
        from foundation.cluster import errors

        items: list[dict[str, Any]] = []
        cont: str | None = None
        while True:
            query = {"labelSelector": label_selector, "fieldSelector": field_selector, "limit": 500,
                     "continue": cont}
            try:
                page = self._client.call("GET", res, verb="list", namespace=namespace, query=query)
            except errors.NotFound:
                return None
            except errors.ApiError as exc:
                raise self._error(exc) from None
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                return items

    def get(self, res: Resource, namespace: str | None, name: str) -> dict[str, Any] | None:
        """One object, or None when it (or its kind) does not exist."""
        from foundation.cluster import errors

        try:
            return self._client.get(res, namespace, name)
        except errors.NotFound:
            return None
        except errors.ApiError as exc:
            raise self._error(exc) from None

    def stream(self, res: Resource, namespace: str, name: str, *, sub: str,
               query: dict[str, Any] | None = None) -> Iterator[bytes]:
        """The raw body of a streaming GET (`pods/NAME/log?follow=true`), chunk by chunk."""
        opened = self.open_stream(res, namespace, name, sub=sub, query=query)
        try:
            yield from opened.chunks()
        finally:
            opened.close()

    def open_stream(self, res: Resource, namespace: str, name: str, *, sub: str,
                    query: dict[str, Any] | None = None) -> Stream:
        """A streaming GET whose reading another thread may end (`Stream.close`): a followed log
        is quiet for as long as its program prints nothing, so only closing it wakes its reader."""
        from foundation.cluster import errors

        try:
            resp = self._client._send("GET", res.path(namespace, name, sub), verb="get", res=res, sub=sub,
                                      name=name, namespace=namespace, query=query, timeout=_stream_timeout())
        except errors.ApiError as exc:
            raise self._error(exc) from None
        if not 200 <= resp.status < 300:
            try:
                self._client._json(resp, "get", res, namespace, name)
            except errors.ApiError as exc:
                raise self._error(exc) from None
        return Stream(resp, self.server)

    def _error(self, exc: Exception) -> ClusterError:
        """Our one-line error for an API failure: which server, what it said, what to check."""
        from foundation.cluster import errors

        where = f"the cluster at {self.server}" + (f" (context {self.context})" if self.context else "")
        if isinstance(exc, errors.Forbidden):
            return ClusterForbidden(f"{where} refused to let these credentials read: {exc}; "
                                "they need get and list on the jobs, pods and events (read-only)")
        if isinstance(exc, errors.Retryable) and not getattr(exc, "code", 0):
            ctx = f" (context {self.context})" if self.context else ""
            return ClusterError(f"cannot reach {self.server}{ctx}: {unreachable(exc)}; is the cluster up? "
                                "check --kubeconfig/--context")
        return ClusterError(f"{where}: {exc}")


class Stream:
    """One open streaming answer: `chunks()` reads it, `close()` (from any thread) ends it."""

    def __init__(self, resp: Any, server: str) -> None:
        self._resp, self._server = resp, server
        self.closed = self._released = False

    def chunks(self) -> Iterator[bytes]:
        """The body's chunks as they arrive; ends when the server ends it or `close` is called."""
        import urllib3

        try:
            yield from self._resp.stream(64 * 1024, decode_content=True)
        except (OSError, urllib3.exceptions.HTTPError) as exc:  # a cut stream is a ProtocolError
            if not self.closed:
                raise ClusterError(f"the log stream from {self._server} broke: {exc}") from None
        finally:
            self._released = True
            self._resp.release_conn()

    def close(self) -> None:
        from foundation.cluster.kube import end_stream

        self.closed = True
        if not self._released:
            try:
                end_stream(self._resp)
            except RuntimeError:  # released between the check and the cut: it is over anyway
                pass


def unreachable(exc: BaseException) -> str:
    """Why a request never reached the server, in a few words: the OS's or TLS's own reason found
    in the exception's chain (urllib3 wraps it in a pool error that names the URL, retries and
    the connection object), not urllib3's sentence around it."""
    import socket
    import ssl

    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        cause = todo.pop(0)
        if not isinstance(cause, BaseException) or id(cause) in seen:
            continue
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "no such host"
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {getattr(cause, 'reason', None) or cause}".replace("_", " ").lower()
        if isinstance(cause, (TimeoutError, socket.timeout)) or type(cause).__name__ == "ConnectTimeoutError":
            return "timed out"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror[0].lower() + cause.strerror[1:]
        todo += [getattr(cause, "reason", None), cause.__cause__, cause.__context__]
    return str(getattr(exc, "reason", exc)).split(" (Caused by", 1)[0]


def default_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The namespace of `context` (else the current context) in `kubeconfig`; in a pod without
    one, the pod's own; else `default`, as kubectl chooses it."""
    if kubeconfig:
        import yaml

        try:
            config = yaml.safe_load(Path(kubeconfig).read_text()) or {}
        except (OSError, yaml.YAMLError):
            return "default"
        wanted = context or config.get("current-context")
        for entry in config.get("contexts") or []:
            if isinstance(entry, dict) and entry.get("name") == wanted:
                return str((entry.get("context") or {}).get("namespace") or "default")
        return "default"
    try:
        return Path(_SERVICE_ACCOUNT_NAMESPACE).read_text().strip() or "default"
    except OSError:
        return "default"


_SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


def _stream_timeout() -> Any:
    import urllib3

    return urllib3.Timeout(connect=10.0, read=None)  # a followed log may be quiet for hours
