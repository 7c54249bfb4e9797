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
few seconds pays one handshake, not one per report; each answer is one write with
TCP_NODELAY (headers and body apart would wait out the client's delayed ACK, 40 ms a report).
"""

from __future__ import annotations

import json
import logging
import socket
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass
import socketserver
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


class _Server(socketserver.ThreadingTCPServer):
    """One thread per connection; TLS is negotiated in that thread, then requests are read with a
    small HTTP/1.1 loop (`_Connection`): http.server's handler parses every header block with
    the email package, which cost more than the whole report behind it (bench/README.md)."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], endpoint: Endpoint, context: ssl.SSLContext) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.endpoint, self.context = endpoint, context
        super().__init__(address, socketserver.BaseRequestHandler)

    def finish_request(self, request: Any, client_address: Any) -> None:
        request.settimeout(READ_SECONDS)
        request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # an answer is one write: send it now
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as exc:
            log.debug("TLS handshake with %s failed: %s", client_address, exc)
            return
        try:
            _Connection(tls, self.endpoint).serve()
        except (OSError, ssl.SSLError, ValueError) as exc:  # a client gone mid-request, or garbage
            log.debug("progress connection from %s ended: %s", client_address, exc)
        finally:
            try:
                tls.close()
            except OSError:
                pass


class _Connection:
    """Requests on one kept-alive connection until the client closes it or idles past IDLE_SECONDS."""

    MAX_LINE, MAX_HEADERS = 8192, 64

    def __init__(self, sock: Any, endpoint: Endpoint) -> None:
        self.sock, self.endpoint = sock, endpoint
        self.reader = sock.makefile("rb")

    def serve(self) -> None:
        while True:
            self.sock.settimeout(IDLE_SECONDS)
            line = self.reader.readline(self.MAX_LINE + 1)
            if not line or line in (b"\r\n", b"\n"):
                return
            self.sock.settimeout(READ_SECONDS)
            parts = line.decode("latin-1").split()
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                self._send(_refusal(400, "bad-request", "not an HTTP/1.1 request"), close=True)
                return
            method, path, version = parts
            headers = self._headers()
            if headers is None:
                self._send(_refusal(400, "bad-request", "too many or too long headers"), close=True)
                return
            try:
                out = self.endpoint.answer(method, path, headers, self.reader.read)
            except Exception:  # a bug must cost one answer, never the server
                log.exception("progress request %s %s failed", method, path)
                out = _refusal(500, "bug", "internal error")
            wanted_close = headers.get("Connection", "").lower() == "close" or version == "HTTP/1.0"
            unread = out.code == 413 and int(headers.get("Content-Length") or -1) not in range(DRAIN_BYTES + 1)
            self._send(out, close=wanted_close or unread)
            if wanted_close or unread:
                return

    def _headers(self) -> _Headers | None:
        headers = _Headers()
        for _ in range(self.MAX_HEADERS):
            line = self.reader.readline(self.MAX_LINE + 1)
            if line in (b"\r\n", b"\n", b""):
                return headers
            if len(line) > self.MAX_LINE:
                return None
            name, sep, value = line.decode("latin-1").partition(":")
            if sep:
                headers[name.strip().lower()] = value.strip()
        return None

    def _send(self, out: Answer, *, close: bool) -> None:
        data = json.dumps(out.body).encode()
        head = [f"HTTP/1.1 {out.code} {_PHRASES.get(out.code, 'Error')}", "Content-Type: application/json",
                f"Content-Length: {len(data)}"]
        if out.code == 503:
            head.append("Retry-After: 1")
        if close:
            head.append("Connection: close")
        self.sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)


class _Headers(dict):
    """Header names in any case (HTTP's), read as the endpoint reads them."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


_PHRASES = {200: "OK", 202: "Accepted", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 413: "Payload Too Large", 422: "Unprocessable Entity",
            500: "Internal Error", 503: "Service Unavailable"}


def serve(endpoint: Endpoint, address: tuple[str, int], context: ssl.SSLContext) -> tuple[_Server, tuple[str, int]]:
    """Serve `endpoint` on `address` in a daemon thread; returns the server and the bound address."""
    server = _Server(address, endpoint, context)
    threading.Thread(target=server.serve_forever, name="progress-server", daemon=True).start()
    return server, server.server_address[:2]
