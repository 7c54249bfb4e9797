"""A pass's creates (controller.runtime.creates, through the one write path controller.runtime.writes):
sent concurrently, expectations first, outcomes as Events in upstream's order, AlreadyExists a
second guard, the first failure fails the pass and creates not yet started after it are not sent."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone
from typing import Any

import pytest

from controller.jobs.kinds import KINDS
from controller.jobs.status import Ctx
from foundation.cluster import errors
from controller.runtime.creates import CreatePool
from controller.runtime.expectations import Expectations
from foundation.cluster.kube import PODS, SERVICES
from controller.runtime.writes import Writes

KEY = "PyTorchJob/ns/j"


class FakeClient:
    """Answers creates after `delay` s; `answers` maps a name to the error to raise."""

    def __init__(self, *, delay: float = 0.0, answers: dict[str, errors.ApiError] | None = None) -> None:
        self.delay, self.answers = delay, answers or {}
        self.sent: list[str] = []
        self.in_flight = self.most_in_flight = 0
        self.lock = threading.Lock()
        self.expected_at_send: list[bool] = []
        self.expectations: Expectations | None = None

    def create(self, res: Any, namespace: str, body: dict[str, Any], *, answer: bool = True) -> Any:
        name = body["metadata"]["name"]
        with self.lock:
            self.sent.append(name)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if self.expectations is not None:
                self.expected_at_send.append(not self.expectations.satisfied(KEY))
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
        if name in self.answers:
            raise self.answers[name]
        return body


def obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}}


def invalid(name: str) -> errors.Invalid:
    return errors.Invalid("create", "Pod", "ns", name, f'Pod "{name}" is invalid', code=422)


class Pass:
    """A pass of job ns/j (KEY) with a batch open, creating through `Writes` as the reconciler does."""

    def __init__(self, client: FakeClient, expectations: Expectations, pool: CreatePool, events: list[Any]) -> None:
        self.writes = Writes(client, expectations, emit=lambda job, kind, events: None,  # type: ignore[arg-type]
                             retry=lambda key: None)
        self.ctx = Ctx(kind=KINDS["PyTorchJob"], job={"metadata": {"name": "j", "namespace": "ns"}, "spec": {}},
                       status={}, pods={}, now=datetime.now(timezone.utc), events=events)
        self.ctx.creates = pool.batch(events)

    def add(self, res: Any, body: dict[str, Any]) -> None:
        self.writes.create(self.ctx, res, body)

    def wait(self) -> None:
        self.ctx.creates.wait()


def test_creates_go_out_together_and_their_events_keep_the_order_asked() -> None:
    client, expectations = FakeClient(delay=0.05), Expectations()
    client.expectations = expectations
    pool = CreatePool(client, size=8)  # type: ignore[arg-type]
    events: list[Any] = [("Normal", "ExitedWithCode", "before")]
    batch = Pass(client, expectations, pool, events)
    started = time.monotonic()
    for i in range(4):
        batch.add(PODS, obj(f"j-worker-{i}"))
        batch.add(SERVICES, obj(f"j-worker-{i}"))
    events.append(("Warning", "Restarting", "after"))
    batch.wait()
    assert time.monotonic() - started < 0.05 * 8 / 2, "not one after another"
    assert client.most_in_flight > 1 and all(client.expected_at_send)
    assert events == [("Normal", "ExitedWithCode", "before"),
                      *[e for i in range(4) for e in (("Normal", "SuccessfulCreatePod", f"Created pod: j-worker-{i}"),
                                                       ("Normal", "SuccessfulCreateService",
                                                        f"Created service: j-worker-{i}"))],
                      ("Warning", "Restarting", "after")]
    assert not expectations.satisfied(KEY), "waits for the watch to show what was created"
    pool.shutdown()


def test_already_exists_is_a_second_guard_not_an_error() -> None:
    exists = errors.AlreadyExists("create", "Pod", "ns", "j-worker-0", "exists", code=409)
    client, expectations = FakeClient(answers={"j-worker-0": exists}), Expectations()
    pool = CreatePool(client, size=2)  # type: ignore[arg-type]
    events: list[Any] = []
    batch = Pass(client, expectations, pool, events)
    batch.add(PODS, obj("j-worker-0"))
    batch.wait()
    assert events == [] and expectations.satisfied(KEY)
    pool.shutdown()


def test_the_first_failure_fails_the_pass_and_later_creates_are_not_sent() -> None:
    client = FakeClient(delay=0.01, answers={"j-worker-1": invalid("j-worker-1"), "j-worker-3": invalid("j-worker-3")})
    expectations = Expectations()
    pool = CreatePool(client, size=1)  # one at a time: what has not started when worker-1 fails is skipped
    events: list[Any] = []
    batch = Pass(client, expectations, pool, events)
    for i in range(5):
        batch.add(PODS, obj(f"j-worker-{i}"))
    with pytest.raises(errors.Invalid) as raised:
        batch.wait()
    assert raised.value.name == "j-worker-1"
    assert client.sent == ["j-worker-0", "j-worker-1"]
    assert events == [("Normal", "SuccessfulCreatePod", "Created pod: j-worker-0"),
                      ("Warning", "FailedCreatePod", 'Error creating: Pod "j-worker-1" is invalid')]
    expectations.created(KEY, ("pods", "j-worker-0"))  # the watch shows the one that was created
    assert expectations.satisfied(KEY), "nothing else is waited for"
    pool.shutdown()
