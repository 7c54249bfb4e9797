"""The run spec (foundation.runs.spec): what a run of a job is built from, what stays live.

train-controller records it per run and builds every pod from it; `train-compile plan`
compares it across a merge. These pin the rule itself; tests/foundation/test_run_properties.py
holds the controller and the plan to it over generated jobs and edits, and
tests/controller/test_controller_run_integrity.py shows it on a real API server.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from controller_kit import running_pytorch

from foundation.frameworks import BY_KIND
from foundation.runs.spec import changed, run_job, run_spec, spec_hash, restart_scope
from schemas import marks

PT = BY_KIND["PyTorchJob"]


live = running_pytorch  # a PyTorchJob as read from the cluster: 1 Master, 2 Workers, a run policy


def test_the_run_spec_is_the_defaulted_spec_without_the_live_run_policy() -> None:
    body = live()
    body["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 2}
    data = run_spec(body, PT)
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
def test_which_run_policy_fields_are_part_of_the_run_spec(field: str, value: Any, changes: bool) -> None:
    before, after = live(), live()
    after["spec"]["runPolicy"][field] = value
    assert (spec_hash(run_spec(before, PT)) != spec_hash(run_spec(after, PT))) is changes
    assert changed(before, after, PT) is changes


def test_a_change_of_image_replicas_or_restart_scope_is_a_new_run_spec() -> None:
    base = spec_hash(run_spec(live(), PT))
    image = live()
    image["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "x:2"
    nodes = live()
    nodes["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    scope = live(metadata__annotations={marks.RESTART_SCOPE: marks.RESTART_SCOPE_JOB})
    hashes = {spec_hash(run_spec(b, PT)) for b in (image, nodes, scope)}
    assert len(hashes) == 3 and base not in hashes
    assert spec_hash(run_spec(live(), PT)) == base  # stable: the same spec, the same name


def test_writing_out_a_default_is_no_change() -> None:
    explicit = live()
    explicit["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "pytorchjob-port", "containerPort": 23456}]
    implicit = live()
    del implicit["spec"]["pytorchReplicaSpecs"]["Master"]["restartPolicy"]  # PyTorch's default is OnFailure
    assert not changed(explicit, implicit, PT)


def test_an_elastic_jobs_worker_count_is_live_and_its_bounds_kept_as_written() -> None:
    body = live(spec__elasticPolicy={"maxReplicas": 4})
    scaled = copy.deepcopy(body)
    scaled["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    data = run_spec(body, PT)
    assert "replicas" not in data["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert data["spec"]["elasticPolicy"] == {"maxReplicas": 4}
    assert spec_hash(data) == spec_hash(run_spec(scaled, PT)) and not changed(body, scaled, PT)
    run = run_job(scaled, PT, data)
    assert run["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 3
    assert run["spec"]["elasticPolicy"]["minReplicas"] == 4  # defaulted from maxReplicas, as upstream


def test_only_a_kind_the_operator_autoscales_has_a_live_worker_count() -> None:
    tf = BY_KIND["TFJob"]
    body = live(kind="TFJob", spec__elasticPolicy={"maxReplicas": 4})
    body["spec"]["tfReplicaSpecs"] = body["spec"].pop("pytorchReplicaSpecs")
    scaled = copy.deepcopy(body)
    scaled["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = 3
    assert changed(body, scaled, tf)


def test_the_run_job_is_the_run_spec_with_the_live_run_policy_and_the_runs_scope() -> None:
    data = run_spec(live(metadata__annotations={marks.RESTART_SCOPE: "job"}), PT)
    edited = live()  # scope annotation removed, image and nodes changed, suspended, new backoffLimit
    edited["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=5)
    edited["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"] = "x:2"
    edited["spec"]["runPolicy"].update(suspend=True, backoffLimit=7)
    run = run_job(edited, PT, data)
    worker = run["spec"]["pytorchReplicaSpecs"]["Worker"]
    assert worker["replicas"] == 2 and worker["template"]["spec"]["containers"][0]["image"] == "example.com/pytorch:1"
    assert run["spec"]["runPolicy"] == {"backoffLimit": 7, "cleanPodPolicy": "All", "suspend": True}
    assert restart_scope(run) == "job"
    assert "uid" in run["metadata"] and edited["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 5
