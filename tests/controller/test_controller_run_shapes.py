"""The pure half of run integrity and whole-job restarts (issues 40 and 38).

What a run's ControllerRevision records (controller.jobs.revisions), how an edit is named
in its Event (controller.jobs.spec_changes), and which exit ends a whole-job attempt
(controller.jobs.restarts). The behaviour on the real control plane and kwok is in
test_controller_run_integrity.py and test_controller_whole_job_restart.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from controller_kit import job

from controller.jobs import restarts, revisions, runs, spec_changes
from controller.jobs.kinds import KINDS
from schemas import marks

PT = KINDS["PyTorchJob"]


def live(**changes: Any) -> dict[str, Any]:
    body = job("PyTorchJob", "j", restart="OnFailure", run_policy={"backoffLimit": 3, "cleanPodPolicy": "All"},
               Master=1, Worker=2)
    body["metadata"].update(uid="u-1", namespace="ns")
    for path, value in changes.items():
        node = body
        *parents, last = path.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return body


def test_the_shape_is_the_defaulted_spec_without_the_live_run_policy() -> None:
    body = live()
    body["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 2}
    data = revisions.shape(body, PT)
    assert data["restartScope"] == "pod"
    assert data["spec"]["runPolicy"] == {"schedulingPolicy": {"minAvailable": 2}}
    worker = data["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2 and worker["restartPolicy"] == "OnFailure"
    assert worker["template"]["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]


@pytest.mark.parametrize("field, value, changes", [
    ("suspend", True, False), ("backoffLimit", 9, False), ("activeDeadlineSeconds", 60, False),
    ("ttlSecondsAfterFinished", 5, False), ("cleanPodPolicy", "None", False),
    ("schedulingPolicy", {"minAvailable": 1}, True),
], ids=lambda v: str(v))
def test_which_run_policy_fields_are_part_of_the_shape(field: str, value: Any, changes: bool) -> None:
    before, after = live(), live()
    after["spec"]["runPolicy"][field] = value
    assert (revisions.digest(revisions.shape(before, PT)) != revisions.digest(revisions.shape(after, PT))) is changes


def test_a_change_of_image_replicas_or_restart_scope_is_a_new_shape() -> None:
    base = revisions.digest(revisions.shape(live(), PT))
    image = live()
    image["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "x:2"
    nodes = live()
    nodes["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    scope = live(metadata__annotations={marks.RESTART_SCOPE: marks.RESTART_SCOPE_JOB})
    hashes = {revisions.digest(revisions.shape(b, PT)) for b in (image, nodes, scope)}
    assert len(hashes) == 3 and base not in hashes
    assert revisions.digest(revisions.shape(live(), PT)) == base  # stable: the same spec, the same name


def test_an_elastic_jobs_worker_count_is_live_and_its_bounds_kept_as_written() -> None:
    body = live(spec__elasticPolicy={"maxReplicas": 4})
    scaled = copy.deepcopy(body)
    scaled["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    data = revisions.shape(body, PT)
    assert "replicas" not in data["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert data["spec"]["elasticPolicy"] == {"maxReplicas": 4}
    assert revisions.digest(data) == revisions.digest(revisions.shape(scaled, PT))
    run = revisions.run_job(scaled, PT, data)
    assert run["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    assert run["spec"]["elasticPolicy"]["minReplicas"] == 4  # defaulted from maxReplicas, as upstream


def test_the_run_job_is_the_revisions_shape_with_the_live_run_policy_and_the_runs_scope() -> None:
    data = revisions.shape(live(metadata__annotations={marks.RESTART_SCOPE: "job"}), PT)
    edited = live()  # scope annotation removed, image and nodes changed, suspended, new backoffLimit
    edited["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=5)
    edited["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "x:2"
    edited["spec"]["runPolicy"].update(suspend=True, backoffLimit=7)
    run = revisions.run_job(edited, PT, data)
    worker = run["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2 and worker["template"]["spec"]["containers"][0]["image"] == "example.com/pytorch:1"
    assert run["spec"]["runPolicy"] == {"backoffLimit": 7, "cleanPodPolicy": "All", "suspend": True}
    assert revisions.restart_scope(run) == "job"
    assert "uid" in run["metadata"] and edited["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 5


def test_the_revision_is_owned_by_the_job_and_labelled_like_its_pods() -> None:
    body = live()
    data = revisions.shape(body, PT)
    rev = revisions.body(body, PT, data=data, hashed=revisions.digest(data), number=3, attempt=2)
    meta = rev["metadata"]
    assert meta["name"] == f"j-{revisions.digest(data)}" and rev["revision"] == 3 and rev["data"] == data
    assert meta["labels"] == {"training.kubeflow.org/operator-name": "pytorchjob-controller",
                              "training.kubeflow.org/job-name": "j", revisions.HASH_LABEL: revisions.digest(data)}
    assert meta["ownerReferences"][0]["controller"] is True and meta["ownerReferences"][0]["uid"] == "u-1"
    assert revisions.attempt_of(rev) == 2 and revisions.hash_of(rev) == revisions.digest(data)


def test_stamping_a_pod_of_a_whole_job_run_also_makes_it_restart_never() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"restartPolicy": "OnFailure"}}
    revisions.stamp(pod, revision="j-abc", attempt=None)
    assert pod["metadata"]["annotations"] == {revisions.REVISION: "j-abc"} and pod["spec"]["restartPolicy"] == "OnFailure"
    revisions.stamp(pod, revision="j-abc", attempt=2)
    assert pod["metadata"]["annotations"][revisions.ATTEMPT] == "2" and pod["spec"]["restartPolicy"] == "Never"


# ---------------------------------------------------------------------------------- the Event's words
def test_the_change_is_named_field_by_field() -> None:
    before = revisions.shape(live(), PT)
    edited = live(metadata__annotations={marks.RESTART_SCOPE: "job"})
    worker = edited["spec"]["pytorchReplicaSpecs"]["Worker"]
    worker["replicas"] = 3
    worker["template"]["spec"]["containers"][0]["image"] = "example.com/pytorch:2"
    worker["template"]["spec"]["containers"][0]["env"] = [{"name": "LR", "value": "0.1"}]
    worker["template"]["spec"]["nodeSelector"] = {"pool": "a100"}
    assert spec_changes.describe(before, revisions.shape(edited, PT), replica_specs="pytorchReplicaSpecs") == (
        "restart scope pod -> job; Worker.replicas 2 -> 3; Worker.template.spec.containers[pytorch].env added; "
        'Worker.template.spec.containers[pytorch].image "example.com/pytorch:1" -> "example.com/pytorch:2"; '
        "Worker.template.spec.nodeSelector added")


def test_a_long_change_is_cut_after_six_entries() -> None:
    old = {"spec": {"rs": {f"T{i}": {"replicas": 1} for i in range(9)}}}
    new = {"spec": {"rs": {f"T{i}": {"replicas": 2} for i in range(9)}}}
    text = spec_changes.describe(old, new, replica_specs="rs")
    assert text.endswith("T5.replicas 1 -> 2; and 3 more") and text.count("->") == 6


# ---------------------------------------------------------------------------------- whole-job restarts
def pod(name: str, rtype: str, *, phase: str = "Running", code: int | None = None, deleting: bool = False,
        attempt: int | None = None, marked: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"training.kubeflow.org/replica-type": rtype}, "annotations": {}}
    if attempt is not None:
        meta["annotations"][revisions.ATTEMPT] = str(attempt)
    if marked:
        meta["annotations"][runs.MARK] = runs.SUSPENDED
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase}
    if code is not None:
        status["containerStatuses"] = [{"name": "pytorch", "state": {"terminated": {"exitCode": code}}}]
    return {"metadata": meta, "status": status}


def replicas(policy: str) -> dict[str, Any]:
    return {"Master": {"restartPolicy": policy}, "Worker": {"restartPolicy": policy}}


@pytest.mark.parametrize("policy, code, restarts_job", [
    ("OnFailure", 1, True), ("Always", 2, True), ("ExitCode", 137, True), ("ExitCode", 255, True),
    ("ExitCode", 1, False), ("ExitCode", 127, False), ("Never", 137, False),
], ids=lambda v: str(v))
def test_which_exit_ends_the_attempt_is_the_replicas_restart_policy(policy: str, code: int, restarts_job: bool) -> None:
    pods = [pod("j-master-0", "master"), pod("j-worker-1", "worker", phase="Failed", code=code)]
    ended = restarts.ending_exit(pods, replicas(policy), container="pytorch")
    assert ended == (restarts.Exit("j-worker-1", code) if restarts_job else None)


def test_a_pod_deleted_by_someone_else_ends_the_attempt_unless_never() -> None:
    pods = [pod("j-master-0", "master"), pod("j-worker-0", "worker", deleting=True)]
    assert restarts.ending_exit(pods, replicas("OnFailure"), container="pytorch") == restarts.Exit("j-worker-0", None)
    assert restarts.Exit("j-worker-0", None).cause == "pod j-worker-0 was deleted"
    assert restarts.ending_exit(pods, replicas("Never"), container="pytorch") is None


def test_a_permanent_exit_beside_a_retryable_one_leaves_the_job_to_fail() -> None:
    pods = [pod("j-worker-0", "worker", phase="Failed", code=137), pod("j-worker-1", "worker", phase="Failed", code=3)]
    assert restarts.ending_exit(pods, replicas("ExitCode"), container="pytorch") is None
    assert restarts.ending_exit(pods[:1] + [pod("j-master-0", "master", phase="Succeeded", code=0)],
                                replicas("ExitCode"), container="pytorch") == restarts.Exit("j-worker-0", 137)


def test_pods_of_earlier_attempts_are_split_off() -> None:
    old, older, new = pod("a", "worker"), pod("b", "worker", attempt=1), pod("c", "worker", attempt=2)
    assert restarts.split_attempts([old, older, new], 2) == ([new], [old, older])


@pytest.mark.parametrize("attempt, limit, exhausted", [(0, None, False), (0, 0, True), (2, 3, False), (3, 3, True)],
                         ids=lambda v: str(v))
def test_restarts_count_against_the_backoff_limit(attempt: int, limit: int | None, exhausted: bool) -> None:
    assert restarts.exhausted(attempt, limit) is exhausted


def test_the_restart_message_names_the_pod_the_exit_and_the_count() -> None:
    assert restarts.message("PyTorchJob", "j", cause="pod j-worker-1 exited with code 137", attempt=1,
                            backoff_limit=3) == ("PyTorchJob j is restarting every pod (whole-job restart 1 of "
                                                 "backoffLimit 3): pod j-worker-1 exited with code 137.")
    assert "without a backoffLimit" in restarts.message("TFJob", "t", cause="x", attempt=4, backoff_limit=None)
