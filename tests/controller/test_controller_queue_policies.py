"""Pure machinery: the work queue's guarantees, expectations, the pod diff with restart
policies and exit codes, run-policy decisions, and event deduplication."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timezone

import pytest
from controller_kit import job

from controller.jobs import diff, run_policy
from controller.jobs import status as st
from controller.jobs.kinds import KINDS
from controller.runtime.event_correlator import Correlator, Sent
from controller.runtime.expectations import Expectations
from controller.runtime.workqueue import ShutDown, WorkQueue
from schemas import upstream
from foundation.frameworks.defaulting import defaulted

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


# --- work queue ---------------------------------------------------------------------------


def test_queue_dedupes_and_never_hands_out_a_key_twice_at_once():
    q = WorkQueue()
    try:
        q.add("a"), q.add("a"), q.add("b")
        assert len(q) == 2
        first = q.get(timeout=1)
        q.add(first)  # re-added while in flight: waits for done()
        second = q.get(timeout=1)
        assert second != first and q.get(timeout=0.05) is None
        q.done(first)
        assert q.get(timeout=1) == first
    finally:
        q.shutdown()


def test_queue_backoff_doubles_per_key_and_forget_resets():
    q = WorkQueue(base_delay=0.01, max_delay=0.05)
    try:
        assert [q.add_rate_limited("k") for _ in range(5)] == [0.01, 0.02, 0.04, 0.05, 0.05]
        assert q.num_requeues("k") == 5
        q.forget("k")
        assert q.num_requeues("k") == 0 and q.add_rate_limited("k") == 0.01
    finally:
        q.shutdown()


def test_add_after_fires_once_at_the_deadline():
    q = WorkQueue()
    try:
        start = time.monotonic()
        q.add_after("late", 0.2)
        q.add_after("late", 0.25)
        assert q.get(timeout=2) == "late" and time.monotonic() - start >= 0.19
        q.done("late")
        assert q.get(timeout=0.3) in (None, "late")  # the second timer may re-add it once
    finally:
        q.shutdown()


def test_shutdown_wakes_blocked_workers():
    q = WorkQueue()
    raised = []

    def worker():
        try:
            q.get()
        except ShutDown:
            raised.append(True)

    t = threading.Thread(target=worker)
    t.start()
    time.sleep(0.05)
    q.shutdown()
    t.join(1)
    assert raised == [True]


# --- expectations ---------------------------------------------------------------------------


def test_expectations_wait_for_observation_or_timeout():
    clock = Clock()
    e = Expectations(timeout=30, clock=clock)
    e.expect_create("k", [("pods", "a"), ("pods", "b")])
    e.expect_delete("k", [("services", "c")])
    assert not e.satisfied("k")
    e.created("k", ("pods", "a")), e.created("k", ("pods", "b")), e.deleted("k", ("services", "c"))
    assert e.satisfied("k")
    e.expect_create("k", [("pods", "z")])
    assert e.next_deadline("k") == 30
    clock.t += 31
    assert e.satisfied("k")


def test_a_held_create_waits_without_a_deadline_until_it_is_sent():
    """A Service held through a pod burst longer than the timeout is still awaited (the next pass
    must not create it again); once sent, it times out as any create; a relist keeps it."""
    clock = Clock()
    e = Expectations(timeout=300, clock=clock)
    e.expect_create("PyTorchJob/ns/j", [("services", "s")], held=True)
    assert e.next_deadline("PyTorchJob/ns/j") == 300  # look again later, nothing expires
    clock.t += 705
    assert not e.satisfied("PyTorchJob/ns/j")
    assert e.drop_unobservable("services", lambda ns, name: False, listed_at=clock.t) == []
    e.sent("PyTorchJob/ns/j", ("services", "s"))
    clock.t += 100
    assert not e.satisfied("PyTorchJob/ns/j") and e.next_deadline("PyTorchJob/ns/j") == 200
    clock.t += 200
    assert e.satisfied("PyTorchJob/ns/j")
    e.sent("PyTorchJob/ns/j", ("services", "s"))  # an expectation already gone stays gone
    assert e.satisfied("PyTorchJob/ns/j")


def test_a_relist_ends_the_wait_for_children_it_cannot_show():
    """Created and deleted while the watch was down: neither an ADDED nor the relist shows it."""
    clock = Clock()
    e = Expectations(timeout=300, clock=clock)
    e.expect_create("PyTorchJob/ns/j", [("pods", "j-worker-0"), ("pods", "j-master-0"), ("services", "j-worker-0")])
    e.expect_delete("PyTorchJob/ns/k", [("pods", "k-worker-0")])
    listed_at = clock.t + 1
    clock.t += 2
    e.expect_create("PyTorchJob/ns/late", [("pods", "late-0")])  # asked for after the list began: keep waiting
    in_list = {("ns", "j-master-0")}
    changed = e.drop_unobservable("pods", lambda ns, name: (ns, name) in in_list, listed_at)
    assert sorted(changed) == ["PyTorchJob/ns/j", "PyTorchJob/ns/k"]
    assert e.satisfied("PyTorchJob/ns/k")
    assert not e.satisfied("PyTorchJob/ns/j")  # j-master-0 is listed: its ADDED is on the way; the service too
    e.created("PyTorchJob/ns/j", ("pods", "j-master-0"))
    assert not e.satisfied("PyTorchJob/ns/j")  # only the services relist can settle the service
    assert e.drop_unobservable("services", lambda ns, name: False, listed_at) == ["PyTorchJob/ns/j"]
    assert e.satisfied("PyTorchJob/ns/j") and not e.satisfied("PyTorchJob/ns/late")


# --- pod diff ---------------------------------------------------------------------------------


def pod(rt, index, phase=None, *, code=None, deleting=False, name=None):
    meta = {"name": name or f"j-{rt}-{index}", "labels": {upstream.TYPE_LABEL: rt, upstream.INDEX_LABEL: str(index)}}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status = {"phase": phase} if phase else {}
    if code is not None:
        status["containerStatuses"] = [{"name": "pytorch", "state": {"terminated": {"exitCode": code}}}]
    return {"metadata": meta, "status": status}


@pytest.mark.parametrize("policy,code,restart,permanent", [
    ("OnFailure", 1, True, False), ("Always", 1, True, False), ("Never", 1, False, False),
    ("ExitCode", 137, True, False), ("ExitCode", None, True, False), ("ExitCode", 3, False, True), ("ExitCode", 0, False, True),
], ids=["on-failure", "always", "never", "exit 137 retried", "no exit code retried", "exit 3 fails", "exit 0 fails"])
def test_failed_pod_restart_decision(policy, code, restart, permanent):
    plan = diff.plan_pods([pod("worker", 0, "Failed", code=code)], "Worker",
                          {"replicas": 1, "restartPolicy": policy}, container="pytorch")
    assert bool(plan.restart) == restart and plan.permanent_failure == permanent
    assert plan.counts == {"active": 0, "succeeded": 0, "failed": 1}


def test_diff_creates_missing_deletes_surplus_and_counts_terminating_running_as_failed():
    pods = [pod("worker", 0, "Running"), pod("worker", 2, "Running"), pod("worker", 3, "Running", deleting=True),
            pod("worker", 1, "Pending", name="dup-a"), pod("worker", 1, "Pending", name="dup-b"), pod("master", 0, "Running")]
    pods[0]["metadata"]["labels"][upstream.INDEX_LABEL] = "0"
    plan = diff.plan_pods(pods, "Worker", {"replicas": 2, "restartPolicy": "Never"}, container="pytorch")
    assert plan.create == []  # index 1 has two pods: only logged, never a third
    assert [p["metadata"]["name"] for p in plan.delete] == ["j-worker-2"]
    assert plan.counts == {"active": 2, "succeeded": 0, "failed": 1}
    assert diff.plan_pods([], "Worker", {"replicas": 2}, container="pytorch").create == [0, 1]


# --- run policies -------------------------------------------------------------------------------


def ctx(body, status=None, now=T0):
    kind = KINDS[body["kind"]]
    body = defaulted({**body, "metadata": {**body["metadata"], "namespace": "ns"}}, kind)
    return st.Ctx(kind=kind, job=body, status=status or {}, pods={}, now=now)


def running_pod(rt, restarts):
    p = pod(rt, 0, "Running")
    p["status"]["containerStatuses"] = [{"name": "pytorch", "restartCount": restarts}]
    return p


def test_backoff_limit_counts_container_restarts_of_running_pods():
    c = ctx(job("PyTorchJob", "j", Master=1, Worker=1, run_policy={"backoffLimit": 3}))
    assert not run_policy.past_backoff_limit(c, [running_pod("master", 1), running_pod("worker", 1)], requeues=0)
    assert run_policy.past_backoff_limit(c, [running_pod("master", 2), running_pod("worker", 1)], requeues=0)
    never = ctx(job("PyTorchJob", "j", Master=1, Worker=1, restart="Never", run_policy={"backoffLimit": 1}))
    assert not run_policy.past_backoff_limit(never, [running_pod("master", 5)], requeues=0)
    zero = ctx(job("PyTorchJob", "j", Master=1, run_policy={"backoffLimit": 0}))
    assert run_policy.past_backoff_limit(zero, [running_pod("master", 1)], requeues=0)


def test_backoff_limit_new_failures_trigger():
    c = ctx(job("PyTorchJob", "j", Master=1, Worker=1, restart="Never", run_policy={"backoffLimit": 0}),
            {"replicaStatuses": {"Master": {"active": 1}, "Worker": {}}})
    assert run_policy.failure_message(c, [pod("master", 0, "Running"), pod("worker", 0, "Failed")], requeues=0) == \
        "Job j has failed because it has reached the specified backoff limit"
    already = ctx(job("PyTorchJob", "j", Master=1, Worker=1, restart="Never", run_policy={"backoffLimit": 0}),
                  {"replicaStatuses": {"Worker": {"failed": 1}}})
    assert run_policy.failure_message(already, [pod("master", 0, "Running"), pod("worker", 0, "Failed")], requeues=0) is None


def test_active_deadline_from_start_time():
    body = job("PyTorchJob", "j", Master=1, run_policy={"activeDeadlineSeconds": 60})
    assert run_policy.deadline_remaining(ctx(body, {"startTime": "2024-05-01T11:59:30Z"})) == 30
    assert run_policy.failure_message(ctx(body, {"startTime": "2024-05-01T11:59:00Z"}), [], requeues=0) == \
        "Job j has failed because it was active longer than specified deadline"
    assert run_policy.deadline_remaining(ctx(job("PyTorchJob", "j", Master=1), {"startTime": "x"})) is None


def test_ttl_after_completion():
    body = job("PyTorchJob", "j", Master=1, run_policy={"ttlSecondsAfterFinished": 100})
    assert run_policy.ttl_remaining(body, {"completionTime": "2024-05-01T11:59:00Z"}, T0) == 40
    assert run_policy.ttl_remaining(body, {}, T0) is None


@pytest.mark.parametrize("policy,finished,kept", [
    ("None", True, {"r", "p", "s", "f"}), ("Running", True, {"s", "f"}), ("All", True, set()), ("None", False, set())])
def test_clean_pod_policy(policy, finished, kept):
    pods = [pod("worker", i, phase, name=n) for i, (n, phase) in enumerate(
        [("r", "Running"), ("p", "Pending"), ("s", "Succeeded"), ("f", "Failed")])]
    deleted = {p["metadata"]["name"] for p in run_policy.pods_to_clean(pods, policy, finished=finished)}
    assert {"r", "p", "s", "f"} - deleted == kept


@pytest.mark.parametrize("policy,finished,kept", [
    # "gone" lost its pod to a cleanup cut short (controller killed between the two deletes)
    ("None", True, {"r", "s", "gone", "ending"}), ("Running", True, {"s"}), ("All", True, set()),
    ("None", False, set())])
def test_services_follow_their_pods_and_orphaned_ones_go(policy, finished, kept):
    pods = [pod("worker", 0, "Running", name="r"), pod("worker", 1, "Succeeded", name="s"),
            pod("worker", 2, "Running", name="ending")]
    pods[2]["metadata"]["deletionTimestamp"] = "2024-05-01T11:59:00Z"
    services = [{"metadata": {"name": n}} for n in ("r", "s", "gone", "ending")]
    services.append({"metadata": {"name": "going", "deletionTimestamp": "2024-05-01T11:59:00Z"}})
    cleaned = run_policy.pods_to_clean(pods, policy, finished=finished)
    deleted = {s["metadata"]["name"] for s in run_policy.services_to_clean(services, pods, cleaned, policy, finished=finished)}
    assert "going" not in deleted  # already terminating: no second delete
    assert {"r", "s", "gone", "ending"} - deleted == kept


def test_managed_elsewhere():
    def managed_by(value):
        return {"spec": {"runPolicy": {"managedBy": value}}}

    for kind in ("PyTorchJob", "JAXJob", "MPIJob", None):
        assert run_policy.managed_elsewhere(managed_by("kueue.x-k8s.io/multikueue"), kind)
        assert not run_policy.managed_elsewhere(managed_by("kubeflow.org/training-operator"), kind)
        assert not run_policy.managed_elsewhere({"spec": {}}, kind)
    # a value upstream's webhook refuses is a validation failure for the webhook kinds (issue 20) ...
    assert not run_policy.managed_elsewhere(managed_by("kueue.x-k8s.io/other-controller"), "PyTorchJob")
    assert not run_policy.managed_elsewhere(managed_by(""), "TFJob")
    # ... while MPIJob, which upstream checks in no webhook, is skipped for any other manager, as upstream
    assert run_policy.managed_elsewhere(managed_by("kueue.x-k8s.io/other-controller"), "MPIJob")
    assert run_policy.managed_elsewhere(managed_by(""), "MPIJob")


# --- events ---------------------------------------------------------------------------------------


def test_event_correlation_repeats_similar_threshold_and_per_object_rate_limit():
    """Which Event an event joins (controller.runtime.event_correlator); nothing is refused any more."""
    clock = Clock()
    cor = Correlator(window=60, similar=3, burst=4, refill=0.1, clock=clock)
    none = lambda key: False  # noqa: E731 - nothing pending
    own = cor.route("uid", "Normal", "R", "m", none, pressure=False)
    assert own == ("uid", "Normal", "R", "m")
    cor.record(own, Sent("e", "ns", 1, "t", (), 0, clock()))
    assert cor.route("uid", "Normal", "R", "m", none, pressure=False) == own  # a repeat: that Event's count
    assert cor.route("uid", "Normal", "R", "m2", none, pressure=False)[3] == "m2"
    assert cor.route("uid", "Normal", "R", "m3", none, pressure=False)[3] == "m3"
    combined = ("uid", "Normal", "R", None)
    assert cor.route("uid", "Normal", "R", "m4", none, pressure=False) == combined  # past 3 similar messages
    assert cor.route("uid", "Normal", "X", "x1", none, pressure=True) == ("uid", "Normal", "X", None)  # queue behind
    # the spam filter: 4 own Events (m, m2, m3 took 3), then the rest combined until a token refills
    assert cor.route("uid", "Normal", "Y", "y1", none, pressure=False)[3] == "y1"
    assert cor.route("uid", "Normal", "Y", "y2", none, pressure=False)[3] is None
    clock.t += 10
    assert cor.route("uid", "Normal", "Z", "z1", none, pressure=False)[3] == "z1"
    clock.t += 61  # past the window: the repeat is an Event of its own again, not a PATCH
    assert cor.written(own) is None
