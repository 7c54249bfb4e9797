"""`train-controller --pods-first` (controller.runtime.burst): during a burst of pod creates the
headless Services and plain status writes wait until it is over; everything else as upstream.

The Held unit tests drive its clock by hand; the rest run the controller on the real API
server and read the order of the creates from the server's audit log.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from controller_kit import job, running_manager, settled, wait_for

from controller.manager import Manager
from foundation.cluster import errors
from controller.runtime.burst import Held
from controller.runtime.expectations import Expectations
from foundation.cluster.kube import EVENTS, SERVICES, Client, Resource
from controller.runtime.writes import Writes, job_key

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def held(clock: Clock, **kwargs: Any) -> Held:
    return Held(quiet=0.2, max_hold=5.0, senders=2, clock=clock, **kwargs)


def test_a_held_create_waits_for_the_pods_in_flight_and_then_the_quiet() -> None:
    clock, sent = Clock(), threading.Event()
    h = held(clock)
    try:
        h.pod_started()
        h.create(sent.set)
        assert h.in_burst() and not sent.wait(0.3)
        h.pod_answered()  # no pod in flight, but answered just now: still the burst
        assert h.in_burst() and not sent.wait(0.3)
        clock.now += 0.25
        assert not h.in_burst()
        assert sent.wait(5) and wait_for(lambda: h.pending() == 0, timeout=5)
    finally:
        h.close()


def test_a_never_ending_burst_cannot_hold_a_write_longer_than_max_hold() -> None:
    clock, sent = Clock(), threading.Event()
    h = held(clock)
    try:
        h.pod_started()  # never answered
        h.create(sent.set)
        clock.now += 4.9
        assert not sent.wait(0.3)
        clock.now += 0.2
        assert sent.wait(5)
    finally:
        h.close()


def test_a_later_status_replaces_the_held_one_keeps_its_place_and_is_what_the_next_pass_reads() -> None:
    clock, released = Clock(), []
    h = held(clock)
    try:
        h.pod_started()
        h.status("PyTorchJob/ns/a", {"v": 1}, released.append)
        clock.now += 4.0
        h.status("PyTorchJob/ns/a", {"v": 2}, released.append)
        h.status("PyTorchJob/ns/b", {"v": 1}, released.append)
        assert h.held_status("PyTorchJob/ns/a") == {"v": 2} and h.pending() == 2
        clock.now += 1.1  # a's first hold is 5.1 s old: its job is queued; b waits
        wait_for(lambda: released == ["PyTorchJob/ns/a"], timeout=5)
        rounds = h.rounds
        wait_for(lambda: h.rounds >= rounds + 2, timeout=5)  # the sender looked twice more
        assert released == ["PyTorchJob/ns/a"]  # released once, not again on every tick
        # until the job's pass writes it, the held status is what that pass starts from
        assert h.held_status("PyTorchJob/ns/a") == {"v": 2} and h.pending() == 2
        h.drop_status("PyTorchJob/ns/a")  # the pass wrote it
        h.status("PyTorchJob/ns/b", {"v": 2}, released.append)
        clock.now += 4.0  # b's hold kept its place (held at +4.0 s, now +9.1 s): released too
        wait_for(lambda: released == ["PyTorchJob/ns/a", "PyTorchJob/ns/b"], timeout=5)
        h.status("PyTorchJob/ns/b", {"v": 3}, released.append)  # held again by a pass inside a burst:
        rounds = h.rounds
        wait_for(lambda: h.rounds >= rounds + 2, timeout=5)  # a released hold starts afresh, so the
        assert released == ["PyTorchJob/ns/a", "PyTorchJob/ns/b"]  # sender's next looks release nothing
    finally:
        h.close()
    assert h.pending() == 0  # a stopping controller forgets held statuses (the next leader recomputes)


def test_events_wait_until_the_held_creates_are_sent_not_only_the_burst() -> None:
    clock, gate, sent = Clock(), threading.Event(), threading.Event()
    h = held(clock)
    try:
        assert not h.settling()  # nothing held, no pod in flight: Events go at once
        h.pod_started()
        h.create(lambda: (gate.wait(5), sent.set()))
        h.pod_answered()
        clock.now += 0.25
        assert not h.in_burst() and h.settling()  # the burst is over, its Service is being sent
        gate.set()
        assert sent.wait(5) and wait_for(lambda: not h.settling(), timeout=5)
    finally:
        h.close()


def test_close_sends_the_held_creates_even_in_a_burst() -> None:
    clock, done = Clock(), []
    h = held(clock)
    h.pod_started()
    h.create(lambda: done.append("create"))
    h.status("k", "s", done.append)
    h.close()
    assert done == ["create"] and h.pending() == 0


# ---------------------------------------------------------------------- on the API server
def test_a_service_held_longer_than_the_expectations_timeout_is_still_awaited_then_sent_once(
        control_plane, cluster) -> None:
    """The 10,000-job run's 24,242 duplicate Service creates: a Service held through a pod burst
    longer than the expectations' timeout must keep its job waiting (a pass that stopped waiting
    created it again); once sent, its wait times out as any create's."""
    clock, waits = Clock(), Clock()
    h = held(clock)
    client = Client.connect(str(control_plane.kubeconfig), pool_size=4)
    expectations = Expectations(timeout=300, clock=waits)
    emitted: list[Any] = []
    writes = Writes(client, expectations, emit=lambda ctx, events: emitted.extend(events),
                    retry=lambda key: None, held=h)
    ctx = SimpleNamespace(key=job_key("PyTorchJob", cluster.namespace, "h"), creates=None, events=[],
                          admit_pod=lambda pod: True)  # what the write path needs of a pass (writes.Pass)
    svc = {"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "h-worker-0", "namespace": cluster.namespace},
           "spec": {"clusterIP": "None", "selector": {"a": "b"}}}
    key = ctx.key
    try:
        h.pod_started()  # a pod burst: the Service is held
        writes.create(ctx, SERVICES, svc)
        waits.now += 705  # the 10,000-job burst
        assert not expectations.satisfied(key) and cluster.objects(SERVICES) == {}
        h.pod_answered()
        clock.now += 1  # the burst is over: the Service goes, and its wait starts now
        wait_for(lambda: set(cluster.objects(SERVICES)) == {"h-worker-0"}, what="the held Service sent")
        wait_for(lambda: h.pending() == 0, what="the send answered")
        assert not expectations.satisfied(key) and expectations.next_deadline(key) == 300
        waits.now += 300
        assert expectations.satisfied(key)
        assert emitted == [("Normal", "SuccessfulCreateService", "Created service: h-worker-0")]
    finally:
        h.close()
        client.close()


POLICIES = Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy",
                    namespaced=False)
BINDINGS = Resource("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
                    "ValidatingAdmissionPolicyBinding", namespaced=False)


@pytest.fixture
def pods_first(control_plane, namespace: str) -> Iterator[Manager]:
    """The controller with --pods-first; a burst ends after 2 s without a pod create, so a
    slow machine cannot split the test's burst in two."""
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=True,
                         quiet=2.0) as mgr:
        yield mgr


def _creates(control_plane, namespace: str, resource: str) -> list[str]:
    """requestReceivedTimestamps of successful creates of `resource` in `namespace`, sorted."""
    return sorted(e["requestReceivedTimestamp"] for e in control_plane.audit_events()
                  if e.get("verb") == "create" and e.get("stage") == "ResponseComplete"
                  and (e.get("objectRef") or {}).get("resource") == resource
                  and (e.get("objectRef") or {}).get("namespace") == namespace
                  and (e.get("responseStatus") or {}).get("code") == 201)


def test_a_burst_creates_every_pod_before_any_service_then_everything_upstream_writes(
        control_plane, cluster, pods_first) -> None:
    names = [f"b{i}" for i in range(5)]
    threads = [threading.Thread(target=cluster.apply, args=(job("PyTorchJob", n, Master=1, Worker=2),)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pods = {f"{n}-{rt}" for n in names for rt in ("master-0", "worker-0", "worker-1")}
    cluster.wait_pods(pods)
    wait_for(lambda: set(cluster.objects(SERVICES)) == pods, what="every Service")
    for n in names:
        created = cluster.wait_condition("PyTorchJob", n, "Created")
        statuses = created["status"]["replicaStatuses"]
        assert set(statuses) == {"Master", "Worker"} and all(s["selector"] for s in statuses.values())
    pod_times = _creates(control_plane, cluster.namespace, "pods")
    service_times = _creates(control_plane, cluster.namespace, "services")
    assert len(pod_times) == 15 and len(service_times) == 15
    assert pod_times[-1] < service_times[0], "a Service was created during the pod burst"
    # each Service create is still its own Event on its job, as upstream records it
    wait_for(lambda: sum(e["reason"] == "SuccessfulCreateService"
                         for e in cluster.objects(EVENTS).values()) == 15, what="15 SuccessfulCreateService Events")
    cluster.run_all(*pods)
    for n in names:
        cluster.wait_condition("PyTorchJob", n, "Running")
    wait_for(lambda: pods_first.held.pending() == 0 and len(pods_first.queue) == 0, what="nothing held")
    settled(pods_first, 0)
    before = pods_first.client.writes()
    for n in names:
        pods_first.process(job_key("PyTorchJob", cluster.namespace, n))
    assert pods_first.client.writes() == before  # a settled job still costs nothing


def _deny_services(cluster) -> tuple[str, Any]:
    """A ValidatingAdmissionPolicy that refuses every Service in the test's namespace; returns
    its name and a function that lifts it. Waits until the API server enforces it."""
    name = f"deny-services-{cluster.namespace}"[:63]
    api = "admissionregistration.k8s.io/v1"
    cluster.client.create(POLICIES, None, {
        "apiVersion": api, "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail", "validations": [{"expression": "false", "message": "no Services (test)"}],
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                         "operations": ["CREATE"], "resources": ["services"]}]}}})
    cluster.client.create(BINDINGS, None, {
        "apiVersion": api, "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"], "matchResources": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": cluster.namespace}}}}})
    probe = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "probe"},
             "spec": {"clusterIP": "None", "ports": [{"port": 1}]}}

    def enforced() -> bool:
        try:
            cluster.client.create(SERVICES, cluster.namespace, probe)
        except errors.Invalid:
            return True
        cluster.client.delete(SERVICES, cluster.namespace, "probe")
        return False

    wait_for(enforced, interval=0.2, what="the policy enforced")

    def lift() -> None:
        for res in (BINDINGS, POLICIES):
            try:
                cluster.client.delete(res, None, name)
            except errors.NotFound:
                pass
    return name, lift


def test_a_held_service_create_that_fails_is_an_event_and_the_job_retries(control_plane, cluster, pods_first) -> None:
    _, lift = _deny_services(cluster)
    try:
        cluster.apply(job("PyTorchJob", "q", Master=1, Worker=1))
        cluster.wait_pods({"q-master-0", "q-worker-0"})
        failed = wait_for(lambda: [e for e in cluster.objects(EVENTS).values()
                                   if e["reason"] == "FailedCreateService" and e["type"] == "Warning"],
                          what="a FailedCreateService Event")
        assert "no Services (test)" in failed[0]["message"]
        assert cluster.objects(SERVICES) == {}
    finally:
        lift()
    wait_for(lambda: set(cluster.objects(SERVICES)) == {"q-master-0", "q-worker-0"}, timeout=90,
             what="the Services, once the policy is gone")
    cluster.wait_condition("PyTorchJob", "q", "Created")
    assert set(cluster.pods()) == {"q-master-0", "q-worker-0"}  # the retries made no second pod
