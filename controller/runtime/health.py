"""`/healthz`, `/readyz` and `/metrics` over HTTP, on controller-runtime's bind addresses.

Probes are named checks (`name -> () -> bool`), answered the way kube-apiserver answers
its own: `200 ok`, or `500` listing `[-]name failed`; `?verbose` lists every check. The
kubelet only needs the status code, a human needs to know which check failed. Metrics
are served by `prometheus_client`'s own server from our registry. A bind address is
`host:port` (`:8081` = all interfaces, port `0` = any free port); `0` alone disables
the server, as in controller-runtime.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, start_http_server

log = logging.getLogger(__name__)

Check = Callable[[], bool]


def parse_bind_address(value: str) -> tuple[str, int] | None:
    """`:8080` -> ("0.0.0.0", 8080), `[::1]:0` -> ("::1", 0), `0` or "" -> None (disabled)."""
    value = value.strip()
    if value in ("", "0"):
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"bind address {value!r} must be host:port, :port or 0")
    return host.strip("[]") or "0.0.0.0", int(port)


class Probes:
    """Named health and readiness checks served on one address."""

    def __init__(self, *, healthz: Mapping[str, Check], readyz: Mapping[str, Check]) -> None:
        self.checks = {"/healthz": dict(healthz), "/readyz": dict(readyz)}
        self._server: ThreadingHTTPServer | None = None

    def answer(self, path: str, *, verbose: bool = False) -> tuple[int, str]:
        checks = self.checks.get(path)
        if checks is None:
            return 404, "not found\n"
        results = {name: _safe(check) for name, check in checks.items()}
        failed = [name for name, ok in results.items() if not ok]
        if not failed and not verbose:
            return 200, "ok"
        lines = [f"[{'+' if ok else '-'}]{name} {'ok' if ok else 'failed'}" for name, ok in results.items()]
        tail = f"{path[1:]} check failed" if failed else f"{path[1:]} check passed"
        return (500 if failed else 200), "\n".join([*lines, tail]) + "\n"

    def serve(self, address: tuple[str, int]) -> tuple[str, int]:
        """Start serving in a daemon thread; returns the bound (host, port)."""
        probes = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlsplit(self.path)
                code, body = probes.answer(url.path, verbose="verbose" in url.query)
                data = body.encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - probes every few seconds: no access log
                pass

        server = ThreadingHTTPServer(address, Handler)
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, name="health-probes", daemon=True).start()
        bound = server.server_address[:2]
        log.info("serving health probes on %s:%d (/healthz, /readyz)", bound[0], bound[1])
        return str(bound[0]), int(bound[1])

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def serve_metrics(address: tuple[str, int], registry: CollectorRegistry) -> tuple[Any, tuple[str, int]]:
    """Serve `/metrics` (any path, as prometheus_client does); returns (server, bound address)."""
    server, _thread = start_http_server(address[1], addr=address[0], registry=registry)
    bound = server.server_address[:2]
    log.info("serving metrics on %s:%d/metrics", bound[0], bound[1])
    return server, (str(bound[0]), int(bound[1]))


def _safe(check: Check) -> bool:
    try:
        return bool(check())
    except Exception:  # noqa: BLE001 - any broken check reads as failed (logged), never a 500 with a trace
        log.exception("health check failed")
        return False
