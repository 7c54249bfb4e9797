"""A Kubeflow Trainer v2 TrainJob (the trainer-v2 target) in Argo CD and Flux: health, Kueue.

A TrainJob's conditions are metav1.Conditions written by the Trainer v2.3 controller:
`Complete` and `Failed` copied from its JobSet's Completed/Failed, `Suspended` with
reason `Suspended` or `Resumed` (status "False" after a resume), `Failed` with reason
`DeadlineExceeded` past activeDeadlineSeconds. The shipped Lua script (lupa, Lua 5.1)
and the Flux expressions (cel-python, Flux's order) must give one answer for each, as
they do for the v1 kinds; the generated argocd-cm and Flux Kustomizations carry the kind.
What Kueue (and the Trainer's webhook) change on an admitted TrainJob is no drift once
Argo CD's ignoreDifferences are applied (jq, Argo CD's diff of a custom resource), while
a change made in the cluster still is.
"""

from __future__ import annotations

from typing import Optional

import pytest

from compiler.gitops import health
from health_eval import ARGO_TO_FLUX, evaluate_cel, evaluate_lua, run_cel, run_lua

KIND = "TrainJob"
API_VERSION = "trainer.kubeflow.org/v1alpha1"
T0 = "2026-01-01T00:00:00Z"


def condition(ctype: str, status: str = "True", *, reason: str, message: str) -> dict:
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": T0, "observedGeneration": 1}


def trainjob(conditions: Optional[list[dict]] = None, *, deleting: bool = False) -> dict:
    obj: dict = {
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": "train", "namespace": "ml", "generation": 1, "uid": "0000"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
    }
    if deleting:
        obj["metadata"] |= {"deletionTimestamp": T0, "finalizers": ["example.com/keep"]}
    if conditions is not None:  # written by the Trainer through /status, as the server shows it
        obj["metadata"]["managedFields"] = [{
            "manager": "trainer-controller-manager", "operation": "Update", "apiVersion": API_VERSION,
            "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "subresource": "status",
        }]
        obj["status"] = {"conditions": conditions, "jobsStatus": [{"name": "node", "active": 2}]}
    return obj


SUSPENDED = condition("Suspended", reason="Suspended", message="TrainJob is suspended")
RESUMED = condition("Suspended", "False", reason="Resumed", message="TrainJob is resumed")
COMPLETE = condition("Complete", reason="AllJobsCompleted", message="jobset completed successfully")
FAILED = condition("Failed", reason="FailedJobs", message="jobset failed due to failed jobs")
DEADLINE = condition("Failed", reason="DeadlineExceeded", message="TrainJob exceeded its activeDeadlineSeconds")

CASES = [
    pytest.param(trainjob(), "Progressing", "InProgress", id="no status yet"),
    pytest.param(trainjob([SUSPENDED]), "Suspended", "InProgress", id="suspended by Kueue"),
    pytest.param(trainjob([RESUMED]), "Progressing", "InProgress", id="resumed and running"),
    pytest.param(trainjob([RESUMED, COMPLETE]), "Healthy", "Current", id="complete"),
    pytest.param(trainjob([RESUMED, FAILED]), "Degraded", "Failed", id="failed with its JobSet"),
    pytest.param(trainjob([DEADLINE]), "Degraded", "Failed", id="past its active deadline"),
    pytest.param(trainjob([FAILED], deleting=True), "Progressing", "InProgress", id="being deleted"),
]


@pytest.mark.parametrize(("obj", "argo", "flux"), CASES)
def test_argo_cd_and_flux_read_a_trainjob_alike(obj, argo, flux):
    lua = evaluate_lua(KIND, obj)

    assert lua["status"] == argo
    assert evaluate_cel(KIND, obj) == flux == ARGO_TO_FLUX[argo]


def test_the_message_is_the_deciding_conditions():
    assert evaluate_lua(KIND, trainjob([DEADLINE]))["message"] == DEADLINE["message"]
    assert evaluate_lua(KIND, trainjob([RESUMED, COMPLETE]))["message"] == COMPLETE["message"]


def test_a_v1_succeeded_condition_does_not_make_a_trainjob_healthy():
    """TrainJob says Complete; a Succeeded condition (the v1 word) must not be read as it."""
    stray = condition("Succeeded", reason="x", message="not a TrainJob condition")

    assert evaluate_lua(KIND, trainjob([stray]))["status"] == "Progressing"
    assert evaluate_cel(KIND, trainjob([stray])) == "InProgress"


def test_the_trainjob_row_names_its_group_and_version():
    assert (API_VERSION, KIND) in health.kinds()
    exprs = health.cel_expressions(KIND)
    assert exprs["apiVersion"] == API_VERSION
    assert "'Complete'" in exprs["current"] and "'Failed'" in exprs["failed"]


def test_the_row_is_the_trainers_trainjob_as_its_facts_say():
    """One source (foundation.frameworks.stock_runtimes, held to the release's CRD in
    tests/compiler/targets/test_trainer_v2_lowering.py) for the row and the target."""
    from compiler.targets import trainer_v2
    from foundation.frameworks import stock_runtimes as trainer

    assert trainer_v2.KIND == trainer.TRAINJOB == KIND
    assert health.RULES[KIND].api_version == trainer.API_VERSION == API_VERSION


def test_generated_argocd_cm_and_flux_kustomizations_carry_the_trainjob_check():
    from compiler.gitops import argocd, flux

    script = argocd.health_keys()["resource.customizations.health.trainer.kubeflow.org_TrainJob"]
    assert run_lua(script, trainjob([COMPLETE]))["status"] == "Healthy"
    (exprs,) = [e for e in flux.kustomization(flux.Target(path="deploy"), "prod")["spec"]["healthCheckExprs"]
                if e["kind"] == KIND]
    assert run_cel(exprs, trainjob([FAILED])) == "Failed"


# --- Kueue on a TrainJob: what the engines ignore ---------------------------------------------------

KUEUE_PATCH = {"manager": "kueue.x-k8s.io/manager", "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
    {"name": "node", "template": {"spec": {"template": {"spec": {
        "nodeSelector": {"cloud.google.com/gke-nodepool": "a3-highgpu"},
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]}}}}}]}}}}


@pytest.fixture(scope="module")
def compiled_trainjob() -> dict:
    from pathlib import Path

    from compiler.pipeline import compile_sources

    project = Path(__file__).resolve().parents[2] / "examples" / "project-v2"
    result = compile_sources([project], env="prod")
    (bundle,) = [b for b in result.bundles["prod"] if b.target.name == "llm-finetune"]
    job = bundle.rendered_job()
    job["spec"]["suspend"] = True  # as with policy.suspend: true, the case Kueue's flip matters for
    return job


def kueue_admits(desired: dict) -> dict:
    """The live TrainJob after Kueue's admission through MultiKueue, and the Trainer's webhook."""
    import copy

    live = copy.deepcopy(desired)
    live["spec"]["suspend"] = False
    live["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    live["spec"]["runtimePatches"] = [{**p, "time": T0} for p in live["spec"]["runtimePatches"] + [KUEUE_PATCH]]
    return live


def normalized(obj: dict, entry: dict) -> dict:
    """Argo CD's normalization: drop every jsonPointer, then del() every jq path."""
    import copy

    import jq

    out = copy.deepcopy(obj)
    for pointer in entry.get("jsonPointers", []):
        *parents, last = pointer.strip("/").split("/")
        node = out
        for key in parents:
            node = node.get(key, {})
        node.pop(last, None)
    for expr in entry["jqPathExpressions"]:
        out = jq.compile(f"del({expr})").input_value(out).first()
    return out


def argo_drift(config, live) -> list[str]:
    """Argo CD's diff of a custom resource: maps key by key, lists and scalars whole."""
    if isinstance(config, dict) and isinstance(live, dict):
        return [f"{k}.{d}".rstrip(".") for k, v in config.items() for d in (argo_drift(v, live[k]) if k in live else [""])]
    return [] if config == live else [""]


def _entry() -> dict:
    from compiler.gitops import argocd

    (entry,) = [e for e in argocd.ignore_differences() if e["kind"] == KIND]
    return entry


def test_kueue_admission_of_a_trainjob_drifts_without_ignore_differences(compiled_trainjob):
    paths = argo_drift(compiled_trainjob, kueue_admits(compiled_trainjob))

    assert sorted(paths) == ["spec.runtimePatches", "spec.suspend"]


def test_kueue_admission_of_a_trainjob_is_no_drift_once_normalized(compiled_trainjob):
    entry = _entry()

    assert entry["group"] == "trainer.kubeflow.org"
    assert argo_drift(normalized(compiled_trainjob, entry), normalized(kueue_admits(compiled_trainjob), entry)) == []


def test_a_real_change_to_a_trainjob_is_still_drift(compiled_trainjob):
    entry = _entry()
    live = kueue_admits(compiled_trainjob)
    live["spec"]["trainer"]["image"] = "ghcr.io/acme/other:2"
    live["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["name"] = "x"

    assert sorted(argo_drift(normalized(compiled_trainjob, entry), normalized(live, entry))) == [
        "spec.runtimePatches", "spec.trainer.image"]


def test_flux_ignores_suspend_and_managed_by_of_queued_trainjobs_only():
    from compiler.gitops import flux

    rules = flux.kustomization(flux.Target(path="deploy"), "prod")["spec"]["ignore"]
    (rule,) = [r for r in rules if r["target"]["kind"] == KIND]

    assert rule == {"paths": ["/spec/suspend", "/spec/managedBy"],
                    "target": {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": KIND,
                               "labelSelector": "kueue.x-k8s.io/queue-name"}}


def test_suspend_of_a_trainjob_without_a_queue_is_gits_so_its_change_is_drift(compiled_trainjob):
    """Kueue manages only queued TrainJobs; on the others suspend is policy.suspend, and an
    engine that ignored it could never resume a job from git (tests/e2e resumes one for real)."""
    import copy

    entry = _entry()
    desired = copy.deepcopy(compiled_trainjob)
    del desired["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    desired["spec"]["suspend"] = False
    live = copy.deepcopy(desired)
    live["spec"]["suspend"] = True

    assert argo_drift(normalized(desired, entry), normalized(live, entry)) == ["spec.suspend"]
    assert argo_drift(normalized(compiled_trainjob, entry), normalized(kueue_admits(compiled_trainjob), entry)) == []


def test_the_ignored_patch_entries_are_the_ones_not_written_by_the_compiler():
    from compiler.gitops import kueue
    from compiler.targets import trainer_v2

    assert any(f'select(.manager != "{trainer_v2.MANAGER}")' in expr for expr in kueue.TRAINJOB_JQ)
