"""Pod status changes are batched per job (manager.POD_UPDATE_BATCH), as kube-controller-
manager's Job controller batches them: the pods of a job that start or exit together cost
one pass and one status write. Creates, deletes and deletion marks still queue the job at
once, because expectations wait on them."""

from __future__ import annotations

from typing import Any

from controller_kit import job, wait_for

from controller.jobs.kinds import select
from controller.manager import POD_UPDATE_BATCH, Manager
from foundation.cluster.kube import PODS, SERVICES, WRITE_VERBS
from controller.runtime.workqueue import WorkQueue


def pod(name: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"u-{name}", "ownerReferences": [
        {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "j", "uid": "ju", "controller": True}]}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": "Running"}}


def routing_manager() -> Manager:
    """The event routing of a Manager, without a client or informers."""
    mgr = Manager.__new__(Manager)
    mgr.kinds = {k.name: k for k in select("pytorch")}
    mgr._by_operator = {k.facts.operator_name: k for k in mgr.kinds.values()}
    mgr.queue = WorkQueue()
    from controller.runtime.expectations import Expectations

    mgr.expectations = Expectations()
    mgr.pod_update_batch = POD_UPDATE_BATCH
    return mgr


def test_a_pods_status_change_queues_its_job_after_the_batch_and_creates_and_deletes_at_once() -> None:
    mgr = routing_manager()
    try:
        handle = mgr._child_handler(PODS)
        handle("MODIFIED", pod("j-worker-0"), pod("j-worker-0"))
        handle("MODIFIED", pod("j-worker-1"), pod("j-worker-1"))
        assert len(mgr.queue) == 0 and mgr.queue.pending_delayed() == 1  # both folded into one wait
        handle("ADDED", None, pod("j-worker-2"))
        assert len(mgr.queue) == 1  # at once: an expectation may be waiting for it
        assert mgr.queue.get(timeout=1) == "PyTorchJob/ns/j"
        assert mgr.queue.pending_delayed() == 0  # the pass reads every change so far
        mgr.queue.done("PyTorchJob/ns/j")
        handle("MODIFIED", pod("j-worker-0"), pod("j-worker-0", deleting=True))
        handle("DELETED", pod("j-worker-1"), None)
        assert len(mgr.queue) == 1 and mgr.queue.pending_delayed() == 0
    finally:
        mgr.queue.shutdown()


def test_a_services_change_is_not_batched() -> None:
    mgr = routing_manager()
    try:
        mgr._child_handler(SERVICES)("MODIFIED", pod("j-worker-0"), pod("j-worker-0"))
        assert len(mgr.queue) == 1 and mgr.queue.pending_delayed() == 0
    finally:
        mgr.queue.shutdown()


def test_pods_of_a_job_that_start_together_cost_one_status_write(cluster, manager) -> None:
    manager.pod_update_batch = 3.0  # wide, so a slow machine still patches every pod inside it
    cluster.apply(job("PyTorchJob", "tog", Master=1, Worker=3))
    names = {"tog-master-0", "tog-worker-0", "tog-worker-1", "tog-worker-2"}
    cluster.wait_pods(names)
    wait_for(lambda: (cluster.get_job("PyTorchJob", "tog") or {}).get("status", {}).get("replicaStatuses"),
             what="the first status")
    wait_for(lambda: manager.queue.pending_delayed() == 0 and len(manager.queue) == 0
             and not (manager.held and manager.held.pending()), what="a quiet controller")
    before = sum(n for (verb, res), n in manager.client.snapshot().items()
                 if verb in WRITE_VERBS and res.endswith("pytorchjobs/status"))
    cluster.run_all(*sorted(names))
    cluster.wait_condition("PyTorchJob", "tog", "Running")
    wait_for(lambda: manager.queue.pending_delayed() == 0 and len(manager.queue) == 0, what="the batch")
    written = sum(n for (verb, res), n in manager.client.snapshot().items()
                  if verb in WRITE_VERBS and res.endswith("pytorchjobs/status")) - before
    assert written == 1, f"{written} status writes for 4 pods going Running together"
    statuses = cluster.get_job("PyTorchJob", "tog")["status"]["replicaStatuses"]
    assert statuses["Master"]["active"] == 1 and statuses["Worker"]["active"] == 3
