"""A job resumed while the pods of its suspension still terminate re-runs (controller.jobs.runs).

The session control plane has no kubelet, so these tests play it: every pod is bound to a
node (pods/binding), which makes the API server delete it gracefully, as a real cluster
does: `deletionTimestamp` set, the pod kept, still `Running`, until the kubelet is done.
Here the test is the kubelet and says when each old pod is gone (a delete with grace 0).
Upstream v1.9.4 fails such a job ("1 Master replica(s) failed": a Running pod being
deleted counts as failed); tests/parity shows it side by side on kwok.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from controller_kit import PODS_FIRST, Cluster, job, running_manager, wait_for

from controller.jobs import runs
from controller.jobs.kinds import KINDS, job_resource
from controller.runtime.informer import Informer
from foundation.cluster.kube import PODS
from testworld import stages

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

NODE = "node-of-the-pretend-kubelet"


# ---------------------------------------------------------------------------------- the pure part
def pod(name: str, *, marked: bool = False, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if marked:
        meta["annotations"] = {runs.MARK: runs.SUSPENDED}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:30Z"
    return {"metadata": meta, "status": {"phase": "Running"}}


def test_only_marked_pods_are_of_a_previous_run() -> None:
    behind_our_back = pod("j-worker-0", deleting=True)  # deleted by someone else: counts as upstream counts it
    suspended = pod("j-master-0", marked=True, deleting=True)
    current, previous = runs.split([behind_our_back, suspended, pod("j-worker-1")])
    assert [p["metadata"]["name"] for p in current] == ["j-worker-0", "j-worker-1"]
    assert list(previous) == ["j-master-0"]
    assert runs.to_mark([behind_our_back, suspended]) == [behind_our_back]
    assert runs.mark_patch(behind_our_back) == {
        "metadata": {"uid": "uid-j-worker-0", "annotations": {runs.MARK: runs.SUSPENDED}}}


# ---------------------------------------------------------------------------------- the pretend kubelet
def bind(cluster: Cluster, name: str) -> None:
    """Schedule the pod as kube-scheduler would; a bound pod is deleted gracefully."""
    cluster.client.call("POST", PODS, verb="create", namespace=cluster.namespace, name=name, sub="binding",
                        body={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                              "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}})


def start(cluster: Cluster, names: set[str]) -> dict[str, str]:
    """Bind and run each pod; their uids."""
    for name in sorted(names):
        bind(cluster, name)
        cluster.set_phase(name, "Running")
    return {name: p["metadata"]["uid"] for name, p in cluster.pods().items()}


def kubelet_done(cluster: Cluster, name: str) -> None:
    """The containers have stopped: the kubelet removes the pod (a delete with grace 0)."""
    cluster.client.call("DELETE", PODS, verb="delete", namespace=cluster.namespace, name=name,
                        body={"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})


def suspend(cluster: Cluster, kind: str, name: str, value: bool) -> None:
    cluster.client.patch(job_resource(KINDS[kind]), cluster.namespace, name, {"spec": {"runPolicy": {"suspend": value}}})


@dataclass
class Record:
    """Every status the job went through and every pod event, in order, from the test's own watches."""
    statuses: list[dict[str, Any]] = field(default_factory=list)
    pods: list[tuple[str, str, str]] = field(default_factory=list)  # (event, name, uid)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mark(self) -> tuple[int, int]:
        with self.lock:
            return len(self.statuses), len(self.pods)

    def statuses_since(self, mark: tuple[int, int]) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.statuses[mark[0]:])

    def pods_since(self, mark: tuple[int, int]) -> list[tuple[str, str, str]]:
        with self.lock:
            return list(self.pods[mark[1]:])


@contextmanager
def recording(cluster: Cluster, kind: str) -> Iterator[Record]:
    record = Record()

    def on_job(etype: str, old: Any, new: Any) -> None:
        if new is not None:
            with record.lock:
                record.statuses.append(new.get("status") or {})

    def on_pod(etype: str, old: Any, new: Any) -> None:
        obj = new or old
        if etype in ("ADDED", "DELETED"):
            with record.lock:
                record.pods.append((etype, obj["metadata"]["name"], obj["metadata"]["uid"]))

    informers = [Informer(cluster.client, job_resource(KINDS[kind]), handler=on_job, namespace=cluster.namespace),
                 Informer(cluster.client, PODS, handler=on_pod, namespace=cluster.namespace)]
    for informer in informers:
        informer.start()
    try:
        for informer in informers:
            assert informer.wait_synced(30)
        yield record
    finally:
        for informer in informers:
            informer.stop()


def counted(status: dict[str, Any], field_name: str) -> int:
    return sum(int(s.get(field_name, 0)) for s in (status.get("replicaStatuses") or {}).values())


def condition(status: dict[str, Any], ctype: str) -> str | None:
    return next((c["status"] for c in status.get("conditions") or [] if c["type"] == ctype), None)


def replaced(cluster: Cluster, name: str, old_uid: str) -> dict[str, Any] | None:
    current = cluster.pods().get(name)
    return current if current is not None and current["metadata"]["uid"] != old_uid else None


# ---------------------------------------------------------------------------------- the scenario
DECIDER = {"PyTorchJob": "master-0", "MPIJob": "launcher", "TFJob": "chief-0"}
SHAPES = {"PyTorchJob": {"Master": 1, "Worker": 1}, "MPIJob": {"Launcher": 1, "Worker": 1},
          "TFJob": {"Chief": 1, "Worker": 1}}


def suspend_then_resume(cluster: Cluster, manager_of: Any, kind: str, name: str, delay: float, *,
                        restart_between: bool = False) -> None:
    """Run, suspend, resume `delay` s later while the old pods terminate; then play the
    kubelet (old pods end one by one) and check the new run, its pods and every status."""
    shape = SHAPES[kind]
    # Never with backoffLimit 0: a single old pod counted as failed fails the job, through
    # the status rule or the backoff rule
    cluster.apply(job(kind, name, restart="Never", run_policy={"backoffLimit": 0}, **shape))
    names = {f"{name}-worker-0", f"{name}-{DECIDER[kind]}"}
    cluster.wait_pods(names)
    old = start(cluster, names)
    cluster.wait_condition(kind, name, "Running")
    with recording(cluster, kind) as record:
        since = record.mark()
        suspend(cluster, kind, name, True)
        cluster.wait_condition(kind, name, "Suspended")
        terminating = wait_for(lambda: (lambda pods: pods if set(pods) == names and all(
            p["metadata"].get("deletionTimestamp") and runs.is_previous(p) for p in pods.values()) else None)(
                cluster.pods()), what="old pods terminating, marked")
        assert {n: p["metadata"]["uid"] for n, p in terminating.items()} == old
        assert manager_of.current().client.snapshot()[("patch", "/pods")] == len(names)  # the mark's cost
        if restart_between:
            manager_of.restart()
        time.sleep(delay)  # the resume comes this long after the suspension: the point under test
        suspend(cluster, kind, name, False)
        cluster.wait_condition(kind, name, "Suspended", status="False")
        # the pass that resumed saw the old pods and created nothing under their names; a
        # kubelet stopping a container now reports its SIGTERM exit, which is another event
        # (and another pass) for the controller
        decider, mgr = f"{name}-{DECIDER[kind]}", manager_of.current()
        cluster.set_phase(decider, "Failed", exit_code=143)
        wait_for(lambda: ((mgr.pod_informer.get(cluster.namespace, decider) or {}).get("status") or {}).get("phase")
                 == "Failed", what="the controller's cache showing the exit")
        passes = mgr.reconciles  # and a pass that surely began after that: one for a touch of the job
        cluster.client.patch(job_resource(KINDS[kind]), cluster.namespace, name,
                             {"metadata": {"annotations": {"test.trainforge.dev/touch": "1"}}})
        wait_for(lambda: mgr.reconciles > passes, what="a pass over the exited old pod")
        assert {n: p["metadata"]["uid"] for n, p in cluster.pods().items()} == old  # none replaced yet
        now = cluster.get_job(kind, name)["status"]  # type: ignore[index]
        assert condition(now, "Failed") is None and counted(now, "failed") == 0, now  # upstream: Failed here
        # the kubelet is done with the old pods, one at a time: each index gets its new pod then
        for index_name in sorted(names):
            others = {n: old[n] for n in names if n != index_name and cluster.pods()[n]["metadata"]["uid"] == old[n]}
            kubelet_done(cluster, index_name)
            new = wait_for(lambda n=index_name: replaced(cluster, n, old[n]), what=f"a new {index_name}")
            assert not new["metadata"].get("deletionTimestamp") and not runs.is_previous(new)
            for other, uid in others.items():  # an index whose old pod still terminates waits
                assert cluster.pods()[other]["metadata"]["uid"] == uid, f"{other} replaced while its old pod lived"
        before_running = record.mark()
        start(cluster, names)
        cluster.wait_condition(kind, name, "Running")
        cluster.set_phase(decider, "Succeeded")
        if kind != "MPIJob":
            cluster.set_phase(f"{name}-worker-0", "Succeeded")
        done = cluster.wait_condition(kind, name, "Succeeded")
        statuses = record.statuses_since(since)
        pod_events = record.pods_since(since)
    assert condition(done["status"], "Failed") is None
    # no status from the suspension on counted an old pod: nothing failed, nothing active
    # before the new pods ran (the first statuses seen are the running job's, being suspended)
    first = next(i for i, s in enumerate(statuses) if condition(s, "Suspended") == "True")
    early, statuses = statuses[first: before_running[0] - since[0]], statuses[first:]
    assert early and [counted(s, "active") for s in early] == [0] * len(early), early
    assert [counted(s, "failed") for s in statuses] == [0] * len(statuses), statuses
    assert all(condition(s, "Failed") is None and condition(s, "Restarting") is None for s in statuses)
    # each index: its old pod gone, then exactly one new pod
    for pod_name in names:
        seen = [(e, uid) for e, n, uid in pod_events if n == pod_name]
        assert seen[0] == ("DELETED", old[pod_name]), seen
        assert [e for e, _ in seen[1:]] == ["ADDED"], seen


class Managers:
    """The test's controller, restartable (a new process would start from a relist too)."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        self.kubeconfig, self.namespace = kubeconfig, namespace
        self._cm: Any = None
        self._mgr: Any = None

    def start(self) -> None:
        self._cm = running_manager(self.kubeconfig, self.namespace, pool_size=48, pods_first=PODS_FIRST)
        self._mgr = self._cm.__enter__()

    def stop(self) -> None:
        if self._cm is not None:
            self._cm.__exit__(None, None, None)
            self._cm = self._mgr = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def current(self) -> Any:
        return self._mgr


@pytest.fixture
def managers(control_plane, namespace: str) -> Iterator[Managers]:
    mgrs = Managers(str(control_plane.kubeconfig), namespace)
    mgrs.start()
    try:
        yield mgrs
    finally:
        mgrs.stop()


@pytest.mark.parametrize("delay", [0.1, 1.0, 3.0])
def test_a_pytorchjob_resumed_while_its_pods_terminate_reruns_to_succeeded(cluster, managers, delay) -> None:
    suspend_then_resume(cluster, managers, "PyTorchJob", "rs", delay)


@pytest.mark.parametrize("kind", ["MPIJob", "TFJob"])
def test_other_kinds_resumed_while_their_pods_terminate_rerun(cluster, managers, kind) -> None:
    suspend_then_resume(cluster, managers, kind, "rk", 0.1)


def test_the_mark_outlives_the_controller_a_new_one_resumes_the_job_cleanly(cluster, managers) -> None:
    """The controller that suspended the job is gone; a new one (cache from a fresh list) resumes it."""
    suspend_then_resume(cluster, managers, "PyTorchJob", "rr", 0.1, restart_between=True)


@pytest.mark.parametrize("policy, outcome", [("Never", "Failed"), ("OnFailure", "Restarting")])
def test_a_pod_deleted_behind_the_controllers_back_still_counts_as_upstream_counts_it(cluster, managers, policy,
                                                                                     outcome) -> None:
    """Not ours to ignore: a Running pod someone else deletes is a failed replica (semantics §6)."""
    cluster.apply(job("PyTorchJob", "bb", restart=policy, Master=1, Worker=1))
    names = {"bb-master-0", "bb-worker-0"}
    cluster.wait_pods(names)
    old = start(cluster, names)
    cluster.wait_condition("PyTorchJob", "bb", "Running")
    cluster.client.delete(PODS, cluster.namespace, "bb-worker-0")  # graceful: it terminates, still Running
    status = cluster.wait_condition("PyTorchJob", "bb", outcome)["status"]
    assert status["replicaStatuses"]["Worker"].get("failed") == 1
    message = next(c["message"] for c in status["conditions"] if c["type"] == outcome)
    assert message == ("PyTorchJob bb is failed because 1 Worker replica(s) failed." if outcome == "Failed" else
                       "PyTorchJob bb is restarting because 1 Worker replica(s) failed.")
    worker = cluster.pods()["bb-worker-0"]
    assert worker["metadata"]["uid"] == old["bb-worker-0"] and not runs.is_previous(worker)
    if policy == "OnFailure":  # the same name comes back once the old pod is gone, as upstream
        kubelet_done(cluster, "bb-worker-0")
        wait_for(lambda: replaced(cluster, "bb-worker-0", old["bb-worker-0"]), what="the worker recreated")


def test_a_marked_pod_left_alive_by_a_cut_short_suspension_is_replaced_not_counted(cluster, managers) -> None:
    """A controller that died between marking a pod and deleting it, and a job resumed
    before the next one ran: the mark is on a live pod. It is deleted, never counted,
    and its index gets a new pod once it is gone."""
    cluster.apply(job("PyTorchJob", "cs", restart="Never", run_policy={"backoffLimit": 0}, Master=1, Worker=1))
    names = {"cs-master-0", "cs-worker-0"}
    cluster.wait_pods(names)
    old = start(cluster, names)
    cluster.wait_condition("PyTorchJob", "cs", "Running")
    cluster.client.patch(PODS, cluster.namespace, "cs-worker-0", runs.mark_patch(cluster.pods()["cs-worker-0"]))
    wait_for(lambda: cluster.pods()["cs-worker-0"]["metadata"].get("deletionTimestamp"), what="the marked pod deleted")
    kubelet_done(cluster, "cs-worker-0")
    new = wait_for(lambda: replaced(cluster, "cs-worker-0", old["cs-worker-0"]), what="a new worker")
    assert not runs.is_previous(new)
    status = cluster.get_job("PyTorchJob", "cs")["status"]  # type: ignore[index]
    assert condition(status, "Failed") is None and counted(status, "failed") == 0
    cluster.set_phase("cs-worker-0", "Running")
    cluster.set_phase("cs-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "cs", "Succeeded")


# ---------------------------------------------------------------------------------- on kwok
def test_on_kwok_a_job_resumed_while_kwok_keeps_its_pods_terminating_reruns(pod_world, pod_namespace) -> None:
    """No hand-written pod status: kube-scheduler binds, kwok runs the pods and keeps each
    deleted one Terminating (still Running) for `terminate-seconds`, as a kubelet does."""
    body = job("PyTorchJob", "kw", restart="Never", Master=1, Worker=1)
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["metadata"] = {"annotations": {stages.RUN_SECONDS: "forever", stages.TERMINATE_SECONDS: "4"}}
    names = {"kw-master-0", "kw-worker-0"}
    client = pod_world.client
    cluster = Cluster(client, pod_namespace)
    with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST):
        cluster.apply(body)
        cluster.wait_condition("PyTorchJob", "kw", "Running", timeout=60)
        old = {n: p["metadata"]["uid"] for n, p in cluster.pods().items()}
        assert set(old) == names
        with recording(cluster, "PyTorchJob") as record:
            since = record.mark()
            suspend(cluster, "PyTorchJob", "kw", True)
            cluster.wait_condition("PyTorchJob", "kw", "Suspended")
            held = cluster.pods()  # kwok keeps them for 4 s
            assert {n: (p["metadata"]["uid"], bool(p["metadata"].get("deletionTimestamp")), p["status"]["phase"])
                    for n, p in held.items()} == {n: (uid, True, "Running") for n, uid in old.items()}
            suspend(cluster, "PyTorchJob", "kw", False)
            for n in names:
                wait_for(lambda n=n: (lambda p: p is not None and p["status"].get("phase") == "Running" and not
                                      p["metadata"].get("deletionTimestamp"))(replaced(cluster, n, old[n])),
                         timeout=60, what=f"a new {n} running")
            for n in ("kw-worker-0", "kw-master-0"):
                cluster.client.patch(PODS, pod_namespace, n, {"metadata": {"annotations": {
                    stages.RUN_SECONDS: "0", stages.EXIT_CODE: "0"}}})
            cluster.wait_condition("PyTorchJob", "kw", "Succeeded", timeout=60)
            statuses = record.statuses_since(since)
            pod_events = record.pods_since(since)
    assert all(condition(s, "Failed") is None and counted(s, "failed") == 0 for s in statuses), statuses
    for n in names:
        assert [e for e, name, _ in pod_events if name == n] == ["DELETED", "ADDED"]
