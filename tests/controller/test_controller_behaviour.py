"""Controller behaviour beyond the happy path, on the real API server: a settled job
costs zero write requests, children carry the controller owner reference (there is no
garbage collector here, so the references are what we assert), a job being deleted is
left alone, and bad objects get a clear condition or event without a hot retry loop."""

from __future__ import annotations

import pytest
from controller_kit import job, quiet_writes, settled, wait_for

from foundation.cluster.kube import (
    CONFIGMAPS,
    EVENTS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
)
from controller.runtime.writes import job_key


@pytest.mark.parametrize("finish", [False, True], ids=["running job", "succeeded job"])
@pytest.mark.parametrize("kind,replicas,master", [
    ("PyTorchJob", {"Master": 1, "Worker": 2}, "z-master-0"),
    ("TFJob", {"Chief": 1, "Worker": 1}, "z-chief-0"),
    ("MPIJob", {"Launcher": 1, "Worker": 2}, "z-launcher"),
], ids=["pytorch", "tensorflow", "mpi"])
def test_second_reconcile_of_a_settled_job_makes_zero_writes(cluster, manager, kind, replicas, master, finish) -> None:
    cluster.apply(job(kind, "z", **replicas))
    pods = wait_for(lambda: (lambda p: p if len(p) == sum(replicas.values()) else None)(cluster.pods()), what="pods")
    cluster.run_all(*pods)
    cluster.wait_condition(kind, "z", "Running")
    if finish:
        cluster.set_phase(master, "Succeeded")
        cluster.wait_condition(kind, "z", "Succeeded")
    before = quiet_writes(manager)
    counts = manager.client.snapshot()
    key = job_key(kind, cluster.namespace, "z")
    for _ in range(3):
        manager.process(key)
    assert manager.client.writes() == before
    changed = {k: v - counts[k] for k, v in manager.client.snapshot().items() if v != counts[k]}
    assert changed == {}, changed  # not even a read: reconcile works from the informer caches


def test_children_carry_the_controller_owner_reference(cluster, manager) -> None:
    applied = cluster.apply(job("PyTorchJob", "own", Master=1, Worker=1))
    mpi = cluster.apply(job("MPIJob", "ompi", Launcher=1, Worker=1))
    cluster.wait_pods({"own-master-0", "own-worker-0", "ompi-launcher", "ompi-worker-0"})
    wait_for(lambda: len(cluster.objects(SERVICES)) == 2 and "ompi-launcher" in cluster.objects(ROLEBINDINGS), what="children")
    owned = {("Pod", n): o for n, o in cluster.objects(PODS).items()}
    owned.update({("Service", n): o for n, o in cluster.objects(SERVICES).items()})
    for res, kind in ((CONFIGMAPS, "ConfigMap"), (SERVICEACCOUNTS, "ServiceAccount"), (ROLES, "Role"), (ROLEBINDINGS, "RoleBinding")):
        owned.update({(kind, n): o for n, o in cluster.objects(res).items() if n.startswith("ompi")})
    assert len(owned) == 10
    for (kind, name), obj in owned.items():
        parent = mpi if name.startswith("ompi") else applied
        assert obj["metadata"]["ownerReferences"] == [{
            "apiVersion": "kubeflow.org/v1", "kind": parent["kind"], "name": parent["metadata"]["name"],
            "uid": parent["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}], (kind, name)


def test_job_being_deleted_is_left_alone_and_a_deleted_job_is_forgotten(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "gone", Master=1, Worker=1))
    cluster.wait_pods({"gone-master-0", "gone-worker-0"})
    quiet_writes(manager)
    # foreground deletion leaves the job with a deletionTimestamp (no GC here to finish it)
    from controller.jobs.kinds import KINDS, job_resource

    since = manager.reconciles
    cluster.client.delete(job_resource(KINDS["PyTorchJob"]), cluster.namespace, "gone", propagation="Foreground")
    cluster.client.delete(PODS, cluster.namespace, "gone-worker-0")
    wait_for(lambda: "gone-worker-0" not in cluster.pods(), what="the worker gone")
    settled(manager, since)  # the job's passes after both deletions are done
    assert set(cluster.pods()) == {"gone-master-0"}, "no pod is recreated for a job being deleted"
    key = job_key("PyTorchJob", cluster.namespace, "gone")
    assert manager.reconciler.reconcile(key) is None


def test_a_framework_switch_gets_its_pods_as_soon_as_the_old_job_lets_go_of_their_names(cluster, manager) -> None:
    """A PyTorchJob replaced by an XGBoostJob of the same name (a framework switch in git): the
    old job's pod and Service (left here: no garbage collector) hold `sw-master-0`, so the new
    job's creates are refused; their deletion, the old job's event, queues the new job too.
    Without that it waited for its expectation's timeout (minutes) while upstream retried."""
    from controller.jobs.kinds import KINDS, job_resource

    cluster.apply(job("PyTorchJob", "sw", Master=1))
    cluster.wait_pods({"sw-master-0"})
    wait_for(lambda: "sw-master-0" in cluster.objects(SERVICES), what="the old Service")
    cluster.client.delete(job_resource(KINDS["PyTorchJob"]), cluster.namespace, "sw")
    since = manager.reconciles
    new = cluster.apply(job("XGBoostJob", "sw", Master=1))
    settled(manager, since)  # the new job's pass has met the names taken
    owners = {p["metadata"]["ownerReferences"][0]["kind"] for p in cluster.pods().values()}
    assert owners == {"PyTorchJob"}

    cluster.client.delete(PODS, cluster.namespace, "sw-master-0")
    cluster.client.delete(SERVICES, cluster.namespace, "sw-master-0")

    def mine(objects: dict) -> bool:
        obj = objects.get("sw-master-0")
        return obj is not None and obj["metadata"]["ownerReferences"][0]["uid"] == new["metadata"]["uid"]
    wait_for(lambda: mine(cluster.pods()) and mine(cluster.objects(SERVICES)), timeout=30,
             what="the XGBoostJob's own pod and Service (not after an expectation timeout)")


def events_of(cluster, name: str) -> list[tuple[str, str, str]]:
    items = cluster.client.list(EVENTS, namespace=cluster.namespace)["items"]
    return [(e["type"], e["reason"], e["message"]) for e in items if e["involvedObject"]["name"] == name]


BAD = [
    ("no containers", lambda: _without_containers(), "PyTorchJob",
     "[spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must be specified, "
     "spec.pytorchReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container"
     " with name pytorch]"),
    ("missing image", lambda: _without_image(), "PyTorchJob",
     "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: must be required"),
    ("unknown replica type", lambda: job("PyTorchJob", "bad", Master=1, Trainer=2), "PyTorchJob",
     'spec.pytorchReplicaSpecs[Trainer]: Unsupported value: "Trainer": supported values: "Master", "Worker"'),
    ("unsupported managedBy (issue 20)",
     lambda: job("PyTorchJob", "bad", Master=1, run_policy={"managedBy": "kueue.x-k8s.io/other-controller"}), "PyTorchJob",
     'spec.runPolicy.managedBy: Unsupported value: "kueue.x-k8s.io/other-controller": supported values:'
     ' "kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator"'),
    ("two chiefs", lambda: job("TFJob", "bad", Chief=1, Master=1), "TFJob",
     "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"),
    ("master replicas omitted", lambda: job("XGBoostJob", "bad", Master=None), "XGBoostJob",
     "spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1"),
]


def _without_containers():
    body = job("PyTorchJob", "bad", Master=1, Worker=1)
    body["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = []
    return body


def _without_image():
    body = job("PyTorchJob", "bad", Master=1)
    del body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"]
    return body


@pytest.mark.parametrize("build,kind,field_error", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_object_fails_with_a_clear_condition_and_no_retry_loop(cluster, manager, build, kind, field_error) -> None:
    cluster.apply(build())
    failed = cluster.wait_condition(kind, "bad", "Failed")
    condition = failed["status"]["conditions"][-1]
    assert condition["reason"] == f"{kind}FailedValidation"
    assert condition["message"] == f"{kind} failed validation because {field_error}"
    assert ("Warning", f"{kind}FailedValidation", condition["message"]) in events_of(cluster, "bad")
    assert cluster.pods() == {}
    before = manager.reconciles
    settled(manager, 0)  # a job retried in a loop would never let the controller go quiet
    assert manager.reconciles - before <= 2, "no hot retry"
    assert manager.errors == 0


def test_a_job_multikueue_manages_is_left_alone_even_when_invalid(cluster, manager) -> None:
    """A supported foreign manager owns the job and its status: no validation, no write, no pod."""
    cluster.apply(job("PyTorchJob", "elsewhere", Master=1, Trainer=1, run_policy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    cluster.apply(job("PyTorchJob", "witness", Master=1, run_policy={"managedBy": "kueue.x-k8s.io/other"}))
    cluster.wait_condition("PyTorchJob", "witness", "Failed")  # reconciled after the first one was seen
    assert manager.reconciler.reconcile(job_key("PyTorchJob", cluster.namespace, "elsewhere")) is None
    assert cluster.get_job("PyTorchJob", "elsewhere").get("status") is None
    assert events_of(cluster, "elsewhere") == [] and cluster.pods() == {}


def test_invalid_mpijob_gets_an_event_and_backs_off(cluster, manager) -> None:
    body = job("MPIJob", "bad", Worker=1)  # no Launcher
    cluster.apply(body)
    message = "MPIJob failed validation because MPIReplicaSpec is not valid: Master ReplicaSpec must be present"
    wait_for(lambda: ("Warning", "MPIJobFailedValidation", message) in events_of(cluster, "bad"), what="event")
    settled(manager, 0)  # quiet once a backoff step outlasts settled's quiet time: never, in a hot loop
    assert manager.errors <= 12, "exponential backoff, not a hot loop"
    assert (cluster.get_job("MPIJob", "bad").get("status") or {}).get("conditions") is None  # upstream writes none
    assert cluster.pods() == {}


def test_cli_runs_the_controller_and_stops_on_sigterm(control_plane, cluster) -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "controller", "--kubeconfig", str(control_plane.kubeconfig),
                             "--namespace", cluster.namespace, "--frameworks", "pytorch,jax", "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        cluster.apply(job("JAXJob", "cli", Worker=2))
        cluster.wait_pods({"cli-worker-0", "cli-worker-1"}, timeout=30)
        cluster.wait_condition("JAXJob", "cli", "Created")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, out
    assert "kinds=PyTorchJob,JAXJob" in out


def test_cli_rejects_an_unknown_framework() -> None:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "controller", "--frameworks", "pytorch,caffe"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown framework 'caffe'" in proc.stderr


def test_pod_the_api_server_refuses_gets_a_warning_event_and_backoff(cluster, manager) -> None:
    body = job("PyTorchJob", "refused", Master=1)
    body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "1"}, "requests": {"cpu": "2"}}  # requests above limits: the pod is invalid
    cluster.apply(body)
    found = wait_for(lambda: [e for e in events_of(cluster, "refused") if e[1] == "FailedCreatePod"], what="FailedCreatePod")
    assert found[0][0] == "Warning"
    assert "spec.containers[0].resources.requests: Invalid value" in found[0][2]
    settled(manager, 0)  # quiet once a backoff step outlasts settled's quiet time: never, in a hot loop
    assert 1 <= manager.errors <= 12, "retried with exponential backoff, not in a hot loop"
    assert cluster.pods() == {}
