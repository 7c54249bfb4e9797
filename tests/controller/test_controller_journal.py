"""The controller's INFO log is a story a person can follow (controller.jobs.journal): over a
job's whole life, exactly one line per state change, restart, stuck pod and deletion, each
opening with the job's key, and nothing else at INFO. On the real API server, the test playing
the kubelet; the stuck pod is said by the pass its wait's deadline queues (nothing else
happens to the job then)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest
from controller_kit import PODS_FIRST, Cluster, job, running_manager, settled, wait_for
from test_controller_behaviour import events_of

from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster.kube import PODS
from schemas import marks

PT = job_resource(KINDS["PyTorchJob"])

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too


def _waiting(cluster: Cluster, pod: str, reason: str, message: str, *, since: float = 0) -> None:
    """The kubelet cannot start the pod's container: Pending, waiting for `reason` since `since` s ago."""
    began = (datetime.now(timezone.utc) - timedelta(seconds=since)).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {"phase": "Pending", "startTime": began, "containerStatuses": [
        {"name": "pytorch", "image": "example.com/pytorch:1", "imageID": "", "ready": False, "restartCount": 0,
         "state": {"waiting": {"reason": reason, "message": message}}}]}
    cluster.client.patch(PODS, cluster.namespace, pod, {"status": status}, sub="status")


def _stuck_gauge(mgr) -> float | None:
    return mgr.metrics.registry.get_sample_value("trainforge_stuck_pods",
                                                 {"controller": "pytorchjob", "reason": "ImagePullBackOff"})


def test_a_jobs_life_is_one_info_line_per_state_change_restart_stuck_pod_and_deletion(
        control_plane, cluster, namespace, caplog) -> None:
    key = f"PyTorchJob/{namespace}/lc"
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=PODS_FIRST,
                         stuck_after=2.0) as mgr:
        caplog.set_level(logging.INFO, logger="controller")
        caplog.clear()
        cluster.apply(job("PyTorchJob", "lc", Master=1, Worker=1, restart="ExitCode",
                          run_policy={"cleanPodPolicy": "All", "ttlSecondsAfterFinished": 1}))
        pods = cluster.wait_pods({"lc-master-0", "lc-worker-0"})
        cluster.wait_condition("PyTorchJob", "lc", "Created")
        cluster.run_all(*pods)
        cluster.wait_condition("PyTorchJob", "lc", "Running")
        cluster.set_phase("lc-worker-0", "Failed", exit_code=137)
        worker = wait_for(lambda: (lambda p: p if p and p["metadata"]["uid"] != pods["lc-worker-0"]["metadata"]["uid"]
                                   else None)(cluster.pods().get("lc-worker-0")), what="lc-worker-0 created again")
        settled(mgr, 0)
        _waiting(cluster, "lc-worker-0", "ImagePullBackOff", 'Back-off pulling image "example.com/pytorch:1"')
        wait_for(lambda: _stuck_gauge(mgr) == 1, what="the stuck pod counted", timeout=30)
        stuck = [e for e in events_of(cluster, "lc") if e[1] == "PyTorchJobPodStuck"]
        assert stuck == [("Warning", "PyTorchJobPodStuck", "Pod lc-worker-0 is stuck in ImagePullBackOff for more "
                          'than 2s: Back-off pulling image "example.com/pytorch:1"')]
        assert worker["metadata"]["name"] == "lc-worker-0"
        cluster.set_phase("lc-worker-0", "Running")
        wait_for(lambda: not _stuck_gauge(mgr), what="the pod no longer stuck")
        cluster.set_phase("lc-master-0", "Succeeded")
        wait_for(lambda: cluster.get_job("PyTorchJob", "lc") is None, what="the job deleted after its TTL")
        settled(mgr, 0)
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and r.name.startswith("controller")]
    assert lines == [
        f"{key}: Created (PyTorchJobCreated: PyTorchJob lc is created.)",
        f"{key}: Created -> Running (PyTorchJobRunning: PyTorchJob lc is running.)",
        f"{key}: Running -> Restarting (PyTorchJobRestarting: PyTorchJob lc is restarting because 1 Worker replica(s) "
        "failed.)",
        f"{key}: restarting pod lc-worker-0, which exited with code 137 (deleted; created again by the next pass)",
        f"{key}: Restarting -> Running (PyTorchJobRunning: PyTorchJob lc is running.)",
        f'{key}: pod lc-worker-0 stuck in ImagePullBackOff for more than 2s: Back-off pulling image '
        f'"example.com/pytorch:1"',
        f"{key}: Running -> Succeeded (PyTorchJobSucceeded: PyTorchJob lc is successfully completed.)",
        f"{key}: deleted 2 pod(s) and 2 service(s) (cleanPodPolicy All)",
        f"{key}: deleted, 1s after it finished (ttlSecondsAfterFinished)",
    ]


def test_a_stuck_pod_of_a_finished_job_is_not_reported(control_plane, cluster, namespace) -> None:
    """The Master decides a PyTorchJob: it succeeded, the Worker still waits (cleanPodPolicy None
    keeps it), and no Event or gauge says so, though it has waited an hour."""
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=PODS_FIRST,
                         stuck_after=1.0) as mgr:
        cluster.apply(job("PyTorchJob", "fin", Master=1, Worker=1, restart="OnFailure"))
        cluster.wait_pods({"fin-master-0", "fin-worker-0"})
        cluster.set_phase("fin-master-0", "Succeeded")
        cluster.wait_condition("PyTorchJob", "fin", "Succeeded")
        since = mgr.reconciles
        _waiting(cluster, "fin-worker-0", "ImagePullBackOff", "Back-off pulling image", since=3600)
        settled(mgr, since)  # the pod's change queued the job: that pass saw it an hour past its threshold
        assert [e for e in events_of(cluster, "fin") if e[1] == "PyTorchJobPodStuck"] == []
        assert _stuck_gauge(mgr) is None


HOLD = "test.trainforge.dev/hold"  # a finalizer on the job's pods: they stay Terminating until the test lets go


@pytest.mark.parametrize("ending", ["suspended", "restarted as a whole"])
def test_the_stuck_pods_of_a_run_or_attempt_being_taken_away_are_not_reported(
        control_plane, cluster, namespace, ending) -> None:
    """A suspension, or a whole-job restart, deletes every pod of the run or attempt; while they
    terminate (held here by a finalizer) one waits for a pull it has waited an hour for: no Event
    says so, and no new pod is made meanwhile that could be stuck instead."""
    body = job("PyTorchJob", "away", Master=1, Worker=1, restart="OnFailure")
    if ending == "restarted as a whole":
        body["metadata"]["annotations"] = {marks.RESTART_SCOPE: marks.RESTART_SCOPE_JOB}
    for replica in body["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["metadata"] = {"finalizers": [HOLD]}
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=PODS_FIRST,
                         stuck_after=1.0) as mgr:
        cluster.apply(body)
        pods = cluster.wait_pods({"away-master-0", "away-worker-0"})
        try:
            cluster.run_all(*pods)
            cluster.wait_condition("PyTorchJob", "away", "Running")
            if ending == "suspended":
                cluster.client.patch(PT, namespace, "away", {"spec": {"runPolicy": {"suspend": True}}})
            else:
                cluster.set_phase("away-worker-0", "Failed", exit_code=137)
            wait_for(lambda: all(p["metadata"].get("deletionTimestamp") for p in cluster.pods().values()),
                     what="every pod of the run or attempt terminating")
            since = mgr.reconciles
            _waiting(cluster, "away-master-0", "ImagePullBackOff", "Back-off pulling image", since=3600)
            settled(mgr, since)  # the pod's change queued the job: that pass saw it an hour past its threshold
            assert [e for e in events_of(cluster, "away") if e[1] == "PyTorchJobPodStuck"] == []
            assert _stuck_gauge(mgr) is None and set(cluster.pods()) == {"away-master-0", "away-worker-0"}
        finally:
            for name in pods:
                cluster.client.patch(PODS, namespace, name, {"metadata": {"finalizers": None}})
