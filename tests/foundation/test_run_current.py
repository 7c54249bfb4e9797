"""A job's current run from the cluster's objects (foundation.runs.current): when it began and
started, which run record is its, what the job object changed since, and the GPUs its placed
pods hold. Objects shaped as the API server returns them; `status` and `plan --live` read
these on a real cluster in tests/cli and tests/compiler/plan."""

from __future__ import annotations

from typing import Any

import pytest

from foundation.frameworks import BY_KIND
from foundation.runs import current
from foundation.runs import started as runstart
from foundation.runs.record import ENDED, RECORD
from foundation.runs.spec import run_spec

T0, T1, T2, T3 = "2026-11-28T07:00:00Z", "2026-11-28T07:01:00Z", "2026-11-28T07:02:00Z", "2026-11-28T07:03:00Z"
PYTORCH = BY_KIND["PyTorchJob"]


def job(*, workers: int = 1, image: str = "x:1", start: str | None = None, **status: Any) -> dict[str, Any]:
    template = {"spec": {"containers": [{"name": "pytorch", "image": image}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "bert", "namespace": "ml", "uid": "u-1", "creationTimestamp": T0},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": template},
                                             "Worker": {"replicas": workers, "template": template}}},
            "status": {**({"startTime": start} if start else {}), **status}}


def pod(name: str, *, started: str | None = None, last: str | None = None, record: str | None = None,
        node: str | None = "n1", phase: str = "Running", gpus: str = "8", **meta: Any) -> dict[str, Any]:
    state = {"running": {"startedAt": started}} if started else {"waiting": {"reason": "ContainerCreating"}}
    status = {"name": "pytorch", "state": state, "restartCount": 1 if last else 0,
              **({"lastState": {"terminated": {"startedAt": last, "exitCode": 1}}} if last else {})}
    return {"metadata": {"name": name, **({"annotations": {RECORD: record}} if record else {}), **meta},
            "spec": {**({"nodeName": node} if node else {}),
                     "containers": [{"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": gpus}}}]},
            "status": {"phase": phase, "containerStatuses": [status]}}


def record(name: str, number: int, data: dict[str, Any], **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations,
                         "ownerReferences": [{"controller": True, "uid": "u-1"}]}, "revision": number, "data": data}


@pytest.mark.parametrize(("obj", "began"), [
    (job(), T0),
    (job(start=T1), T1),
    (job(conditions=[{"type": "Suspended", "status": "False", "lastTransitionTime": T2}]), T2),
], ids=["no startTime: its creation", "the operator's startTime", "resumed: the Suspended condition's turn to False"])
def test_a_run_begins_when_the_job_is_created_or_resumed(obj, began):
    assert current.began(obj) == began


def test_a_run_started_with_its_first_container_in_place_restarts_keeping_theirs():
    pods = [pod("bert-worker-0", started=T3, last=T1), pod("bert-master-0", started=T2), pod("bert-worker-1")]
    assert runstart.first_start(pods, since=T0) == T1  # the worker's last run began first
    assert runstart.first_start(pods, since=T2) == T2  # a container that ran before the run began is not its start
    assert runstart.first_start([pod("bert-master-0")], since=T0) is None


def test_the_runs_record_is_the_jobs_highest_numbered_and_an_ended_one_runs_nothing():
    old, new = record("bert-a", 1, {"spec": {}}), record("bert-b", 2, {"spec": {}})
    assert current.current(job(), [pod("bert-master-0", record="bert-b")], [new, old]).name == "bert-b"
    gone = {**new, "metadata": {**new["metadata"], "deletionTimestamp": T3}}
    assert current.current(job(), [], [gone, old]).name == "bert-a"  # a superseded one being deleted
    run = current.current(job(start=T1), [], [old, new])
    assert (run.name, run.number, run.began, run.started) == ("bert-b", 2, T1, None)
    ended = record("bert-c", 3, {"spec": {}}, **{ENDED: "suspended"})
    assert current.current(job(), [], [ended]).data is None  # the next run starts from the job as it is
    stranger = {**new, "metadata": {**new["metadata"], "ownerReferences": [{"controller": True, "uid": "u-2"}]}}
    assert current.current(job(), [], [stranger]).record is None


def test_what_the_job_object_changed_since_its_run_began_by_path_with_the_runs_value_and_the_jobs():
    data = run_spec(job(workers=1, image="x:1"), PYTORCH)
    changed = current.held(data, job(workers=2, image="x:2"), PYTORCH)
    image = ("template", "spec", "containers", 0, "image")
    assert changed == {("spec", "pytorchReplicaSpecs", "Worker", "replicas"): (1, 2),
                       ("spec", "pytorchReplicaSpecs", "Master", *image): ("x:1", "x:2"),
                       ("spec", "pytorchReplicaSpecs", "Worker", *image): ("x:1", "x:2")}
    assert current.held(data, job(workers=1, image="x:1"), PYTORCH) == {}


def test_the_gpus_held_are_those_of_pods_placed_on_a_node_and_not_finished():
    pods = [pod("a"), pod("b", node=None), pod("c", phase="Succeeded"), pod("d", gpus="4"),
            pod("e", deletionTimestamp=T3)]
    assert current.gpus_held(pods) == 12
