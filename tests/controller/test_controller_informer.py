"""Informers on the real API server: resume watches from the last resourceVersion when
the server ends them (timeoutSeconds), relist on 410 Gone without losing changes, and
keep working across a kube-apiserver restart."""

from __future__ import annotations

import threading
import time

import pytest
from controller_kit import PODS_FIRST, Cluster, job, settled, wait_for

from controller.jobs.kinds import select
from controller.manager import Manager
from controller.runtime.informer import Informer
from foundation.cluster.kube import PODS, Client

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too


def pod(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {"probe": "yes"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, etype, old, new) -> None:
        with self.lock:
            self.seen.append((etype, (new or old)["metadata"]["name"]))

    def names(self, etype: str) -> set[str]:
        with self.lock:
            return {n for t, n in self.seen if t == etype}


def test_watch_resumes_after_server_timeout_without_relisting(control_plane, cluster: Cluster) -> None:
    client = Client.connect(str(control_plane.kubeconfig))
    rec = Recorder()
    informer = Informer(client, PODS, namespace=cluster.namespace, label_selector="probe=yes", handler=rec, watch_timeout=1)
    informer.start()
    try:
        assert informer.wait_synced(10)
        for i in range(3):
            cluster.client.create(PODS, cluster.namespace, pod(f"p{i}"))
            time.sleep(1.2)  # each watch lasts 1-2 s: creations straddle reconnects
        wait_for(lambda: rec.names("ADDED") == {"p0", "p1", "p2"}, what="all ADDED")
        assert informer.relists == 1
        assert client.snapshot()[("watch", "/pods")] >= 2
        assert {p["metadata"]["name"] for p in informer.items()} == {"p0", "p1", "p2"}
    finally:
        informer.stop()
        client.close()


def test_expired_watch_relists_and_delivers_what_changed_meanwhile(control_plane, cluster: Cluster) -> None:
    client = Client.connect(str(control_plane.kubeconfig))
    rec = Recorder()
    informer = Informer(client, PODS, namespace=cluster.namespace, label_selector="probe=yes", handler=rec, watch_timeout=60)
    cluster.client.create(PODS, cluster.namespace, pod("before"))
    informer.start()
    try:
        assert informer.wait_synced(10)
        wait_for(lambda: informer._resp is not None, what="watch open")
        informer._resp.shutdown()  # drop the connection; the informer reconnects after a short backoff
        time.sleep(0.05)
        informer._rv = "1"  # ... from a version that etcd compaction will have removed
        cluster.client.delete(PODS, cluster.namespace, "before")
        cluster.client.create(PODS, cluster.namespace, pod("during"))
        _compact_etcd(control_plane, cluster)
        control_plane.restart_apiserver()  # a fresh watch cache answers "too old resource version" (410)
        wait_for(lambda: informer.relists >= 2, what="relist after 410")
        wait_for(lambda: "during" in rec.names("ADDED") and "before" in rec.names("DELETED"), what="changes delivered")
        assert {p["metadata"]["name"] for p in informer.items()} == {"during"}
    finally:
        informer.stop()
        client.close()


def test_relist_announces_a_version_we_wrote_that_no_watch_delivered(control_plane, cluster: Cluster) -> None:
    """A status write is cached at once (remember); its watch event is what requeues the job.
    If the watch breaks before delivering it, the relist sees the same resourceVersion as the
    cache and must still announce it: a fault run had two finished jobs never cleaned up."""
    client = Client.connect(str(control_plane.kubeconfig))
    rec = Recorder()
    # not started: the test drives the lists itself, as the informer's thread would after a 410
    informer = Informer(client, PODS, namespace=cluster.namespace, label_selector="probe=yes", handler=rec)
    try:
        cluster.client.create(PODS, cluster.namespace, pod("mine"))
        informer._relist()
        assert rec.seen == [("ADDED", "mine")]
        informer.remember(cluster.client.patch(PODS, cluster.namespace, "mine", {"metadata": {"labels": {"x": "1"}}}))
        informer._relist()
        informer._relist()
        assert rec.seen == [("ADDED", "mine"), ("MODIFIED", "mine")]  # announced, and once
    finally:
        client.close()


def test_a_pod_the_watch_never_showed_does_not_hold_its_job_after_a_relist(cluster: Cluster, manager) -> None:
    """A pod created and deleted while the watch was down (a fault run restarting
    kube-apiserver) is in no event and no list: after the relist its job runs again at once,
    not after the 300 s expectation timeout."""
    cluster.apply(job("PyTorchJob", "gh", Master=1))
    cluster.wait_pods({"gh-master-0"})
    cluster.wait_condition("PyTorchJob", "gh", "Created")
    manager.expectations.expect_create("PyTorchJob/" + cluster.namespace + "/gh", [("pods", "gh-vanished")])
    since = manager.reconciles
    cluster.run_all("gh-master-0")
    settled(manager, since)
    assert ("Running", "True", "PyTorchJobRunning") not in cluster.conditions("PyTorchJob", "gh")  # still waiting
    manager.pod_informer._relist()  # what the informer's thread does after a 410 or a long outage
    cluster.wait_condition("PyTorchJob", "gh", "Running", timeout=10)


def _compact_etcd(control_plane, cluster: Cluster) -> None:
    import json
    import urllib.request

    revision = int(cluster.client.list(PODS, namespace=cluster.namespace)["metadata"]["resourceVersion"])
    request = urllib.request.Request(f"{control_plane.etcd_url}/v3/kv/compaction",
                                     data=json.dumps({"revision": revision}).encode(), method="POST")
    urllib.request.urlopen(request, timeout=10).read()


def test_controller_survives_an_apiserver_restart(control_plane, cluster: Cluster) -> None:
    client = Client.connect(str(control_plane.kubeconfig))
    mgr = Manager(client, select("pytorch"), namespace=cluster.namespace, workers=2, watch_timeout=60, pods_first=PODS_FIRST)
    mgr.start()
    try:
        cluster.apply(job("PyTorchJob", "a", Master=1))
        cluster.wait_pods({"a-master-0"})
        control_plane.restart_apiserver(downtime=1.0)
        cluster.apply(job("PyTorchJob", "b", Master=1))
        cluster.wait_pods({"a-master-0", "b-master-0"}, timeout=30)
        cluster.set_phase("a-master-0", "Succeeded")
        cluster.wait_condition("PyTorchJob", "a", "Succeeded", timeout=30)
    finally:
        mgr.stop()
        client.close()
