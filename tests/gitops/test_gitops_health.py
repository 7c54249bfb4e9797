"""The shipped health checks, run in real runtimes: the Lua script in Lua 5.1 (lupa) under
Argo CD's contract, the CEL expressions in cel-python under Flux's evaluation order."""

from __future__ import annotations

import pytest

from compiler.gitops import health
from health_eval import ARGO_TO_FLUX, evaluate_cel, evaluate_lua, run_lua
from gitops_statuses import CASES, JOB, KINDS, condition, job

PAIRS = [pytest.param(kind, case, id=f"{kind}: {case.id}") for case in CASES for kind in KINDS]


@pytest.mark.parametrize(("kind", "case"), PAIRS)
def test_lua_health_follows_the_section_11_mapping(kind, case):
    result = evaluate_lua(kind, case.build(kind))
    assert result["status"] == case.argo
    assert result["message"] == case.message.format(kind=kind, job=JOB)


@pytest.mark.parametrize(("kind", "case"), PAIRS)
def test_cel_health_gives_flux_the_same_answer(kind, case):
    obj = case.build(kind)
    verdict = evaluate_cel(kind, obj)
    assert verdict == case.flux
    argo = evaluate_lua(kind, obj)["status"]
    assert ARGO_TO_FLUX[argo] == verdict


def test_before_the_first_status_write_flux_never_reads_status():
    # cel-go errors on `status.x` while the object has no status (Unknown, then a timeout
    # naming a CEL error); inProgress answers from metadata first, so status is never read.
    obj = job("PyTorchJob")
    assert "status" not in obj and evaluate_cel("PyTorchJob", obj) == "InProgress"
    applied = {**obj, "metadata": {**obj["metadata"], "managedFields": [
        {"manager": "kustomize-controller", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {}}]}}
    assert evaluate_cel("PyTorchJob", applied) == "InProgress"


def test_a_stale_observed_generation_is_in_progress_for_flux():
    obj = job("PyTorchJob", [condition("PyTorchJob", "Succeeded")])
    obj["metadata"]["generation"] = 3
    obj["status"]["observedGeneration"] = 2
    assert evaluate_cel("PyTorchJob", obj) == "InProgress"


def test_the_script_runs_without_io_os_or_require():
    probe = "return {status = tostring(io) .. tostring(os) .. tostring(require), message = ''}"
    assert run_lua(probe, job("TFJob"))["status"] == "nilnilnil"


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown kind 'Deployment'"):
        evaluate_lua("Deployment", {"kind": "Deployment"})


def test_every_framework_kind_has_expressions():
    # the seven kubeflow.org/v1 kinds, then Trainer v2's TrainJob (tests/gitops/test_trainer_v2_health.py):
    # one entry per group and kind, as both engines key their checks
    assert [k for _, k in health.kinds()] == [*KINDS, "TrainJob"]
    for api_version, kind in health.kinds():
        exprs = health.cel_expressions(kind)
        assert exprs["apiVersion"] == api_version == ("kubeflow.org/v1" if kind in KINDS else "trainer.kubeflow.org/v1alpha1")
        assert set(exprs) == {"apiVersion", "kind", "inProgress", "failed", "current"}
    # every version, for what names one (reads of the cluster, patch and ignore targets): MPIJob's v2beta1 too
    at = KINDS.index("MPIJob") + 1
    assert health.api_versions() == [("kubeflow.org/v1", k) for k in KINDS[:at]] + [("kubeflow.org/v2beta1", "MPIJob")] + [
        ("kubeflow.org/v1", k) for k in KINDS[at:]] + [("trainer.kubeflow.org/v1alpha1", "TrainJob")]