"""Leader election and graceful shutdown on the real API server.

The elector in-process (fast timings: 2 s lease, 1.5 s renew deadline, 0.3 s retry)
for the Lease's fields and each rule of client-go's algorithm; then `train-controller`
itself, two replicas as processes: one reconciles while the other waits, SIGTERM
finishes, releases and hands over at once, a replica that loses the Lease exits 1. The
long kill runs are in tests/faults.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from controller_kit import PODS_FIRST, job, wait_for
from fault_kit import LEASE_ID, ControllerProcess, controller_identity, metric

from controller.__main__ import duration
from controller.jobs.kinds import select
from controller.manager import Manager
from foundation.cluster import errors, kube
from foundation.cluster.connection import Connection
from foundation.cluster.kube import Client
from controller.runtime.leader import LEASES, LeaderConfig, LeaderElector, micro_time

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
DEPLOYMENT = Path(__file__).resolve().parents[2] / "controller" / "install" / "deployment.yaml"


class Candidate:
    """An in-process elector with fast timings that records when it lost."""

    def __init__(self, client: Client, namespace: str, name: str) -> None:
        self.lost_at: float | None = None
        self.elector = LeaderElector(client, LeaderConfig(namespace, "lease", f"{name}_x", lease_duration=2,
                                                          renew_deadline=1.5, retry_period=0.3), on_lost=self._lost)
        self.elector.start()

    def _lost(self) -> None:
        self.lost_at = time.monotonic()

    def wait_leading(self, timeout: float = 10.0) -> bool:
        stop = threading.Event()
        timer = threading.Timer(timeout, stop.set)
        timer.start()
        try:
            return self.elector.wait_leading(stop)
        finally:
            timer.cancel()


@pytest.fixture
def candidates(control_plane, namespace):
    made: list[Candidate] = []
    client = Client.connect(str(control_plane.kubeconfig))

    def make(name: str) -> Candidate:
        made.append(Candidate(client, namespace, name))
        return made[-1]

    yield make
    for cand in made:
        cand.elector.stop(release=False)
    client.close()


def lease(cluster, name: str = "lease") -> dict:
    return cluster.client.get(LEASES, cluster.namespace, name)["spec"]


def steal(cluster, name: str = "lease") -> float:
    """Write the Lease as another holder's, as a rival elector would; when the write was sent.

    The leader renews between our read and our write now and then, and the API server refuses
    the stale write (Conflict): read again and write again, so the steal always happens and
    what follows it is asserted on every run (the test used to skip when it lost that race)."""
    for _ in range(20):
        current = cluster.client.get(LEASES, cluster.namespace, name)
        current["spec"].update(holderIdentity="intruder", renewTime=micro_time(datetime.now(timezone.utc)))
        sent = time.monotonic()
        try:
            cluster.client.update(LEASES, current)
        except errors.Conflict:
            continue
        return sent
    raise AssertionError("the Lease changed under every one of 20 writes")


# ---------------------------------------------------------------------------- pure rules
@pytest.mark.parametrize("timings,message", [
    ((10, 10, 2), "lease duration must be greater than the renew deadline"),
    ((15, 2, 2), "renew deadline must be greater than 1.2 x the retry period"),
    ((0.5, 0.4, 0.1), "at least 1s"),
], ids=["renew deadline as long as the lease", "retry too slow for the deadline", "lease under a second"])
def test_timings_that_could_let_two_leaders_overlap_are_refused(timings, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        LeaderConfig("ns", "lease", "me", lease_duration=timings[0], renew_deadline=timings[1], retry_period=timings[2])


@pytest.mark.parametrize("text,seconds", [("15s", 15), ("1.5s", 1.5), ("300ms", 0.3), ("2m", 120), ("7", 7), ("1m30s", 90)])
def test_duration_flags_read_go_durations(text, seconds) -> None:
    assert duration(text) == pytest.approx(seconds)


def test_micro_time_is_rfc3339_with_microseconds() -> None:
    assert micro_time(datetime(2024, 5, 1, 12, 0, 3, 42, tzinfo=timezone.utc)) == "2024-05-01T12:00:03.000042Z"


# ---------------------------------------------------------------------------- the elector
def test_first_candidate_creates_the_lease_and_renews_it(cluster, candidates) -> None:
    a = candidates("a")
    assert a.wait_leading()
    first = lease(cluster)
    assert first["holderIdentity"] == "a_x"
    assert first["leaseDurationSeconds"] == 2
    assert first["leaseTransitions"] == 0
    assert MICRO.match(first["acquireTime"]) and first["renewTime"] == first["acquireTime"]
    later = wait_for(lambda: (lambda now: now if now["renewTime"] > first["renewTime"] else None)(lease(cluster)),
                     what="a renewal")
    assert later["acquireTime"] == first["acquireTime"]
    assert later["renewTime"] > first["renewTime"]


def test_standby_waits_while_the_leader_renews_and_takes_over_at_once_on_release(cluster, candidates) -> None:
    a = candidates("a")
    assert a.wait_leading()
    joined = time.monotonic()
    b = candidates("b")
    # b has watched the Lease for longer than its duration (2 s): only a's renewals keep it out
    wait_for(lambda: b.elector._observed_at - joined > 2.5, what="b watching for a whole lease")  # noqa: SLF001
    assert not b.elector.is_leader
    acquired = lease(cluster)["acquireTime"]
    a.elector.stop(release=True)
    released = time.monotonic()
    assert b.wait_leading(2.0)
    assert time.monotonic() - released < 1.0, "released: b need not wait for expiry"
    now = lease(cluster)
    assert (now["holderIdentity"], now["leaseTransitions"]) == ("b_x", 1)
    assert now["acquireTime"] > acquired


def test_standby_takes_over_when_the_leader_stops_renewing(cluster, candidates) -> None:
    a = candidates("a")
    assert a.wait_leading()
    b = candidates("b")
    wait_for(lambda: b.elector._observed_at > 0, what="b has seen a's Lease")  # noqa: SLF001
    died = time.monotonic()
    a.elector.stop(release=False)  # as SIGKILL: no release, the Lease must expire
    assert b.wait_leading(5.0)
    waited = time.monotonic() - died
    assert 1.2 < waited < 3.5, waited  # a lease duration after the last renewal b saw (+ retry jitter)
    assert lease(cluster)["leaseTransitions"] == 1


def test_leader_that_cannot_renew_gives_up_before_anyone_may_take_over(control_plane, cluster, candidates) -> None:
    a = candidates("a")
    assert a.wait_leading()
    def unreachable():
        cfg = kube.config_loader(str(control_plane.kubeconfig))()
        cfg.host = "https://127.0.0.1:1"  # nothing listens: every renew fails at once
        return cfg

    broken = Client(Connection(unreachable))
    a.elector.client = broken
    try:
        assert wait_for(lambda: a.lost_at, timeout=5, what="lease lost")
    finally:
        broken.close()
    since_renewal = a.lost_at - a.elector.renewed_at
    assert 1.5 <= since_renewal < 2.0, since_renewal  # after the renew deadline, before the lease expires
    assert not a.elector.is_leader


def test_leader_that_sees_another_holder_gives_up_at_once(cluster, candidates) -> None:
    a = candidates("a")
    assert a.wait_leading()
    stolen = steal(cluster)
    assert wait_for(lambda: a.lost_at, timeout=3, what="lease lost")
    assert a.lost_at - stolen < 1.0
    assert lease(cluster)["holderIdentity"] == "intruder", "a loser never writes the Lease again"


def test_stop_finishes_in_flight_reconciles_and_starts_no_new_ones(control_plane, cluster) -> None:
    client = Client.connect(str(control_plane.kubeconfig))
    mgr = Manager(client, select("pytorch"), namespace=cluster.namespace, workers=1, watch_timeout=60, pods_first=PODS_FIRST)
    started, finished = [], []
    inner = mgr.reconciler.reconcile

    def slow(key: str):
        started.append(key)
        time.sleep(0.6)
        result = inner(key)
        finished.append(key)
        return result

    mgr.reconciler.reconcile = slow  # type: ignore[method-assign]
    mgr.start()
    try:
        for name in ("one", "two", "three"):
            cluster.apply(job("PyTorchJob", name, Master=1))
        wait_for(lambda: started, what="a reconcile in flight")
    finally:
        mgr.stop()
        client.close()
    assert finished == started, "the in-flight reconcile finished; none started after stop"
    assert len(started) < 3


# ---------------------------------------------------------------------------- the CLI, two replicas
@pytest.fixture
def replicas(control_plane, namespace, tmp_path):
    _, kubeconfig = controller_identity(control_plane, namespace)
    made: list[ControllerProcess] = []

    def make(name: str) -> ControllerProcess:
        made.append(ControllerProcess(name, kubeconfig=kubeconfig, namespace=namespace, log_dir=tmp_path).start())
        return made[-1]

    yield make
    for proc in made:
        proc.terminate()


def leading(proc: ControllerProcess) -> bool:
    return metric(proc.metrics(), "leader_election_master_status") == 1 and proc.get("/readyz")[0] == 200


def test_two_replicas_one_reconciles_and_sigterm_hands_over_at_once(cluster, replicas) -> None:
    a = replicas("a")
    wait_for(lambda: leading(a), timeout=20, what="a leads and is ready")
    b = replicas("b")
    wait_for(lambda: b.get("/readyz")[0] == 200, timeout=20, what="b ready as a standby")
    assert b.get("/readyz?verbose")[1].splitlines()[1] == "[+]informers-synced-or-standby ok"
    assert b.get("/healthz") == (200, "ok")
    cluster.apply(job("PyTorchJob", "ha", Master=1, Worker=1))
    cluster.wait_pods({"ha-master-0", "ha-worker-0"}, timeout=20)
    standby = b.metrics()
    assert metric(standby, "leader_election_master_status") == 0
    assert metric(standby, "controller_runtime_reconcile_total") == 0
    assert metric(standby, "trainforge_api_requests_total", resource="/pods") == 0, "a standby does not even list"
    assert metric(a.metrics(), "trainforge_api_requests_total", verb="create", resource="/pods", code="201") == 2

    a.signal(signal.SIGTERM)
    wait_for(lambda: lease(cluster, LEASE_ID)["holderIdentity"].startswith("b_"), timeout=10, interval=0.02,
             what="b holds the Lease")
    assert a.popen.wait(10) == 0
    released = next(line for line in a.log_text().splitlines() if "released lease" in line)
    released_at = datetime.strptime(released[:23], "%Y-%m-%d %H:%M:%S,%f").astimezone(timezone.utc)
    acquired_at = datetime.strptime(lease(cluster, LEASE_ID)["acquireTime"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc)
    # the log line follows the write, so b may even be a little earlier
    assert -0.5 < (acquired_at - released_at).total_seconds() < 1.0, "released: b took over at its next retry"
    cluster.run_all("ha-master-0", "ha-worker-0")
    cluster.set_phase("ha-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "ha", "Succeeded", timeout=20)  # b reconciles now
    assert metric(b.metrics(), "leader_election_master_status") == 1


def test_replica_that_loses_the_lease_exits_1_at_once(cluster, replicas) -> None:
    a = replicas("a")
    wait_for(lambda: leading(a), timeout=20, what="a leads")
    steal(cluster, LEASE_ID)
    assert a.popen.wait(5) == 1
    assert "leader election lost; exiting" in a.log_text()


def test_install_deployment_runs_two_replicas_with_leader_election_and_probes(control_plane) -> None:
    deployment = yaml.safe_load(DEPLOYMENT.read_text())
    spec = deployment["spec"]
    container = spec["template"]["spec"]["containers"][0]
    assert spec["replicas"] == 2
    assert {"--leader-elect", "--metrics-bind-address=:8080", "--health-probe-bind-address=:8081",
            "--progress-bind-address=:10443"} <= set(container["args"])
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": 8080, "health": 8081,
                                                                          "progress": 10443}
    assert (container["livenessProbe"]["httpGet"], container["readinessProbe"]["httpGet"]) == (
        {"path": "/healthz", "port": "health"}, {"path": "/readyz", "port": "health"})
    env = {e["name"]: e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") for e in container["env"]}
    assert env["POD_NAMESPACE"] == "metadata.namespace", "the Lease lives in the controller's namespace"
    control_plane.kubectl("create", "namespace", "trainforge-system", check=False)
    control_plane.kubectl("apply", "--dry-run=server", "-f", str(DEPLOYMENT))
