"""Wake-ups of the work queue: a new key wakes one waiting worker, and none is lost.

The queue signals one worker per key (client-go's `cond.Signal`) and keeps the timer
thread on a condition of its own, so these hold the two things that could go wrong with
that: a key that no waiting worker is woken for, and a delayed key that never fires
while every worker waits."""

from __future__ import annotations

import threading
import time
from collections import Counter

from controller.runtime.workqueue import ShutDown, WorkQueue


def run_workers(q: WorkQueue, n: int, seen: Counter[str], lock: threading.Lock) -> list[threading.Thread]:
    def work() -> None:
        while True:
            try:
                key = q.get()
            except ShutDown:
                return
            with lock:
                seen[key] += 1
            q.done(key)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    return threads


def wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_every_key_added_while_workers_wait_is_handed_out_once() -> None:
    q, seen, lock = WorkQueue(), Counter(), threading.Lock()
    threads = run_workers(q, 4, seen, lock)
    try:
        time.sleep(0.05)  # all four waiting
        keys = [f"PyTorchJob/ns/j{i}" for i in range(2000)]
        adders = [threading.Thread(target=lambda part=keys[i::3]: [q.add(k) for k in part]) for i in range(3)]
        for t in adders:
            t.start()
        for t in adders:
            t.join()
        assert wait_for(lambda: sum(seen.values()) >= len(keys)), f"{sum(seen.values())} of {len(keys)} handed out"
        assert set(seen) == set(keys) and max(seen.values()) == 1
    finally:
        q.shutdown()
        for t in threads:
            t.join(timeout=2)


def test_a_delayed_key_fires_while_every_worker_waits_and_an_add_does_not_steal_the_timers_wake_up() -> None:
    q, seen, lock = WorkQueue(), Counter(), threading.Lock()
    threads = run_workers(q, 4, seen, lock)
    try:
        time.sleep(0.05)
        q.add_after("late", 0.2)
        q.add("now")  # wakes a worker, not the timer: "late" must still fire on time
        assert wait_for(lambda: seen["now"] == 1, 2.0)
        start = time.monotonic()
        assert wait_for(lambda: seen["late"] == 1, 2.0), "the delayed key never fired"
        assert time.monotonic() - start < 1.0
    finally:
        q.shutdown()
        for t in threads:
            t.join(timeout=2)


def test_shutdown_wakes_every_waiting_worker_and_the_timer() -> None:
    q, seen, lock = WorkQueue(), Counter(), threading.Lock()
    threads = run_workers(q, 4, seen, lock)
    q.add_after("never", 60)
    time.sleep(0.05)
    q.shutdown()
    for t in threads:
        t.join(timeout=2)
    assert not any(t.is_alive() for t in threads)
    assert not q._timer.is_alive()
