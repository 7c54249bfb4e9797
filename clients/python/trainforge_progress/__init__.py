"""Report how far training has got: progress, ETA and metrics, from inside a training pod.

One file with no dependencies, so it can be copied into any image. It speaks Kubeflow
Trainer v2's TrainJobStatus protocol to whatever the pod's environment names:

- ``KUBEFLOW_TRAINER_SERVER_URL``: where to POST (Trainer v2 injects it into TrainJob pods
  when its ``TrainJobStatus`` feature gate is on; ``train-compile`` writes it into the pods of
  kubeflow.org/v1 jobs run by train-controller);
- ``KUBEFLOW_TRAINER_SERVER_CA_CERT``: the CA file that verifies the server;
- ``KUBEFLOW_TRAINER_SERVER_TOKEN``: the projected ServiceAccount token file, read again for
  every request (the kubelet rotates it).

Without them every call is a no-op returning False, so the same script runs on a laptop.
Nothing raises into the training loop: a failure is logged once and returns False.

Rate: a report within ``min_interval`` (5 s) of the last one sent is kept and sent by the
next call after the interval or by ``flush()``; the server coalesces further (train-
controller writes a job's status at most once per 30 s).

The request body follows the Trainer's limits: a percentage 0-100 and seconds >= 0 as
integers, at most 256 metrics, names and values as strings of 1-64 characters (numbers are
formatted with up to 6 significant digits), ``lastUpdatedTime`` in RFC 3339.

Callbacks (duck-typed: this module imports neither library):

- ``HuggingFaceProgress()`` for ``transformers.Trainer(callbacks=[...])``: reports the step
  share of ``max_steps``, the ETA from the pace since ``on_train_begin``, and the logged and
  evaluation metrics, on the world's process zero only;
- ``LightningProgress()`` for ``lightning.Trainer(callbacks=[...])``: the same from
  ``global_step`` / ``estimated_stepping_batches`` and ``callback_metrics``, on global rank 0.
"""

from __future__ import annotations

import datetime as _dt
import http.client
import json
import logging
import math
import os
import ssl
import threading
import time
import urllib.parse
from typing import Any, Callable, Mapping, Optional

__all__ = ["Reporter", "report", "flush", "HuggingFaceProgress", "LightningProgress"]
__version__ = "0.1.0"

ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
MAX_METRICS = 256
MAX_CHARS = 64
RETRIES = 3  # a 503 (a standby behind the Service, a leader change) or a dropped connection

log = logging.getLogger("trainforge_progress")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(value: Any) -> Optional[str]:
    if isinstance(value, bool):
        value = str(value).lower()
    elif isinstance(value, int):
        value = str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = format(value, ".6g")
    elif hasattr(value, "item"):  # a 0-d tensor or numpy scalar
        try:
            return _text(value.item())
        except (TypeError, ValueError):
            return None
    elif not isinstance(value, str):
        return None
    return value[:MAX_CHARS] if value else None


def body(progress: Any = None, eta: Any = None, metrics: Optional[Mapping[str, Any]] = None,
         when: Optional[str] = None) -> dict:
    """The request body for one report, within the protocol's limits."""
    status: dict = {"lastUpdatedTime": when or _now()}
    if progress is not None:
        status["progressPercentage"] = max(0, min(100, int(round(float(progress)))))
    if eta is not None:
        seconds = eta.total_seconds() if isinstance(eta, _dt.timedelta) else float(eta)
        status["estimatedRemainingSeconds"] = max(0, min(2**31 - 1, int(round(seconds))))
    items = []
    for name, value in (metrics or {}).items():
        text = _text(value)
        if text is not None and isinstance(name, str) and name:
            items.append({"name": name[:MAX_CHARS], "value": text})
        if len(items) == MAX_METRICS:
            break
    if items:
        status["metrics"] = items
    return {"trainerStatus": status}


class Reporter:
    """Sends reports to one endpoint over one kept-alive HTTPS connection; thread-safe."""

    def __init__(self, url: Optional[str] = None, *, ca_file: Optional[str] = None, token_file: Optional[str] = None,
                 min_interval: float = 5.0, timeout: float = 5.0, server_hostname: Optional[str] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.url = url if url is not None else os.environ.get(ENV_URL, "")
        self.ca_file = ca_file if ca_file is not None else os.environ.get(ENV_CA_CERT, "")
        self.token_file = token_file if token_file is not None else os.environ.get(ENV_TOKEN, "")
        self.min_interval, self.timeout, self.clock = min_interval, timeout, clock
        self.server_hostname = server_hostname  # verify the certificate for this name (tests that dial 127.0.0.1)
        self.last_code: Optional[int] = None
        self.last_answer: Any = None
        self._lock = threading.Lock()
        self._conn: Optional[http.client.HTTPSConnection] = None
        self._sent_at = -math.inf
        self._pending: Optional[dict] = None
        self._warned = False

    @property
    def enabled(self) -> bool:
        return bool(self.url and self.token_file)

    def report(self, progress: Any = None, eta: Any = None, metrics: Optional[Mapping[str, Any]] = None, *,
               force: bool = False) -> bool:
        """Report now, or keep it for later when the last report went out less than
        `min_interval` ago (`force`: send anyway). True when the server took it (200/202)."""
        if not self.enabled:
            return False
        try:
            payload = body(progress, eta, metrics)
        except (TypeError, ValueError) as exc:
            self._warn(f"not a report: {exc}")
            return False
        with self._lock:
            if not force and self.clock() - self._sent_at < self.min_interval:
                self._pending = payload
                return False
            self._pending = None
            return self._send(payload)

    def flush(self) -> bool:
        """Send the report kept back by the rate limit, if any (call it when training ends)."""
        with self._lock:
            payload, self._pending = self._pending, None
            return self._send(payload) if payload is not None and self.enabled else False

    def _send(self, payload: dict) -> bool:
        self._sent_at = self.clock()
        data = json.dumps(payload).encode()
        for attempt in range(RETRIES):
            try:
                with open(self.token_file, encoding="utf-8") as f:
                    token = f.read().strip()
                code, answer = self._post(data, token)
            except (OSError, http.client.HTTPException) as exc:
                self._close()
                if attempt == RETRIES - 1:
                    self._warn(f"could not report progress to {self.url}: {exc}")
                    return False
                time.sleep(0.2 * (attempt + 1))
                continue
            self.last_code, self.last_answer = code, answer
            if code == 503 and attempt < RETRIES - 1:
                self._close()  # a new connection may reach another replica (the leader)
                time.sleep(0.2 * (attempt + 1))
                continue
            if code in (200, 202):
                return True
            self._warn(f"the progress server refused the report ({code}): {(answer or {}).get('message', answer)}")
            return False
        return False

    def _post(self, data: bytes, token: str) -> tuple:
        parts = urllib.parse.urlsplit(self.url)
        if self._conn is None:
            context = ssl.create_default_context(cafile=self.ca_file or None)
            if self.server_hostname:
                context.check_hostname = False  # checked below against server_hostname
            self._conn = http.client.HTTPSConnection(parts.hostname, parts.port or 443, timeout=self.timeout,
                                                     context=context)
            if self.server_hostname:
                self._conn.connect()
                _check_name(self._conn.sock.getpeercert(), self.server_hostname)
        path = parts.path + ("?" + parts.query if parts.query else "")
        self._conn.request("POST", path, body=data, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        resp = self._conn.getresponse()
        raw = resp.read()
        if resp.getheader("Connection", "").lower() == "close":
            self._close()
        try:
            answer = json.loads(raw) if raw else None
        except ValueError:
            answer = raw.decode(errors="replace")
        return resp.status, answer

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _warn(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning("%s (further failures are logged at debug)", message)
        else:
            log.debug(message)


def _check_name(cert: Any, name: str) -> None:
    names = [v for k, v in (cert or {}).get("subjectAltName", ()) if k in ("DNS", "IP Address")]
    if name not in names:
        raise ssl.SSLCertVerificationError(f"the server's certificate is not for {name} ({names})")


_default: Optional[Reporter] = None
_default_lock = threading.Lock()


def _reporter() -> Reporter:
    global _default
    with _default_lock:
        if _default is None:
            _default = Reporter()
        return _default


def report(progress: Any = None, eta: Any = None, metrics: Optional[Mapping[str, Any]] = None, *,
           force: bool = False) -> bool:
    """Report progress (percent, 0-100), eta (seconds or a timedelta) and metrics (name -> value)
    to the server in this pod's environment; False when not sent (no server, rate-limited, refused)."""
    return _reporter().report(progress, eta, metrics, force=force)


def flush() -> bool:
    """Send what the rate limit kept back (the last report of a run)."""
    return _reporter().flush()


class _Pace:
    """The ETA from the pace so far: seconds per step since the first step seen."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.start: Optional[tuple] = None

    def eta(self, step: int, total: int) -> Optional[float]:
        now = self.clock()
        if self.start is None or step < self.start[0]:
            self.start = (step, now)
            return None
        done = step - self.start[0]
        return (now - self.start[1]) / done * max(total - step, 0) if done > 0 else None


def _percent(step: Any, total: Any) -> Optional[float]:
    try:
        return 100.0 * float(step) / float(total) if total and float(total) > 0 else None
    except (TypeError, ValueError):
        return None


class _Hooks:
    """Every hook a library may call and this callback does not use is a no-op, so a library
    version with new hooks still runs it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("on_") or name in ("setup", "teardown"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


class HuggingFaceProgress(_Hooks):
    """A `transformers.TrainerCallback` (duck-typed): progress from `state.global_step` of
    `state.max_steps`, ETA from the pace since training began, metrics from `on_log` and
    `on_evaluate`; only the world's process zero reports."""

    def __init__(self, reporter: Optional[Reporter] = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.reporter = reporter
        self._pace = _Pace(clock)
        self._metrics: dict = {}

    def _send(self, state: Any, *, force: bool = False) -> None:
        if not getattr(state, "is_world_process_zero", True):
            return
        step, total = getattr(state, "global_step", 0), getattr(state, "max_steps", 0)
        (self.reporter or _reporter()).report(_percent(step, total), self._pace.eta(step, total) if total else None,
                                              dict(self._metrics), force=force)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._pace.start = None
        self._send(state)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._send(state)

    def on_log(self, args: Any, state: Any, control: Any, logs: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> None:
        self._metrics.update({k: v for k, v in (logs or {}).items() if _text(v) is not None})
        if getattr(state, "epoch", None) is not None:
            self._metrics["epoch"] = state.epoch
        self._send(state)

    def on_evaluate(self, args: Any, state: Any, control: Any, metrics: Optional[Mapping[str, Any]] = None,
                    **kwargs: Any) -> None:
        self._metrics.update({k: v for k, v in (metrics or {}).items() if _text(v) is not None})
        self._send(state)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._send(state, force=True)


class LightningProgress(_Hooks):
    """A `lightning.pytorch.Callback` (duck-typed): progress from `trainer.global_step` of
    `trainer.estimated_stepping_batches` (or `max_steps`), ETA from the pace, metrics from
    `trainer.callback_metrics`; only global rank 0 reports."""

    def __init__(self, reporter: Optional[Reporter] = None, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.reporter = reporter
        self._pace = _Pace(clock)

    @property
    def state_key(self) -> str:  # Lightning keys callback state by this
        return type(self).__name__

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        pass

    def _send(self, trainer: Any, *, force: bool = False) -> None:
        if not getattr(trainer, "is_global_zero", True):
            return
        step = getattr(trainer, "global_step", 0)
        total = getattr(trainer, "estimated_stepping_batches", None)
        if not isinstance(total, (int, float)) or not math.isfinite(total) or total <= 0:
            total = getattr(trainer, "max_steps", -1)
        total = int(total) if isinstance(total, (int, float)) and total > 0 else 0
        metrics = dict(getattr(trainer, "callback_metrics", {}) or {})
        if getattr(trainer, "current_epoch", None) is not None:
            metrics["epoch"] = trainer.current_epoch
        (self.reporter or _reporter()).report(_percent(step, total), self._pace.eta(step, total) if total else None,
                                              metrics, force=force)

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._pace.start = None
        self._send(trainer)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._send(trainer)

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        self._send(trainer)

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._send(trainer, force=True)
