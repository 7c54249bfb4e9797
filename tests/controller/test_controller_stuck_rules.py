"""Which pods train-controller calls stuck, since when, and what it says (controller.jobs.stuck,
foundation.runs.podstate), and which status write is a state change in its INFO log
(controller.jobs.journal): pure rules on statuses as the kubelet, the scheduler and the
controller write them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from controller.jobs import stuck
from foundation.runs import podstate

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": f"uid-{name}", "creationTimestamp": at(600), **meta}, "status": status}


def waiting(reason: str, message: str = "", *, started: float = 300, last_exit: float | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "pytorch", "state": {"waiting": {"reason": reason, "message": message}}}
    if last_exit is not None:
        container["lastState"] = {"terminated": {"exitCode": 3, "reason": "Error", "finishedAt": at(last_exit)}}
    return {"phase": "Pending", "startTime": at(started), "containerStatuses": [container]}


def unschedulable(since: float) -> dict[str, Any]:
    return {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                                "message": "0/14 nodes are available: 14 Insufficient nvidia.com/gpu.",
                                                "lastTransitionTime": at(since)}]}


@pytest.mark.parametrize(("status", "reason", "since"), [
    (waiting("ImagePullBackOff", 'Back-off pulling image "x:9"', started=90), "ImagePullBackOff", 90),
    (waiting("CreateContainerConfigError", 'secret "hf" not found', started=45), "CreateContainerConfigError", 45),
    (waiting("CrashLoopBackOff", "back-off 5m0s", started=3600, last_exit=20), "CrashLoopBackOff", 20),
    (unschedulable(200), "Unschedulable", 200),
], ids=["a pull waits since the kubelet took the pod", "a config error likewise",
        "a crash loop waits since its last run ended", "no node: since the scheduler said so"])
def test_a_wait_begins_where_the_pods_status_says(status, reason, since) -> None:
    said = podstate.why(pod("p", status))
    assert said.stuck and said.reason == reason and said.since == at(since)


def test_pods_past_the_threshold_are_stuck_and_the_next_one_sets_the_wake() -> None:
    pods = [
        pod("a-master-0", waiting("ImagePullBackOff", 'Back-off pulling image "x:9"', started=200)),
        pod("a-worker-0", waiting("ErrImagePull", started=150)),  # 30 s short of 180
        pod("a-worker-1", unschedulable(170)),  # 10 s short: the sooner wake
        pod("a-worker-2", waiting("ContainerCreating", started=900)),  # no reason to look
        pod("a-worker-3", {"phase": "Running", "startTime": at(900)}),
        pod("a-worker-4", waiting("ImagePullBackOff", started=900), deletionTimestamp=at(1)),  # going away
    ]
    found, wake = stuck.stuck(pods, now=NOW, threshold=180)
    assert [(s.pod, s.reason, s.message) for s in found] == [
        ("a-master-0", "ImagePullBackOff", 'Back-off pulling image "x:9"')]
    assert wake == pytest.approx(10)


def test_a_crash_loop_is_stuck_once_a_back_off_outlasts_the_threshold() -> None:
    short = pod("c", waiting("CrashLoopBackOff", "back-off 40s", started=3600, last_exit=40))
    long = pod("c", waiting("CrashLoopBackOff", "back-off 5m0s", started=3600, last_exit=200))
    assert stuck.stuck([short], now=NOW, threshold=180) == ([], pytest.approx(140))
    [found], wake = stuck.stuck([long], now=NOW, threshold=180)
    assert wake is None and found.message == "back-off 5m0s; last run exited 3 (Error)"


def test_the_event_names_the_pod_the_reason_the_threshold_and_the_message() -> None:
    [found], _ = stuck.stuck([pod("j-master-0", waiting("ImagePullBackOff", 'Back-off pulling image "x:9"'))],
                             now=NOW, threshold=180)
    assert stuck.event_message(found, 180) == (
        'Pod j-master-0 is stuck in ImagePullBackOff for more than 3m: Back-off pulling image "x:9"')


def test_each_pod_and_reason_is_news_once_and_the_gauge_counts_what_is_stuck_now() -> None:
    reported = stuck.Reported()
    a = stuck.Stuck("j-master-0", "u1", "ImagePullBackOff", "m", 200)
    b = stuck.Stuck("j-worker-0", "u2", "Unschedulable", "m", 200)
    assert reported.news("PyTorchJob/ns/j", [a]) == [a]
    assert reported.news("PyTorchJob/ns/j", [a, b]) == [b]  # a was said already
    assert reported.news("TFJob/ns/t", [stuck.Stuck("t-chief-0", "u3", "Unschedulable", "m", 9)])
    assert reported.counts() == {("pytorchjob", "ImagePullBackOff"): 1, ("pytorchjob", "Unschedulable"): 1,
                                 ("tfjob", "Unschedulable"): 1}
    reported.forget("PyTorchJob/ns/j")  # finished, suspended or gone
    assert reported.counts() == {("tfjob", "Unschedulable"): 1}
    assert reported.news("PyTorchJob/ns/j", [a]) == []  # still said, as long as the process lives
    assert reported.news("PyTorchJob/ns/j", [stuck.Stuck("j-master-0", "u1", "CrashLoopBackOff", "m", 200)])


def _condition(ctype: str, state: str, reason: str) -> dict[str, Any]:
    return {"type": ctype, "status": state, "reason": reason, "message": f"{reason} said"}


@pytest.mark.parametrize(("old", "new", "line"), [
    ([], [_condition("Created", "True", "C")], "k: Created (C: C said)"),
    ([], [_condition("Created", "True", "C"), _condition("Running", "True", "R")], "k: Running (R: R said)"),
    ([_condition("Created", "True", "C"), _condition("Running", "True", "R")],
     [_condition("Created", "True", "C"), _condition("Running", "False", "R"), _condition("Succeeded", "True", "S")],
     "k: Running -> Succeeded (S: S said)"),
    ([_condition("Created", "True", "C"), _condition("Suspended", "True", "Sus")],
     [_condition("Created", "True", "C"), _condition("Suspended", "False", "Resumed")],
     "k: Suspended -> Created (Resumed: Resumed said)"),
    ([_condition("Created", "True", "C"), _condition("Running", "True", "R")],
     [_condition("Created", "True", "C"), _condition("Running", "True", "R2")], None),
], ids=["the first state", "two conditions at once: the newest", "a finish", "a resume says what changed",
        "the same state is no line"])
def test_a_state_change_is_the_newest_true_condition_and_what_made_it(caplog, old, new, line) -> None:
    from controller.jobs import journal

    caplog.set_level("INFO", logger="controller.jobs.journal")
    journal.state("k", {"conditions": old}, {"conditions": new})
    assert [r.getMessage() for r in caplog.records] == ([line] if line else [])
