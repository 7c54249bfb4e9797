"""The progress endpoint over HTTPS: authenticate, validate, store, answer as the Trainer does.

`Endpoint.answer` is the whole decision for one request, from the request's path, headers
and body to a status code and a `metav1.Status`-shaped body, so the tests can drive it
without sockets; `serve` puts it behind a threaded HTTPS server. Order of the checks, each
refusal counted in `trainforge_progress_reports_total{code,reason}`:

1. a path that is no job's report path, or a kind not enabled: 404; a body over 64 KiB: 413
   (before anything else is read, as the Trainer's middleware);
2. not leading, or the caches not synced yet: 503 with `Retry-After` (only the leader holds
   the caches that say whose pod a token is; a standby behind the same Service answers this
   and the client tries again, which reaches the leader);
3. the token (controller.progress.auth): 401 / 403;
4. a job that has finished: 409 (its progress is final; a report still pending from before
   is written all the same);
5. the report (foundation.progress.protocol): 422 with the field and what is wrong;
6. stored: 200 written now, 202 accepted and coalesced (controller.progress.store).

TLS is negotiated in each connection's own thread, so a slow or silent client never holds up
the accept loop; connections are kept alive for `IDLE_SECONDS` so a pod that reports every
few seconds pays one handshake, not one per report.
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from controller.jobs import conditions
from controller.progress.auth import Authenticator, Refused, authorize
from controller.progress.store import ProgressStore
from controller.runtime.informer import Informer
from foundation.cluster import errors
from foundation.cluster.kube import Resource
from foundation.progress.endpoint import parse_path
from foundation.runs.clock import parse_time
from foundation.progress.protocol import MAX_BODY_BYTES, TRAINER_STATUS, InvalidReport, status_body, validate

log = logging.getLogger(__name__)

IDLE_SECONDS = 15.0
DRAIN_BYTES = 16 * MAX_BODY_BYTES  # an oversized body up to this is read and dropped; past it the connection closes
READ_SECONDS = 10.0  # the Trainer's read timeout: a request must arrive whole within this


@dataclass(frozen=True)
class JobKind:
    resource: Resource
    jobs: Informer


@dataclass(frozen=True)
class Answer:
    code: int
    body: dict[str, Any]
    reason: str = ""


def _refusal(code: int, reason: str, message: str, metric: str = "") -> Answer:
    k8s_reason = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 405: "MethodNotAllowed", 409: "Conflict",
                  413: "RequestEntityTooLarge", 422: "Invalid", 503: "ServiceUnavailable"}.get(code, "InternalError")
    return Answer(code, status_body(code, k8s_reason, message), metric or reason)


class Endpoint:
    def __init__(self, *, kinds: dict[str, JobKind], pods: Informer, auth: Authenticator, store: ProgressStore,
                 ready: Callable[[], bool], count: Callable[[int, str], None] | None = None) -> None:
        self.kinds, self.pods, self.auth, self.store, self.ready = kinds, pods, auth, store, ready
        self.count = count or (lambda code, reason: None)

    def answer(self, method: str, path: str, headers: Any, read_body: Callable[[int], bytes]) -> Answer:
        out = self._answer(method, path, headers, read_body)
        self.count(out.code, out.reason)
        return out

    def _answer(self, method: str, path: str, headers: Any, read_body: Callable[[int], bytes]) -> Answer:
        target = parse_path(path)
        kind = self.kinds.get(target[1]) if target else None
        if target is None or kind is None:
            return _refusal(404, "not-found", f"no progress endpoint at {path.split('?')[0]}")
        if method != "POST":
            return _refusal(405, "method", "report progress with POST")
        try:
            length = int(headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY_BYTES:
            if 0 < length <= DRAIN_BYTES:
                read_body(length)  # read past it, so the client reads the answer instead of a reset connection
            return _refusal(413, "too-large", f"the report is {length} bytes; at most {MAX_BODY_BYTES} are accepted"
                            if length >= 0 else "send a Content-Length")
        body = read_body(length)
        if not self.ready():
            return _refusal(503, "not-leading", "this replica is not the leader or not synced yet; try again")
        namespace, _, name = target
        what = f"{kind.resource.kind} {namespace}/{name}"
        try:
            identity = self.auth.identify(headers.get("Authorization"))
            job = kind.jobs.get(namespace, name)
            authorize(identity, job, self.pods.get(identity.namespace, identity.pod),
                      kind=kind.resource.kind, namespace=namespace, name=name)
        except Refused as exc:
            return _refusal(exc.code, str(exc), str(exc), exc.reason)
        assert job is not None
        if conditions.is_finished(job.get("status") or {}):
            return _refusal(409, "finished", f"{what} has finished; its progress is final")
        try:
            report = validate(body)
        except InvalidReport as exc:
            return _refusal(422, str(exc), str(exc), "invalid")
        if report.status is None:
            return Answer(200, {}, "empty")
        held = parse_time(((job.get("status") or {}).get(TRAINER_STATUS) or {}).get("lastUpdatedTime"))
        try:
            # a new leader knows the stored report from its cache only, to the second: an older
            # report of a crossing rank must not replace it
            stored = self.store.offer(kind.resource, namespace, name, job["metadata"]["uid"], report.status,
                                      observed=report.observed,
                                      stored=held.timestamp() + 1.0 if held else float("-inf"))
        except errors.NotFound:
            return _refusal(404, "gone", f"{what} does not exist")
        except errors.ApiError as exc:
            return _refusal(503, f"could not store the report now: {exc}", f"could not store the report now: {exc}",
                            "write-failed")
        return Answer(200 if stored else 202, {TRAINER_STATUS: report.status}, "stored" if stored else "coalesced")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type, context: ssl.SSLContext) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.context = context
        super().__init__(address, handler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(READ_SECONDS)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            log.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.close()
            except OSError:
                pass


def serve(endpoint: Endpoint, address: tuple[str, int], context: ssl.SSLContext) -> tuple[_Server, tuple[str, int]]:
    """Serve `endpoint` on `address` in a daemon thread; returns the server and the bound address."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: every answer carries a Content-Length
        timeout = IDLE_SECONDS

        def do_POST(self) -> None:  # noqa: N802 - http.server's names
            self._answer("POST")

        def do_GET(self) -> None:  # noqa: N802
            self._answer("GET")

        def do_PUT(self) -> None:  # noqa: N802
            self._answer("PUT")

        def _answer(self, method: str) -> None:
            try:
                out = endpoint.answer(method, self.path, self.headers, self.rfile.read)
            except Exception:  # a bug must cost one answer, never the server
                log.exception("progress request %s %s failed", method, self.path)
                out = _refusal(500, "bug", "internal error")
            data = json.dumps(out.body).encode()
            self.send_response(out.code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if out.code == 503:
                self.send_header("Retry-After", "1")
            if out.code == 413 and int(self.headers.get("Content-Length") or -1) not in range(DRAIN_BYTES + 1):
                self.close_connection = True  # the unread body must not be taken for the next request
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - one line per report is noise
            log.debug("progress: " + format, *args)

    server = _Server(address, Handler, context)
    threading.Thread(target=server.serve_forever, name="progress-server", daemon=True).start()
    return server, server.server_address[:2]
