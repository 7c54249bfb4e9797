"""The Event recorder sends off the caller's thread, in order, from a bounded queue that
folds into its object's combined Event when behind (and drops, counted, only when full of
distinct keys for `full_wait` s), adds senders while a backlog grows, and flushes on close;
`wait=True` sends at once. Against the API server: test_event_correlation.py."""

from __future__ import annotations

import threading
from typing import Any

from controller_kit import wait_for

from controller.runtime.events import EventRecorder

JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
       "metadata": {"name": "j", "namespace": "ns", "uid": "u-1", "resourceVersion": "42"}}


class FakeClient:
    """Records Event POSTs (and on which thread); `hold` blocks them until released."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any], str]] = []
        self.hold = threading.Event()
        self.hold.set()

    def create(self, res: Any, namespace: str, body: dict[str, Any], *, answer: bool = True) -> Any:
        self.hold.wait(10)
        self.sent.append((namespace, body, threading.current_thread().name))
        return body

    def patch(self, res: Any, namespace: str, name: str, patch: Any, **kw: Any) -> Any:
        self.hold.wait(10)
        self.sent.append((namespace, {"patch": name, **patch}, threading.current_thread().name))
        return patch


def record(rec: EventRecorder, message: str, **kw: Any) -> bool:
    return rec.event(JOB, "Normal", reason="SuccessfulCreatePod", message=message, component="pytorchjob-controller", **kw)


def test_events_are_sent_in_order_by_the_sender_with_the_same_body() -> None:
    client = FakeClient()
    rec = EventRecorder(client)  # type: ignore[arg-type]
    assert all(record(rec, f"Created pod: j-worker-{i}") for i in range(5))
    wait_for(lambda: rec.pending() == 0 and len(client.sent) == 5, what="events sent")
    assert [body["message"] for _, body, _ in client.sent] == [f"Created pod: j-worker-{i}" for i in range(5)]
    assert {thread for _, _, thread in client.sent} == {"event-sender-0"}
    namespace, body, _ = client.sent[0]
    assert namespace == "ns" and body["metadata"]["name"].startswith("j.") and body["metadata"]["namespace"] == "ns"
    assert body["involvedObject"] == {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "j",
                                      "namespace": "ns", "uid": "u-1", "resourceVersion": "42"}
    assert (body["type"], body["reason"], body["source"], body["count"]) == (
        "Normal", "SuccessfulCreatePod", {"component": "pytorchjob-controller"}, 1)
    assert body["firstTimestamp"] == body["lastTimestamp"] and body["reportingComponent"] == "pytorchjob-controller"
    rec.close()


def test_a_queue_behind_folds_into_the_objects_combined_event_and_close_flushes_it() -> None:
    client = FakeClient()
    client.hold.clear()  # the API server does not answer
    rec = EventRecorder(client, queue_size=4, fold_at=2)  # type: ignore[arg-type]
    assert record(rec, "m0")
    wait_for(lambda: rec.pending() == 1 and not rec._queue, what="m0 in flight")  # noqa: SLF001
    assert all(record(rec, f"m{i}") for i in range(1, 7))  # nothing refused
    assert rec.overflowed == 0 and rec.pending() == 4 and rec.folded == 3  # m1, m2 own; m3 new combined; m4-6 fold
    client.hold.set()
    assert rec.close(timeout=5)
    bodies = [body for _, body, _ in client.sent]
    assert [(b["message"], b["count"]) for b in bodies] == [
        ("m0", 1), ("m1", 1), ("m2", 1), ("(combined from similar events): m3; m4; m5; m6", 4)]
    assert record(rec, "after close") and client.sent[-1][2] == threading.current_thread().name


def test_a_queue_full_of_distinct_objects_waits_then_drops_and_counts() -> None:
    client = FakeClient()
    client.hold.clear()
    rec = EventRecorder(client, queue_size=2, fold_at=1, full_wait=0.2)  # type: ignore[arg-type]
    jobs = [{**JOB, "metadata": {**JOB["metadata"], "uid": f"u-{i}"}} for i in range(4)]
    for j in jobs:
        rec.event(j, "Normal", reason="R", message="m", component="c")
    assert rec.overflowed == 1 and rec.pending() == 3  # one in flight, two queued, the fourth object had no slot
    client.hold.set()
    assert rec.close(timeout=5)


def test_wait_sends_on_the_callers_thread() -> None:
    client = FakeClient()
    rec = EventRecorder(client)  # type: ignore[arg-type]
    assert record(rec, "now", wait=True)
    assert client.sent == [("ns", client.sent[0][1], threading.current_thread().name)]
    assert rec._senders == []  # noqa: SLF001 - nothing was queued, no thread started


def test_a_growing_backlog_gets_more_senders_who_leave_once_it_is_gone() -> None:
    client = FakeClient()
    client.hold.clear()
    rec = EventRecorder(client, backlog_step=4, max_senders=3, similar=20, fold_at=100)  # type: ignore[arg-type]
    for i in range(20):
        record(rec, f"m{i}")
    assert len(rec._senders) == 3  # noqa: SLF001 - 1, then one more past 4 and past 8 queued
    client.hold.set()
    wait_for(lambda: rec.pending() == 0, what="backlog sent")
    assert sorted(body["message"] for _, body, _ in client.sent) == sorted(f"m{i}" for i in range(20))
    assert len({thread for _, _, thread in client.sent}) > 1
    wait_for(lambda: len(rec._senders) == 1, what="extra senders gone")  # noqa: SLF001
    assert rec.close()
