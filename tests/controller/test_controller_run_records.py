"""The pure half of run integrity and whole-job restarts (issues 40 and 38).

What a run's record (its ControllerRevision, controller.jobs.run_record) holds and which step
a pass takes with it (controller.jobs.run_records.next_step), how an edit is named in its
Event (controller.jobs.spec_changes), and which exit ends a whole-job attempt
(controller.jobs.restarts); the run spec itself is tests/foundation/test_run_spec.py's. The
behaviour on the real control plane and kwok is in test_controller_run_integrity.py and
test_controller_whole_job_restart.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from controller_kit import running_pytorch

from controller.jobs import restarts, run_record, runs, spec_changes
from controller.jobs.run_records import DEFER, REOPEN, REPLACE, SAME, START, next_step
from controller.jobs.kinds import KINDS
from foundation.runs.spec import run_spec, spec_hash
from schemas import marks

PT = KINDS["PyTorchJob"]


live = running_pytorch


def test_the_record_is_owned_by_the_job_and_labelled_like_its_pods() -> None:
    body = live()
    data = run_spec(body, PT)
    rec = run_record.body(body, PT, data=data, hashed=spec_hash(data), number=3, attempt=2)
    meta = rec["metadata"]
    assert meta["name"] == f"j-{spec_hash(data)}" and rec["revision"] == 3 and rec["data"] == data
    assert meta["labels"] == {"training.kubeflow.org/operator-name": "pytorchjob-controller",
                              "training.kubeflow.org/job-name": "j", run_record.HASH_LABEL: spec_hash(data)}
    assert meta["ownerReferences"][0]["controller"] is True and meta["ownerReferences"][0]["uid"] == "u-1"
    assert run_record.attempt_of(rec) == 2 and run_record.hash_of(rec) == spec_hash(data)


def record(hashed: str, *, ended: bool = False) -> dict[str, Any]:
    annotations = {run_record.ENDED: run_record.SUSPENDED} if ended else {}
    return {"metadata": {"name": f"j-{hashed}", "labels": {run_record.HASH_LABEL: hashed}, "annotations": annotations}}


@pytest.mark.parametrize("current, hashed, started, step", [
    (None, "a", False, START), (record("a"), "a", True, SAME), (record("a"), "a", False, SAME),
    (record("a"), "b", True, DEFER), (record("a"), "b", False, REPLACE),
    (record("a", ended=True), "a", False, REOPEN), (record("a", ended=True), "b", False, START),
], ids=["the first pass starts a run", "an unchanged job goes on", "an unchanged job that has not started waits",
        "an edit of a started run is deferred", "an edit of a run that has not started replaces the run",
        "a job resumed as it was reopens its record", "a job resumed after an edit starts a new run"])
def test_what_a_running_pass_does_with_the_current_record(current: Any, hashed: str, started: bool,
                                                          step: str) -> None:
    assert next_step(current, hashed, started=started) == step


def test_stamping_a_pod_of_a_whole_job_run_also_makes_it_restart_never() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"restartPolicy": "OnFailure"}}
    run_record.stamp(pod, record="j-abc", attempt=None)
    assert pod["metadata"]["annotations"] == {run_record.RECORD: "j-abc"} and pod["spec"]["restartPolicy"] == "OnFailure"
    run_record.stamp(pod, record="j-abc", attempt=2)
    assert pod["metadata"]["annotations"][run_record.ATTEMPT] == "2" and pod["spec"]["restartPolicy"] == "Never"


# ---------------------------------------------------------------------------------- the Event's words
def test_the_change_is_named_field_by_field() -> None:
    before = run_spec(live(), PT)
    edited = live(metadata__annotations={marks.RESTART_SCOPE: "job"})
    worker = edited["spec"]["pytorchReplicaSpecs"]["Worker"]
    worker["replicas"] = 3
    worker["template"]["spec"]["containers"][0]["image"] = "example.com/pytorch:2"
    worker["template"]["spec"]["containers"][0]["env"] = [{"name": "LR", "value": "0.1"}]
    worker["template"]["spec"]["nodeSelector"] = {"pool": "a100"}
    assert spec_changes.describe(before, run_spec(edited, PT), replica_specs="pytorchReplicaSpecs") == (
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
        meta["annotations"][run_record.ATTEMPT] = str(attempt)
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
