"""Reconciles that raise what nothing expected (a bug): visible once, retried, never looped.

The API server's refusals (foundation.cluster.errors) and invalid jobs (reconcile.InvalidJob) are
expected and say so in one log line per retry. Anything else is a bug in the controller,
or a job nobody thought of, and must neither kill the worker thread (it used to
escape for all but five exception types) nor print a traceback on every backoff step (it
used to for those five). So the manager catches every `Exception`, counts it in
`controller_runtime_reconcile_panics_total` (and in errors), retries the key with the work
queue's exponential backoff, and asks `Bugs` how loud to be:

* an error first seen anywhere in this process is logged with its traceback;
* the same error on another key is one line naming the key that carries the traceback;
* the same error on the same key again is a debug line.

"The same error" is its type and the code locations of its traceback, not its message, which
often holds a job's name. Each key also gets one Warning Event (`REASON`) per distinct
error until it reconciles cleanly, so `kubectl describe` shows it without flooding etcd.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

REASON = "ReconcileError"
MAX_EVENT_TEXT = 800  # an Event's message is capped at 1 KiB

Signature = tuple[str, tuple[tuple[str, int], ...]]


@dataclass(frozen=True)
class Seen:
    new: bool  # first time in this process: log the traceback
    new_for_key: bool  # first time for this key since it last reconciled cleanly: a line and an Event
    first_key: str  # the key whose log line carries the traceback


def signature(exc: BaseException) -> Signature:
    """The exception's type and where it was raised from: (file, line) of each frame, a run of
    equal frames once (a RecursionError is the same error at whatever depth it struck)."""
    frames: list[tuple[str, int]] = []
    tb = exc.__traceback__
    while tb is not None:
        frame = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if not frames or frames[-1] != frame:
            frames.append(frame)
        tb = tb.tb_next
    kind = type(exc)
    return f"{kind.__module__}.{kind.__qualname__}", tuple(frames)


def describe(exc: BaseException) -> str:
    """`RuntimeError: text` for a log line or an Event, shortened to fit an Event."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return text if len(text) <= MAX_EVENT_TEXT else text[: MAX_EVENT_TEXT - 3] + "..."


def event_message(exc: BaseException) -> str:
    return f"Reconcile failed with an unexpected error, retried with backoff (the controller log has its traceback): {describe(exc)}"


class Bugs:
    """What has been reported, per process and per key (bounded; thread-safe)."""

    def __init__(self, *, max_signatures: int = 1024, max_per_key: int = 16) -> None:
        self.max_signatures, self.max_per_key = max_signatures, max_per_key
        self._lock = threading.Lock()
        self._first: OrderedDict[Signature, str] = OrderedDict()  # signature -> key logged with the traceback
        self._by_key: dict[str, set[Signature]] = {}

    def failed(self, key: str, exc: BaseException) -> Seen:
        sig = signature(exc)
        with self._lock:
            first = self._first.get(sig)
            new = first is None
            if first is None:
                self._first[sig] = first = key
                while len(self._first) > self.max_signatures:
                    self._first.popitem(last=False)
            else:
                self._first.move_to_end(sig)
            known = self._by_key.setdefault(key, set())
            new_for_key = sig not in known
            if new_for_key and len(known) < self.max_per_key:
                known.add(sig)
        return Seen(new=new, new_for_key=new_for_key, first_key=first)

    def succeeded(self, key: str) -> None:
        """The key reconciled cleanly (or its job is gone): a later bug is news again."""
        with self._lock:
            self._by_key.pop(key, None)


def job_of(key: str, informers: dict[str, Any]) -> dict[str, Any] | None:
    """The cached job of `Kind/namespace/name`, or None (gone, or a key we cannot read)."""
    parts = key.split("/", 2)
    informer = informers.get(parts[0]) if len(parts) == 3 else None
    return informer.get(parts[1], parts[2]) if informer is not None else None
