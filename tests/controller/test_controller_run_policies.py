"""Restart and run policies on the real API server (issue 6, items 1-2): ExitCode /
OnFailure restarts by delete-and-recreate under the same name, permanent ExitCode
failures, both backoffLimit triggers, activeDeadlineSeconds, ttlSecondsAfterFinished,
cleanPodPolicy, suspend/resume and managedBy, asserting conditions, reasons, messages,
timestamps and which pods exist afterwards."""

from __future__ import annotations

import time

import pytest
from controller_kit import job, settled, wait_for
from test_controller_behaviour import events_of

from controller.jobs.conditions import parse_time
from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster.kube import PODS, SERVICES

PT = job_resource(KINDS["PyTorchJob"])


def last(current):
    c = current["status"]["conditions"][-1]
    return c["type"], c["status"], c["reason"], c["message"]


def recreated(cluster, name, old_uid):
    return wait_for(lambda: (lambda p: p if p and p["metadata"]["uid"] != old_uid else None)(cluster.pods().get(name)),
                    what=f"{name} recreated")


@pytest.mark.parametrize("policy,code", [("ExitCode", 137), ("OnFailure", 1), ("Always", 2)])
def test_retryable_failure_deletes_and_recreates_the_pod(cluster, manager, policy, code) -> None:
    cluster.apply(job("PyTorchJob", "rs", Master=1, Worker=1, restart=policy))
    pods = cluster.wait_pods({"rs-master-0", "rs-worker-0"})
    cluster.run_all(*pods)
    cluster.wait_condition("PyTorchJob", "rs", "Running")
    cluster.set_phase("rs-worker-0", "Failed", exit_code=code)
    new = recreated(cluster, "rs-worker-0", pods["rs-worker-0"]["metadata"]["uid"])
    assert new["metadata"]["labels"]["training.kubeflow.org/replica-index"] == "0"
    # Restarting replaces Running until the next pass sees the master running again
    # (upstream's condition rules make it transient); the Warning event stays.
    message = "job rs is restarting because Worker replica(s) failed."
    wait_for(lambda: ("Warning", "PyTorchJobRestarting", message) in events_of(cluster, "rs"), what="restart event")
    assert manager.client.snapshot()[("delete", "/pods")] == 1
    cluster.set_phase("rs-worker-0", "Running")
    running = cluster.wait_condition("PyTorchJob", "rs", "Running")
    assert [c["type"] for c in running["status"]["conditions"]] == ["Created", "Running"]


def test_exit_code_below_128_fails_the_job_permanently(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "ec", Master=1, Worker=1, restart="ExitCode"))
    pods = cluster.wait_pods({"ec-master-0", "ec-worker-0"})
    cluster.run_all(*pods)
    cluster.wait_condition("PyTorchJob", "ec", "Running")
    since = manager.reconciles
    cluster.set_phase("ec-worker-0", "Failed", exit_code=3)
    failed = cluster.wait_condition("PyTorchJob", "ec", "Failed")
    assert last(failed) == ("Failed", "True", "PyTorchJobFailed", 'job "ec" is failing because "Worker" replica(s) failed.')
    assert failed["status"]["completionTime"]
    settled(manager, since)
    assert cluster.pods()["ec-worker-0"]["metadata"]["uid"] == pods["ec-worker-0"]["metadata"]["uid"]  # kept (cleanPodPolicy None)


def test_never_policy_does_not_restart(cluster, manager) -> None:
    cluster.apply(job("TFJob", "nv", Worker=2))
    pods = cluster.wait_pods({"nv-worker-0", "nv-worker-1"})
    cluster.run_all(*pods)
    cluster.set_phase("nv-worker-1", "Failed", exit_code=137)
    cluster.wait_condition("TFJob", "nv", "Failed")
    assert cluster.pods()["nv-worker-1"]["metadata"]["uid"] == pods["nv-worker-1"]["metadata"]["uid"]


def test_backoff_limit_on_container_restarts(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "bo", Master=1, Worker=1, run_policy={"backoffLimit": 2}))
    pods = cluster.wait_pods({"bo-master-0", "bo-worker-0"})
    cluster.run_all(*pods)
    cluster.wait_condition("PyTorchJob", "bo", "Running")
    since = manager.reconciles
    cluster.set_phase("bo-worker-0", "Running", restarts=1)
    settled(manager, since)
    assert not any(c[0] == "Failed" for c in cluster.conditions("PyTorchJob", "bo"))
    cluster.set_phase("bo-master-0", "Running", restarts=1)
    failed = cluster.wait_condition("PyTorchJob", "bo", "Failed")
    assert last(failed) == ("Failed", "True", "PyTorchJobFailed",
                            "Job bo has failed because it has reached the specified backoff limit")
    assert [(c["type"], c["status"]) for c in failed["status"]["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Failed", "True")]
    assert set(cluster.pods()) == {"bo-master-0", "bo-worker-0"}  # v1.9.4: cleanPodPolicy None keeps them


def test_backoff_limit_zero_fails_on_the_first_new_pod_failure(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "b0", Master=1, Worker=1, restart="Never",
                      run_policy={"backoffLimit": 0, "cleanPodPolicy": "All"}))
    pods = cluster.wait_pods({"b0-master-0", "b0-worker-0"})
    cluster.run_all(*pods)
    cluster.wait_condition("PyTorchJob", "b0", "Running")
    cluster.set_phase("b0-worker-0", "Failed")
    failed = cluster.wait_condition("PyTorchJob", "b0", "Failed")
    assert last(failed)[3] == "Job b0 has failed because it has reached the specified backoff limit"
    wait_for(lambda: cluster.pods() == {} and cluster.objects(SERVICES) == {}, what="cleanPodPolicy All")


def test_active_deadline_fails_the_job_on_time_without_polling(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "dl", Master=1, run_policy={"activeDeadlineSeconds": 2, "cleanPodPolicy": "Running"}))
    cluster.wait_pods({"dl-master-0"})
    cluster.run_all("dl-master-0")
    started = parse_time(cluster.wait_condition("PyTorchJob", "dl", "Running")["status"]["startTime"])
    reconciles = manager.reconciles
    failed = cluster.wait_condition("PyTorchJob", "dl", "Failed", timeout=6)
    assert last(failed) == ("Failed", "True", "PyTorchJobFailed",
                            "Job dl has failed because it was active longer than specified deadline")
    finished = parse_time(failed["status"]["completionTime"])
    assert 2 <= (finished - started).total_seconds() <= 4
    assert manager.reconciles - reconciles <= 6, "woken by add_after, not by polling"
    wait_for(lambda: cluster.pods() == {}, what="running pod removed by cleanPodPolicy Running")


def test_ttl_deletes_the_finished_job(cluster, manager) -> None:
    # a TTL of a few seconds leaves a loaded machine time to observe Succeeded first
    cluster.apply(job("PyTorchJob", "ttl", Master=1, run_policy={"ttlSecondsAfterFinished": 4}))
    cluster.wait_pods({"ttl-master-0"})
    cluster.set_phase("ttl-master-0", "Succeeded")
    done = cluster.wait_condition("PyTorchJob", "ttl", "Succeeded")
    completed = parse_time(done["status"]["completionTime"])
    wait_for(lambda: cluster.get_job("PyTorchJob", "ttl") is None, timeout=20, what="job deleted by TTL")
    assert time.time() >= completed.timestamp() + 4
    settled(manager, 0)  # the deleting pass and any the deletion queued are done
    assert manager.errors == 0  # no status write is attempted on the job it just deleted


@pytest.mark.parametrize("policy,left", [("None", {"cp-master-0", "cp-worker-0", "cp-worker-1"}),
                                         ("Running", {"cp-master-0", "cp-worker-1"}), ("All", set())])
def test_clean_pod_policy_on_success(cluster, manager, policy, left) -> None:
    cluster.apply(job("PyTorchJob", "cp", Master=1, Worker=2, run_policy={"cleanPodPolicy": policy}))
    cluster.wait_pods({"cp-master-0", "cp-worker-0", "cp-worker-1"})
    cluster.run_all("cp-worker-0")
    cluster.set_phase("cp-worker-1", "Succeeded")
    cluster.set_phase("cp-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "cp", "Succeeded")
    wait_for(lambda: set(cluster.pods()) == left and set(cluster.objects(SERVICES)) == left, what=f"pods {left}")
    settled(manager, 0)
    assert set(cluster.pods()) == left


def test_a_finished_jobs_service_goes_once_its_pod_is_gone(cluster, manager) -> None:
    """What a controller killed between a pod's delete and its service's leaves behind is
    finished by the next pass: a service whose pod is gone is deleted (unless None)."""
    cluster.apply(job("PyTorchJob", "sg", Master=1, Worker=1, run_policy={"cleanPodPolicy": "Running"}))
    cluster.wait_pods({"sg-master-0", "sg-worker-0"})
    cluster.set_phase("sg-worker-0", "Succeeded")
    cluster.set_phase("sg-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "sg", "Succeeded")
    wait_for(lambda: set(cluster.objects(SERVICES)) == {"sg-master-0", "sg-worker-0"}, what="services kept")
    cluster.client.delete(PODS, cluster.namespace, "sg-worker-0")
    wait_for(lambda: set(cluster.objects(SERVICES)) == {"sg-master-0"}, what="the podless service deleted")
    assert set(cluster.pods()) == {"sg-master-0"}  # the kept pod is not recreated for a finished job
    assert manager.client.snapshot()[("delete", "/services")] == 1


def test_suspend_removes_children_and_resume_resets_start_time(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "sp", Master=1, Worker=1))
    pods = cluster.wait_pods({"sp-master-0", "sp-worker-0"})
    cluster.run_all(*pods)
    first_start = cluster.wait_condition("PyTorchJob", "sp", "Running")["status"]["startTime"]
    cluster.client.patch(PT, cluster.namespace, "sp", {"spec": {"runPolicy": {"suspend": True}}})
    suspended = cluster.wait_condition("PyTorchJob", "sp", "Suspended")
    wait_for(lambda: cluster.pods() == {} and cluster.objects(SERVICES) == {}, what="children removed")
    assert [(c["type"], c["status"], c["reason"]) for c in suspended["status"]["conditions"]] == [
        ("Created", "True", "PyTorchJobCreated"), ("Running", "False", "PyTorchJobSuspended"),
        ("Suspended", "True", "PyTorchJobSuspended")]
    assert last(suspended)[3] == "PyTorchJob sp is suspended."
    assert all("active" not in s for s in suspended["status"]["replicaStatuses"].values())
    time.sleep(1.1)  # startTime has second precision
    cluster.client.patch(PT, cluster.namespace, "sp", {"spec": {"runPolicy": {"suspend": False}}})
    resumed = cluster.wait_condition("PyTorchJob", "sp", "Suspended", status="False")
    assert last(resumed)[2:] == ("PyTorchJobResumed", "PyTorchJob sp is resumed.")
    assert resumed["status"]["startTime"] > first_start
    cluster.wait_pods({"sp-master-0", "sp-worker-0"})


def test_created_suspended_job_makes_no_pods_until_resumed(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "cs", Master=1, run_policy={"suspend": True}))
    cluster.wait_condition("PyTorchJob", "cs", "Suspended")
    settled(manager, 0)
    assert cluster.pods() == {}
    cluster.client.patch(PT, cluster.namespace, "cs", {"spec": {"runPolicy": {"suspend": False}}})
    cluster.wait_pods({"cs-master-0"})


def test_job_managed_by_another_controller_is_skipped(cluster, manager) -> None:
    since = manager.reconciles
    cluster.apply(job("PyTorchJob", "mk", Master=1, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    settled(manager, since)  # the job's ADDED was reconciled (and left alone)
    assert cluster.pods() == {}
    assert (cluster.get_job("PyTorchJob", "mk").get("status") or {}) == {}


def test_pod_deleted_behind_our_back_is_recreated_once(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "del", Master=1, Worker=1))
    pods = cluster.wait_pods({"del-master-0", "del-worker-0"})
    creates = manager.client.snapshot()[("create", "/pods")]
    since = manager.reconciles
    cluster.client.delete(PODS, cluster.namespace, "del-worker-0")
    recreated(cluster, "del-worker-0", pods["del-worker-0"]["metadata"]["uid"])
    settled(manager, since)
    assert manager.client.snapshot()[("create", "/pods")] == creates + 1


def test_master_restart_shows_restarting_until_the_master_runs_again(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "mr", Master=1, Worker=1))
    pods = cluster.wait_pods({"mr-master-0", "mr-worker-0"})
    cluster.run_all(*pods)
    cluster.wait_condition("PyTorchJob", "mr", "Running")
    cluster.set_phase("mr-master-0", "Failed", exit_code=1)
    recreated(cluster, "mr-master-0", pods["mr-master-0"]["metadata"]["uid"])
    restarting = cluster.wait_condition("PyTorchJob", "mr", "Restarting")
    assert [(c["type"], c["reason"], c["message"]) for c in restarting["status"]["conditions"]] == [
        ("Created", "PyTorchJobCreated", "PyTorchJob mr is created."),
        ("Restarting", "PyTorchJobRestarting", "job mr is restarting because Master replica(s) failed.")]
    cluster.set_phase("mr-master-0", "Running")
    running = cluster.wait_condition("PyTorchJob", "mr", "Running")
    assert [c["type"] for c in running["status"]["conditions"]] == ["Created", "Running"]
