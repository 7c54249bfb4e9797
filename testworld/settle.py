"""Waiting for quiet: the one positive signal tests and benchmarks settle on before they read
what did not happen.

"Nothing more will happen" cannot be observed, only "nothing happened for a while", so every
settle in the tests reads one thing again and again (a controller's reconcile or write count,
an audit log's size, two jobs' views and when they last changed) and returns once that reading
has stayed the same, and `ready` held, for `quiet` seconds. A slow machine makes the wait
longer, never shorter; a sleep instead would pass early on a slow machine and waste time on a
fast one (the project's rule: absence only after a positive settle signal). `Unsettled` says
what never went quiet and carries the last reading, for the few callers (the parity harness,
the benchmarks) that report a difference rather than fail on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Generic, TypeVar, Union

T = TypeVar("T")


class Unsettled(AssertionError, Generic[T]):
    """The reading never stayed the same (with `ready`) for long enough before the timeout."""

    def __init__(self, what: str, timeout: float, last: T) -> None:
        super().__init__(f"{what} did not settle within {timeout:.0f}s; last reading: {last!r}")
        self.last = last


def until_quiet(read: Callable[[], T], *, quiet: Union[float, Callable[[T], float]], timeout: float,
                ready: Callable[[T], bool] = lambda _reading: True,
                same: Callable[[T, T], bool] = lambda a, b: a == b,
                poll: float = 0.05, pause: Callable[[float], object] = time.sleep, what: str = "it") -> T:
    """`read()` every `poll` s until its reading has stayed `same` and `ready` for `quiet` s (or
    for `quiet(reading)` s: how long may depend on what it reads); that last reading. `pause`
    waits between reads (a condition variable's `wait` wakes on news). Unsettled after `timeout` s."""
    deadline = time.monotonic() + timeout
    reading = read()
    since = time.monotonic() if ready(reading) else None
    while True:
        now = time.monotonic()
        wanted = quiet(reading) if callable(quiet) else quiet
        if since is not None and now - since >= wanted:
            return reading
        if now >= deadline:
            raise Unsettled(what, timeout, reading)
        pause(poll)
        previous, reading = reading, read()
        if not ready(reading):
            since = None
        elif since is None or not same(previous, reading):
            since = time.monotonic()
