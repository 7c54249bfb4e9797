"""Fault runs on the real control plane: controller replicas SIGKILLed at random points,
kube-apiserver restarted (or SIGKILLed) mid-run, watches expired (410 Gone), status writes
raced (409), pods deleted behind the controller's back, jobs restarting as a whole. Each run plays whole job lifecycles and is
judged from the API server alone (fault_kit.verify): right terminal condition for every
job, no pod or service created more often than planned (audit log), no orphans, and the
controller's identity (bound to the install ClusterRole only) never refused.

`make fault` runs the long versions (`pytest -m fault`); the smoke run below is unmarked
so `make test` keeps a short version of the kill test.
"""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
from fault_kit import (
    FAST_LEASE,
    PT,
    Audit,
    ControllerProcess,
    Figures,
    Killer,
    Kubelet,
    Plan,
    Replicas,
    controller_identity,
    history,
    iter_logs,
    lease_holder,
    make_plans,
    metric,
    run_lifecycles,
    settle,
    terminal,
    verify,
)

from foundation.cluster import errors
from foundation.cluster.kube import PODS, Client

LOGS = Path(__file__).resolve().parents[2] / "build" / "fault-logs"
SEED = int(os.environ.get("FAULT_SEED", "0")) or random.SystemRandom().randrange(1, 10**6)


class Run:
    """One fault scenario: identity, replicas, kubelet, audit, figures; `finish` judges it."""

    def __init__(self, plane, namespace: str, scenario: str, *, replicas: int = 2,
                 lease: tuple[str, str, str] = FAST_LEASE, log_level: str = "DEBUG") -> None:
        self.plane, self.namespace = plane, namespace
        # kept after the run (build/ is not tracked): a failure is read from the replicas' own logs
        self.log_dir = LOGS / f"{time.strftime('%Y%m%d-%H%M%S')}-{scenario}-{namespace}"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.user, kubeconfig = controller_identity(plane, namespace)
        self.client = Client.connect(str(plane.kubeconfig), pool_size=8)
        self.audit = Audit(plane, namespace)
        self.figures = Figures(scenario)
        self.rng = random.Random(f"{SEED}-{scenario}")
        self.replicas = Replicas(replicas, lambda name: ControllerProcess(
            name, kubeconfig=kubeconfig, namespace=namespace, log_dir=self.log_dir, lease=lease, log_level=log_level))
        self.kubelet: Kubelet | None = None
        self.outages: list[tuple[str, str]] = []  # audit timestamps around kube-apiserver restarts
        self.started = time.monotonic()

    def restart_apiserver(self, *, kill: bool = False, **kwargs: float) -> None:
        """kube-apiserver stopped (SIGTERM; with `kill`, SIGKILL: no request in flight is
        answered, no watch closed cleanly) and started again on the same etcd."""
        began = audit_now()
        if kill:
            # testworld's ManagedProcess: restart_apiserver's stop finds it dead and only relaunches
            process = self.plane._apiserver.popen
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            self.figures.apiserver_kills += 1
        self.plane.restart_apiserver(**kwargs)
        time.sleep(2.0)  # the RBAC caches fill shortly after /readyz
        self.outages.append((began, audit_now()))
        self.figures.apiserver_restarts += 1

    def start(self, plans: list[Plan]) -> Run:
        self.replicas.start(stagger=0.3)
        self.kubelet = Kubelet(self.client, self.namespace, plans).start()
        self.plans = plans
        return self

    def lifecycles(self, plans: list[Plan], **kwargs) -> None:
        """run_lifecycles, and if jobs get stuck, what the audit log and the replicas' logs say of them."""
        try:
            run_lifecycles(self.client, self.namespace, plans, self.kubelet, **kwargs)
        except AssertionError as exc:
            stuck = [p.name for p in plans if f"'{p.name}'" in str(exc)]
            jobs = {j["metadata"]["name"]: j for j in self.client.list(PT, namespace=self.namespace)["items"]}
            pods = {p["metadata"]["name"]: p for p in self.client.list(PODS, namespace=self.namespace)["items"]}
            lines = history(self.audit.events(), plans, pods, jobs, stuck)
            raise AssertionError("\n".join([str(exc), *lines, *iter_logs(self.replicas.procs, stuck),
                                            f"replica logs: {self.log_dir}"])) from exc

    def finish(self, figures: list[str], *, expect_exits: bool = True) -> None:
        try:
            settle(self.client, self.namespace, self.plans)
            problems = verify(self.client, self.namespace, self.plans, self.audit, user=self.user, figures=self.figures,
                              seen=self.kubelet.uids if self.kubelet is not None else None, outages=self.outages)
            if self.kubelet is not None and self.kubelet.mixed_samples:
                self.figures.mixed_attempts += len(self.kubelet.mixed_samples)
                problems += self.kubelet.mixed_samples[:20]
            self.figures.wall = time.monotonic() - self.started
            self.figures.podgc_deletes = self.kubelet.force_deleted if self.kubelet is not None else 0
            self.figures.lost_lease_exits = sum(1 for _, code in self.replicas.unexpected_exits() if code == 1)
            crashes = [(n, c) for n, c in self.replicas.unexpected_exits() if c != 1 or not expect_exits]
            if crashes:
                problems.append(f"controller processes exited on their own: {crashes}")
            figures.append(self.figures.line() + f" seed={SEED}")
            print(self.figures.line())
            assert not problems, "\n".join(problems[:80] + list(iter_logs(self.replicas.procs, problems))
                                            + [f"replica logs: {self.log_dir}"])
        finally:
            self.close()

    def close(self) -> None:
        if self.kubelet is not None:
            self.kubelet.stop()
        codes = self.replicas.stop()
        self.client.close()
        assert all(code == 0 for code in codes), f"graceful stop of the last replicas exited {codes}"


def killed_at_random_points(plane, namespace: str, figures: list[str], *, lifecycles: int,
                            concurrency: int, pause: tuple[float, float], dwell: tuple[float, float], scenario: str,
                            min_kills: int) -> Figures:
    run = Run(plane, namespace, scenario)
    plans = make_plans(lifecycles, run.rng, dwell=dwell)
    run.start(plans)
    killer = Killer(run.replicas, run.client, namespace, run.rng, pause=pause).start()
    try:
        run.lifecycles(plans, concurrency=concurrency, timeout=60 + lifecycles * 8)
    finally:
        killer.stop()
    run.figures.kills, run.figures.leader_kills, run.figures.takeovers = killer.kills, killer.leader_kills, killer.takeovers
    run.finish(figures)
    assert killer.kills >= min_kills, f"only {killer.kills} kills: the run was shorter than the kill schedule"
    assert len(killer.takeovers) == killer.leader_kills, "every leader kill was followed by a takeover"
    assert max(killer.takeovers, default=0) < 8.0, f"takeovers {killer.takeovers} (lease 2s, retry 0.3s)"
    return run.figures


def test_controller_killed_at_random_points_smoke(control_plane, namespace, figures) -> None:
    """The short version `make test` runs: 5 lifecycles, the leader killed at least twice."""
    killed_at_random_points(control_plane, namespace, figures, lifecycles=5, concurrency=5,
                            pause=(0.3, 1.2), dwell=(2.5, 5.0), scenario="kill-smoke", min_kills=2)


@pytest.mark.fault
def test_controller_killed_at_random_points(fault_plane, fault_namespace, figures) -> None:
    killed_at_random_points(fault_plane, fault_namespace, figures, lifecycles=60, concurrency=5,
                            pause=(0.1, 2.5), dwell=(0.3, 2.5), scenario="sigkill", min_kills=8)


@pytest.mark.fault
def test_whole_job_restarts_while_the_controller_and_the_apiserver_are_killed(fault_plane, fault_namespace,
                                                                              figures) -> None:
    """Jobs of restart scope job (worker-0 exits 137 once: every pod comes again as one attempt)
    while the leader (now and then the standby) is SIGKILLed at random and kube-apiserver is
    SIGKILLed three times at random points and started again. Judged as every run, and: each
    restart counted once on its job's revision, no pod of attempt 1 created before every pod of
    attempt 0 was deleted (audit log), none seen beside one (the kubelet's samples)."""
    run = Run(fault_plane, fault_namespace, "whole-restart")
    plans = [Plan(f"w{i:02d}", "whole", workers=1 + i % 3, clean=("None", "All", "Running")[i % 3],
                  dwell=run.rng.uniform(0.3, 2.0)) for i in range(30)]
    run.rng.shuffle(plans)
    run.start(plans)
    killer = Killer(run.replicas, run.client, fault_namespace, run.rng, pause=(0.3, 2.5)).start()
    due = sorted(run.rng.sample(range(2, 27), 3))
    done: list[int] = []

    def during(finished: int) -> None:
        for at in due:
            if finished >= at and at not in done:
                done.append(at)
                run.restart_apiserver(kill=True, downtime=run.rng.uniform(0.2, 1.5))

    try:
        run.lifecycles(plans, concurrency=6, timeout=420, during=during)
    finally:
        killer.stop()
    run.figures.kills, run.figures.leader_kills, run.figures.takeovers = killer.kills, killer.leader_kills, killer.takeovers
    run.finish(figures)
    assert run.figures.apiserver_kills == 3 and run.figures.whole_restarts == len(plans)
    assert killer.kills >= 4, f"only {killer.kills} kills: the run was shorter than the kill schedule"


@pytest.mark.fault
def test_apiserver_restart_mid_run(fault_plane, fault_namespace, figures) -> None:
    """Two restarts of kube-apiserver while jobs run: the leader keeps its Lease (15 s > the
    outage), its watches recover, and every job's status catches up."""
    run = Run(fault_plane, fault_namespace, "apiserver-restart", lease=("15s", "10s", "2s"))
    plans = make_plans(20, run.rng, dwell=(0.5, 2.0))
    run.start(plans)
    restarted: list[int] = []

    def during(finished: int) -> None:
        for at in (4, 12):
            if finished >= at and at not in restarted:
                restarted.append(at)
                run.restart_apiserver(downtime=1.0)

    run.lifecycles(plans, concurrency=6, timeout=240, during=during)
    leader = run.replicas.holder(lease_holder(run.client, fault_namespace)[0])
    run.figures.relists = int(sum(metric(p.metrics(), "trainforge_informer_relists_total") for p in run.replicas.live()))
    run.finish(figures, expect_exits=False)
    assert run.figures.apiserver_restarts == 2
    assert leader is not None and leader.name == "ctl-1", "the first leader survived both restarts"
    assert run.replicas.exits == [], "no replica exited: watches and the Lease recovered in-process"


@pytest.mark.fault
def test_expired_watches_relist_without_losing_events(fault_plane, fault_namespace, figures) -> None:
    """The controller is frozen (SIGSTOP) while jobs change, etcd is compacted and
    kube-apiserver restarted; thawed, its watches resume from versions that are gone
    (410), it relists, and every change made meanwhile reaches the jobs."""
    run = Run(fault_plane, fault_namespace, "watch-expired", replicas=1, lease=("15s", "10s", "2s"))
    plans = [Plan("a", "succeed", 1, "None", dwell=0), Plan("b", "delete", 1, "None", dwell=0),
             Plan("c", "succeed", 1, "None", dwell=0)]
    run.plans = plans
    run.replicas.start()  # one replica; the test plays the kubelet by hand
    client, ns = run.client, fault_namespace
    for plan in plans[:2]:
        client.create(PT, ns, plan.body())
    pods = wait_pods(client, ns, {p for plan in plans[:2] for p in plan.pods})
    helper = Kubelet(client, ns, [])
    for pod in pods.values():
        helper.set_phase(pod, "Running")
    wait(lambda: all(running(client, ns, plan.name) for plan in plans[:2]), "jobs Running")
    proc = run.replicas.live()[0]
    proc.signal(signal.SIGSTOP)
    try:
        for name in plans[0].pods:
            helper.set_phase(pods[name], "Succeeded")
        client.delete(PODS, ns, "b-worker-0")
        client.create(PT, ns, plans[2].body())
        compact_etcd(fault_plane, client, ns)
        run.restart_apiserver()
    finally:
        proc.signal(signal.SIGCONT)
    wait(lambda: terminal(client.get(PT, ns, "a")) == "Succeeded", "a Succeeded after the relist", timeout=60)
    fresh = wait_pods(client, ns, {*plans[0].pods, *plans[1].pods, *plans[2].pods}, timeout=60)
    for plan in plans[1:]:
        for name in plan.pods:
            if fresh[name]["status"].get("phase") == "Pending":
                helper.set_phase(fresh[name], "Running")
        for name in sorted(plan.pods, key=lambda n: "-master-" in n):
            helper.set_phase(client.get(PODS, ns, name), "Succeeded")
    for plan in plans:
        wait(lambda plan=plan: terminal(client.get(PT, ns, plan.name)) == "Succeeded", f"{plan.name} Succeeded", timeout=60)
    log = proc.log_text()
    assert "watch expired (410), relisting" in log, log[-3000:]
    run.figures.relists = int(metric(proc.metrics(), "trainforge_informer_relists_total"))
    assert run.figures.relists > 3, "each informer listed once at start; the 410 made at least one list again"
    run.finish(figures, expect_exits=False)
    assert run.replicas.exits == []


@pytest.mark.fault
def test_status_conflicts_are_retried_never_lost(fault_plane, fault_namespace, figures) -> None:
    """A competing writer bumps every job's resourceVersion every few milliseconds, so the
    controller's status writes (resourceVersion preconditioned) keep meeting 409s; every
    status still lands, and the writer's annotations survive."""
    run = Run(fault_plane, fault_namespace, "status-409")
    plans = make_plans(16, run.rng, dwell=(0.5, 1.5))
    run.start(plans)
    stop = threading.Event()
    bumps: dict[str, int] = {}

    def bump() -> None:
        writer = Client.connect(str(fault_plane.kubeconfig), pool_size=2)
        try:
            while not stop.is_set():
                for job in writer.list(PT, namespace=fault_namespace)["items"]:
                    name = job["metadata"]["name"]
                    bumps[name] = bumps.get(name, 0) + 1
                    try:
                        writer.patch(PT, fault_namespace, name, {"metadata": {"annotations": {"fault/bump": str(bumps[name])}}})
                    except errors.ApiError:
                        bumps[name] -= 1
                stop.wait(0.005)
        finally:
            writer.close()

    thread = threading.Thread(target=bump, daemon=True)
    thread.start()
    try:
        run.lifecycles(plans, concurrency=8, timeout=240)
    finally:
        stop.set()
        thread.join(10)
    jobs = {j["metadata"]["name"]: j for j in run.client.list(PT, namespace=fault_namespace)["items"]}
    for plan in plans:
        status = jobs[plan.name]["status"]["replicaStatuses"]
        if plan.condition == "Succeeded":
            assert (status["Master"].get("succeeded"), status["Worker"].get("succeeded")) == (1, plan.workers), (plan, status)
        assert jobs[plan.name]["metadata"]["annotations"]["fault/bump"] == str(bumps[plan.name])
    run.finish(figures)
    assert run.figures.status_conflicts > 0, "the competing writer never made a status write conflict"


@pytest.mark.fault
def test_pods_deleted_behind_the_controllers_back_are_recreated_once(fault_plane, fault_namespace, figures) -> None:
    """Worker pods are deleted by someone else while the leader is killed at random
    points: each is recreated exactly once (audit log), by whichever replica leads."""
    run = Run(fault_plane, fault_namespace, "deleted-behind-back")
    plans = [Plan(f"d{i:02d}", "delete", workers=1 + i % 2, clean=("None", "All", "Running")[i % 3],
                  dwell=run.rng.uniform(0.2, 2.0)) for i in range(12)]
    run.start(plans)
    killer = Killer(run.replicas, run.client, fault_namespace, run.rng, pause=(0.5, 3.0)).start()
    try:
        run.lifecycles(plans, concurrency=6, timeout=240)
    finally:
        killer.stop()
    run.figures.kills, run.figures.leader_kills, run.figures.takeovers = killer.kills, killer.leader_kills, killer.takeovers
    assert run.kubelet is not None and run.kubelet.deleted_behind_back == len(plans)
    run.finish(figures)


# ---------------------------------------------------------------------------- helpers
def wait(predicate, what: str, *, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except errors.ApiError:
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_pods(client: Client, ns: str, names: set[str], *, timeout: float = 30.0) -> dict:
    def check():
        pods = {p["metadata"]["name"]: p for p in client.list(PODS, namespace=ns)["items"]}
        return pods if names <= set(pods) else None
    return wait(check, f"pods {sorted(names)}", timeout=timeout)


def running(client: Client, ns: str, name: str) -> bool:
    conditions = (client.get(PT, ns, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Running" and c["status"] == "True" for c in conditions)


def audit_now() -> str:
    """Now, as the audit log writes its timestamps (microseconds, UTC)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def compact_etcd(plane, client: Client, ns: str) -> None:
    revision = int(client.list(PODS, namespace=ns)["metadata"]["resourceVersion"])
    request = urllib.request.Request(f"{plane.etcd_url}/v3/kv/compaction",
                                     data=json.dumps({"revision": revision}).encode(), method="POST")
    urllib.request.urlopen(request, timeout=10).read()
