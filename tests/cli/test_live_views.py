"""The pure views behind `status` and `logs`, on objects shaped as the API server returns
them (a job's state is tests/foundation/test_run_state.py's): why a pod waits, whose field a drift is (managedFields), which paths
a run's sources cover, durations, and how log bytes become prefixed lines."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from compiler.cli.live import clock
from compiler.cli.live.drift import applier, differences, dotted, drift, owner
from compiler.cli.live.logsource import Lines, Pick, expected_pods
from compiler.cli.live.pods import POD_LABELS, labels_for, pod_view
from compiler.cli.live.specs import Scope
from foundation.runs.state import JobState, job_state
from schemas.marks import SOURCE

T0, T1, T2 = "2026-11-28T07:00:00Z", "2026-11-28T07:01:00Z", "2026-11-28T07:02:00Z"


def cond(ctype: str, status: str = "True", at: str = T1, **extra: str) -> dict[str, str]:
    return {"type": ctype, "status": status, "lastTransitionTime": at, **extra}


def job(kind: str = "PyTorchJob", *conditions: dict[str, str], **status: object) -> dict[str, object]:
    return {"kind": kind, "metadata": {"creationTimestamp": T0},
            "status": {"conditions": list(conditions), **status}}


def pod(*, phase: str = "Pending", conditions: list[dict[str, str]] = (), statuses: list[dict[str, object]] = (),
        labels: dict[str, str] | None = None, **meta: object) -> dict[str, object]:
    labels = labels or {"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "2"}
    return {"metadata": {"name": "bert-worker-2", "labels": labels, **meta}, "spec": {"nodeName": ""},
            "status": {"phase": phase, "conditions": list(conditions), "containerStatuses": list(statuses)}}


def container(state: dict[str, object], **extra: object) -> dict[str, object]:
    return {"name": "pytorch", "state": state, "restartCount": 0, **extra}


V1 = POD_LABELS["kubeflow.org"]


@pytest.mark.parametrize(("obj", "why"), [
    (pod(conditions=[cond("PodScheduled", "False", reason="Unschedulable",
                          message="0/3 nodes are available:\n 3 Insufficient nvidia.com/gpu.")]),
     ("Pending", "Unschedulable", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", "")),
    (pod(statuses=[container({"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "x"'}})]),
     ("Pending", "ImagePullBackOff", 'Back-off pulling image "x"', "pytorch")),
    (pod(phase="Running", statuses=[container({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 10s"}},
                                              lastState={"terminated": {"exitCode": 3, "reason": "Error"}})]),
     ("Running", "CrashLoopBackOff", "back-off 10s; last run exited 3 (Error)", "pytorch")),
    (pod(statuses=[container({"waiting": {"reason": "ContainerCreating"}})]), ("Pending", "", "", "")),
    (pod(phase="Failed", statuses=[container({"terminated": {"exitCode": 137, "reason": "OOMKilled"}})]),
     ("Failed", "OOMKilled", "exit code 137", "pytorch")),
    (pod(phase="Running", deletionTimestamp=T2), ("Terminating", "", "", "")),
], ids=["the scheduler's message on one line", "a container's waiting reason", "a crash loop with its last exit",
        "creating a container is no reason to worry", "how a failed pod ended", "a pod being deleted"])
def test_why_a_pod_waits(obj, why):
    view = pod_view(obj, V1, replica_types=("Master", "Worker"))
    assert (view.phase, view.reason, view.message, view.container) == why
    assert (view.replica, view.index) == ("Worker", 2)


def test_a_pod_waiting_for_a_stuck_reason_is_stuck_only_past_the_threshold():
    """foundation.runs.stuck's rule, the controller's: waiting first, stuck once it has waited the threshold."""
    obj = pod(statuses=[container({"waiting": {"reason": "ImagePullBackOff"}})])
    obj["status"]["startTime"] = T0
    read = datetime(2026, 11, 28, 7, 2, tzinfo=timezone.utc)  # 2 minutes after the wait began
    assert not pod_view(obj, V1, now=read).stuck  # the default threshold: 3 minutes
    assert pod_view(obj, V1, now=read, stuck_after=60).stuck
    assert not pod_view(obj, V1, now=read, stuck_after=0).stuck
    assert not pod_view(obj, V1).stuck  # no reading time (logs): nothing judged


def test_a_trainer_pod_is_its_replicated_job_and_completion_index():
    labels = {"jobset.sigs.k8s.io/jobset-name": "llm", "jobset.sigs.k8s.io/replicatedjob-name": "node",
              "jobset.sigs.k8s.io/job-index": "0", "batch.kubernetes.io/job-completion-index": "3"}
    view = pod_view(pod(labels=labels), POD_LABELS["trainer.kubeflow.org"])
    assert (view.replica, view.index) == ("node", 3)


def test_mpi_operator_pods_are_found_by_their_role_and_the_launcher_has_no_index():
    """The mpi-operator v0.8.0 labels a v2beta1 MPIJob's pods with the job and a job-role, no
    replica type; its launcher is a batch Job's pod with a generated name and no index."""
    labels = POD_LABELS["kubeflow.org/v2beta1"]
    own = {"training.kubeflow.org/job-name": "pi", "training.kubeflow.org/operator-name": "mpi-operator"}
    launcher = pod(labels={**own, "training.kubeflow.org/job-role": "launcher", "job-name": "pi-launcher"})
    worker = pod(labels={**own, "training.kubeflow.org/job-role": "worker", "training.kubeflow.org/replica-index": "1"})

    assert labels_for("kubeflow.org/v2beta1") == labels and labels_for("kubeflow.org/v1") != labels
    assert (pod_view(launcher, labels, replica_types=("Launcher", "Worker")).replica,
            pod_view(launcher, labels).index) == ("Launcher", None)
    assert (pod_view(worker, labels, replica_types=("Launcher", "Worker")).replica,
            pod_view(worker, labels).index) == ("Worker", 1)
    assert Pick(replica="launcher").wants(launcher, labels) and not Pick(replica="launcher").wants(worker, labels)
    assert job_state({"kind": "MPIJob", "apiVersion": "kubeflow.org/v2beta1", "metadata": {"creationTimestamp": T0},
                      "status": {"conditions": [cond("Created", at=T0), cond("Suspended", at=T1)]}}).state == "Suspended"


ENGINE = {"manager": "argocd-controller", "operation": "Apply", "time": T0, "fieldsV1": {
    "f:metadata": {"f:annotations": {f"f:{SOURCE}": {}}, "f:labels": {"f:team": {}}},
    "f:spec": {"f:pytorchReplicaSpecs": {"f:Worker": {"f:replicas": {}, "f:template": {"f:spec": {
        "f:containers": {'k:{"name":"pytorch"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}}}}
EDIT = {"manager": "kubectl-edit", "operation": "Update", "time": T2,
        "fieldsV1": {"f:spec": {"f:pytorchReplicaSpecs": {"f:Worker": {"f:replicas": {}}}}}}
STATUS = {"manager": "train-controller", "operation": "Update", "subresource": "status", "time": T2,
          "fieldsV1": {"f:status": {"f:conditions": {}}}}


def live(replicas: int = 3, image: str = "x:1") -> dict[str, object]:
    return {"metadata": {"annotations": {SOURCE: "jobs/bert.yaml"}, "labels": {"team": "nlp"},
                         "managedFields": [ENGINE, EDIT, STATUS]},
            "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": replicas, "template": {"spec": {
                "containers": [{"name": "pytorch", "image": image}]}}}}}}


def test_the_owner_of_a_field_is_found_through_keyed_list_items():
    obj = live()
    image = ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers", 0, "image")
    assert owner(obj, image)["manager"] == "argocd-controller"
    assert owner(obj, ("spec", "pytorchReplicaSpecs", "Worker", "replicas"))["manager"] == "argocd-controller"
    assert owner(obj, ("status", "conditions")) is None  # status writes are nobody's drift
    assert applier(obj)["manager"] == "argocd-controller"  # it set the source annotation


def test_an_atomic_field_owns_everything_under_it():
    obj = live()
    obj["metadata"]["managedFields"] = [{"manager": "m", "fieldsV1": {"f:spec": {"f:pytorchReplicaSpecs": {}}}}]
    assert owner(obj, ("spec", "pytorchReplicaSpecs", "Worker", "replicas"))["manager"] == "m"


def test_drift_names_the_manager_that_changed_a_field_and_git_changes_not_synced():
    compiled = live(replicas=2, image="x:2")
    del compiled["metadata"]["managedFields"]
    obj = live(replicas=3, image="x:1")
    # kubectl edit took replicas over from the engine (an Update takes a field's ownership)
    engine = {**ENGINE, "fieldsV1": {"f:metadata": ENGINE["fieldsV1"]["f:metadata"], "f:spec": {
        "f:pytorchReplicaSpecs": {"f:Worker": {"f:template": {"f:spec": {
            "f:containers": {'k:{"name":"pytorch"}': {".": {}, "f:image": {}, "f:name": {}}}}}}}}}}
    obj["metadata"]["managedFields"] = [engine, EDIT, STATUS]
    found = drift(compiled, obj, state=JobState("Running", T1))
    assert [(d.path, d.git, d.cluster, d.why) for d in found] == [
        ("spec.pytorchReplicaSpecs.Worker.replicas", 2, 3, "changed-in-cluster"),
        ("spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image", "x:2", "x:1", "not-synced")]
    assert found[0].message == f"changed in the cluster by kubectl-edit (Update) at {T2}"


def test_a_job_changed_after_it_finished_will_not_run():
    obj = live()
    obj["metadata"]["managedFields"] = [{**ENGINE, "time": T2}]
    found = drift(live(), obj, state=JobState("Succeeded", T1))
    assert [(d.why, d.message) for d in found] == [(
        "will-not-run", f"the job changed at {T2}, after it finished (Succeeded) at {T1}: the edit will not run; "
        "delete the job to run it again")]


def test_only_what_git_sets_is_compared_and_a_list_of_another_length_is_one_difference():
    compiled = {"metadata": {"labels": {"a": "1"}}, "spec": {"args": ["--x"], "n": 1}}
    obj = {"metadata": {"labels": {"a": "1", "added-by-someone": "y"}}, "spec": {"args": ["--x", "--y"], "n": 1,
                                                                              "defaulted": True}}
    assert differences(compiled, obj) == [(("spec", "args"), ["--x"], ["--x", "--y"])]
    assert dotted(("metadata", "annotations", "trainforge.dev/source")) == 'metadata.annotations["trainforge.dev/source"]'


def test_list_items_with_a_name_or_manager_are_matched_by_it_and_items_others_add_are_no_drift():
    compiled = {"spec": {"runtimePatches": [{"manager": "trainforge.dev/compiler", "x": 1}],
                         "containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}}
    obj = {"spec": {"runtimePatches": [{"manager": "kueue.x-k8s.io/manager", "y": 2},
                                       {"manager": "trainforge.dev/compiler", "x": 1, "time": T1}],
                    "containers": [{"name": "b", "image": "3"}, {"name": "a", "image": "1"}, {"name": "c"}]}}
    assert differences(compiled, obj) == [(("spec", "containers", 0, "image"), "2", "3")]


def test_what_kueue_manages_on_a_queued_job_is_no_drift():
    compiled = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}},
                "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}}
    obj = {"kind": "PyTorchJob", "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}, "managedFields": []},
           "spec": {"runPolicy": {"suspend": False}, "pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}}
    assert [d.path for d in drift(compiled, obj, state=JobState("Running", T1))] == [
        "spec.pytorchReplicaSpecs.Worker.replicas"]
    unqueued = {**obj, "metadata": {"labels": {}, "managedFields": []}}
    assert [d.path for d in drift(compiled, unqueued, state=JobState("Running", T1))] == [
        "metadata.labels[\"kueue.x-k8s.io/queue-name\"]", "spec.runPolicy.suspend",
        "spec.pytorchReplicaSpecs.Worker.replicas"]


def test_a_scope_covers_its_files_and_folders_in_the_environments_namespaces():
    scope = Scope((("jobs", True, None), ("other/one.yaml", False, None)), frozenset({"ml"}))
    assert scope.covers("jobs/a.yaml", "ml") and scope.covers("other/one.yaml", "ml")
    assert not scope.covers("jobsx/a.yaml", "ml") and not scope.covers("other/two.yaml", "ml")
    assert not scope.covers("jobs/a.yaml", "another-team")


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90), ("10m", 600), ("1h30m", 5400), ("500ms", 0.5)])
def test_durations_read_as_go_writes_them(text, seconds):
    assert clock.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "5d"])
def test_a_duration_without_units_is_refused_naming_the_spelling(text):
    with pytest.raises(ValueError, match="is not a duration; write e.g. 90s, 10m or 1h30m"):
        clock.parse_duration(text)


def test_ages_read_to_the_unit_that_matters():
    now = datetime(2026, 11, 28, 9, 2, 5, tzinfo=timezone.utc)
    assert [clock.age(t, now) for t in ("2026-11-28T09:01:20Z", T2, "2026-11-27T07:00:00Z", None)] == [
        "45s", "2h", "1d2h", "?"]


def test_log_bytes_become_whole_prefixed_lines_the_last_one_flushed_at_the_end():
    out: list[str] = []
    lines = Lines("[p] ", out.append)
    lines.feed(b"one\ntw")
    lines.feed(b"o\nthr")
    lines.close()
    assert "".join(out) == "[p] one\n[p] two\n[p] thr\n"


def test_the_pods_a_selection_can_hold_come_from_the_jobs_replicas():
    obj = {"spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 3}}}}
    assert expected_pods(obj, Pick(), replica_specs="pytorchReplicaSpecs") == 4
    assert expected_pods(obj, Pick(replica="worker"), replica_specs="pytorchReplicaSpecs") == 3
    assert expected_pods(obj, Pick(replica="worker", index=2), replica_specs="pytorchReplicaSpecs") == 1
    assert expected_pods(obj, Pick(), replica_specs=None) is None
