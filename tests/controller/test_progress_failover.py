"""A burst of progress reports while the leader is SIGKILLed: nothing acknowledged is lost.

Two `python -m controller --leader-elect` replicas (the install's ClusterRole, Lease Role and
progress Role only; fast Lease timings) serve the endpoint on two loopback ports, as two
pods behind the Service. Four pods of one job report as fast as they can through whichever
replica answers (a 503 from the standby sends the sender to the other, as the client
library does), each report one step further than the last. Mid-burst the leader is
SIGKILLed; the standby takes over and the burst goes on. Judged from the API server alone:
the job's stored report is one that was sent, whole, and no older than any report that was
answered 200 (stored), whichever replica answered it; no answer but 200, 202 and 503.
"""

from __future__ import annotations

import base64
import itertools
import random
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from controller_kit import job, wait_for
from fault_kit import ControllerProcess, controller_identity, lease_holder
from progress_kit import SERVICEACCOUNTS, Poster, mint, report

from controller.jobs.kinds import KINDS, job_resource
from controller.progress.certs import SECRET, SECRETS
from foundation.cluster import errors
from foundation.cluster.kube import PODS, Client
from foundation.progress.endpoint import path
from testworld.controlplane import ControlPlane, free_port
from testworld.world import World

pytestmark = pytest.mark.both_orders
REPO = Path(__file__).resolve().parents[2]
CRDS = REPO / "controller" / "install" / "crds"
PROGRESS_ROLE = REPO / "controller" / "install" / "progress-role.yaml"
NS = "ha"
PT = job_resource(KINDS["PyTorchJob"])


@pytest.fixture
def world(envtest_assets) -> Iterator[World]:
    world = World([], upstream_crds=False, crds=[CRDS], plane=ControlPlane(assets=envtest_assets))
    world.start()
    try:
        yield world
    finally:
        world.stop()


def _replica(name: str, kubeconfig: Path, log_dir: Path) -> tuple[ControllerProcess, int]:
    proc = ControllerProcess(name, kubeconfig=kubeconfig, namespace=NS, log_dir=log_dir)
    port = free_port()
    proc.argv += ["--progress-bind-address", f"127.0.0.1:{port}", "--progress-interval", "1s"]
    return proc.start(), port


def test_a_burst_of_reports_across_a_leader_kill_loses_nothing_acknowledged(world: World, tmp_path) -> None:
    world.kubectl("create", "namespace", NS)
    user, kubeconfig = controller_identity(world.plane, NS)
    world.kubectl("apply", "-n", NS, "-f", str(PROGRESS_ROLE))
    world.kubectl("create", "rolebinding", "-n", NS, "progress", "--role=train-controller-progress", f"--user={user}")
    admin = Client.connect(str(world.kubeconfig))
    replicas = [_replica(f"r{i}", kubeconfig, tmp_path) for i in range(2)]
    try:
        admin.create(SERVICEACCOUNTS, NS, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "trainer"}})
        body = job("PyTorchJob", "ha", restart="OnFailure", Master=1, Worker=3)
        for spec in body["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["serviceAccountName"] = "trainer"
        admin.create(PT, NS, body)
        names = ["ha-master-0", "ha-worker-0", "ha-worker-1", "ha-worker-2"]
        pods = wait_for(lambda: (lambda p: p if set(names) <= set(p) else None)(
            {p["metadata"]["name"]: p for p in admin.list(PODS, namespace=NS)["items"]}), what="the job's pods")
        tokens = [mint(admin, pods[n]) for n in names]
        ca = base64.b64decode(admin.get(SECRETS, NS, SECRET)["data"]["ca.crt"])
        posters = [Poster(port, ca) for _, port in replicas]

        counter, lock = itertools.count(1), threading.Lock()
        sent: dict[int, dict[str, Any]] = {}
        answers: list[tuple[int, int]] = []  # (seq, code)
        stop = threading.Event()

        def sender(token: str) -> None:
            rng = random.Random()
            while not stop.is_set():
                with lock:  # a report's step and its time go together, so later steps are later reports
                    seq = next(counter)
                    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
                    sent[seq] = report(seq % 101, eta=100000 - seq, metrics={"seq": str(seq)}, when=when)
                code = 0
                for poster in rng.sample(posters, 2):  # the Service picks a replica; a 503 tries the other
                    try:
                        code = poster.post(path(NS, "pytorchjobs", "ha"), token, sent[seq])[0]
                    except OSError:
                        code = 0  # the killed replica: connection refused
                    if code not in (0, 503):
                        break
                with lock:
                    answers.append((seq, code))
                time.sleep(0.01)

        threads = [threading.Thread(target=sender, args=(t,), daemon=True) for t in tokens]
        for thread in threads:
            thread.start()
        wait_for(lambda: sum(1 for _, c in answers if c == 200) >= 2, timeout=60, what="reports stored by the leader")
        holder, _ = lease_holder(admin, NS)
        leader = next(proc for proc, _ in replicas if proc.owns(holder))
        killed_after = len(answers)
        leader.kill()
        wait_for(lambda: (lambda h: h and not leader.owns(h))(lease_holder(admin, NS)[0]), timeout=60,
                 what="the standby taking over")
        wait_for(lambda: any(c == 200 for _, c in answers[killed_after:]), timeout=60,
                 what="the new leader storing a report")
        time.sleep(1.0)  # a little more of the burst under the new leader
        stop.set()
        for thread in threads:
            thread.join(30)
        acked = [seq for seq, code in answers if code == 200]
        assert {code for _, code in answers} <= {0, 200, 202, 503}, sorted({c for _, c in answers})
        assert acked and any(seq > max(s for s, _ in answers[:killed_after]) for seq in acked)

        def stored_seq() -> int:
            status = admin.get(PT, NS, "ha")["status"]["trainerStatus"]
            return int({m["name"]: m["value"] for m in status["metrics"]}["seq"])

        # pending (202) reports are written within the interval (1 s); the newest acknowledged is the floor
        wait_for(lambda: stored_seq() >= max(acked), timeout=10, what="every acknowledged report kept")
        survivor = next(proc for proc, _ in replicas if proc is not leader)
        time.sleep(1.5)  # what the survivor still held is written by now (interval 1 s)
        status = admin.get(PT, NS, "ha")["status"]["trainerStatus"]
        seq = stored_seq()
        want = sent[seq]["trainerStatus"]
        assert status["progressPercentage"] == want["progressPercentage"]
        assert status["estimatedRemainingSeconds"] == want["estimatedRemainingSeconds"]
        assert status["lastUpdatedTime"] == want["lastUpdatedTime"][:19] + "Z"
        assert seq >= max(acked)
        assert survivor.alive, survivor.log_text()[-2000:]
        print(f"\n{len(answers)} reports, {len(acked)} stored at once (200), "
              f"{sum(1 for _, c in answers if c == 202)} coalesced (202), "
              f"{sum(1 for _, c in answers if c in (0, 503))} unanswered by any leader; stored step {seq}, "
              f"newest acknowledged {max(acked)}")
    finally:
        for proc, _ in replicas:
            proc.terminate()
        admin.close()
