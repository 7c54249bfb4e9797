"""Delayed adds as client-go keeps them: one wait per key (the earliest wins), and a key
handed to a worker stops waiting (its pass schedules its own follow-up)."""

from __future__ import annotations

import time

from controller.runtime.workqueue import WorkQueue


def test_a_key_waits_once_and_the_earliest_time_wins() -> None:
    q = WorkQueue()
    try:
        q.add_after("k", 0.3)
        q.add_after("k", 0.1)
        q.add_after("k", 0.2)
        assert q.pending_delayed() == 1
        start = time.monotonic()
        assert q.get(timeout=2) == "k" and time.monotonic() - start < 0.25
        q.done("k")
        assert q.get(timeout=0.4) is None, "the later ones were folded into the first"
    finally:
        q.shutdown()


def test_a_key_taken_by_a_worker_stops_waiting() -> None:
    q = WorkQueue()
    try:
        q.add_after("k", 0.2)  # e.g. an expectation timeout of a pass that ran too early
        q.add("k")  # the watch event that settles it
        assert q.get(timeout=1) == "k"
        assert q.pending_delayed() == 0
        q.add_after("k", 0.1)  # what this pass asks for itself
        q.done("k")
        assert q.get(timeout=1) == "k"
        q.done("k")
        assert q.get(timeout=0.3) is None
    finally:
        q.shutdown()


def test_void_entries_do_not_pile_up() -> None:
    q = WorkQueue()
    try:
        for _ in range(1000):
            q.add_after("k", 3600.0)
            q.add("k")
            assert q.get(timeout=1) == "k"
            q.done("k")
        assert q.pending_delayed() == 0 and len(q._waiting) <= 65  # noqa: SLF001
    finally:
        q.shutdown()
