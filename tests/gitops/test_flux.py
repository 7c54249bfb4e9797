"""`train-compile flux`: Kustomizations that kustomize renders, whose `healthCheckExprs`
(read back from the generated YAML) give the Lua check's answer in a CEL evaluator, whose
`.spec.ignore` names Kueue's fields, and whose `--create-only` patches make jobs
create-only when kustomize applies them. The real kustomize-controller runs them in
tests/e2e."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from gitops_tools import FIXTURES, kustomize, run, tool
from gitops_statuses import CASES, KINDS

from compiler.gitops import flux, health
from health_eval import ARGO_TO_FLUX, run_cel, run_lua


def generate(out: Path, *extra: str) -> Path:
    run(tool("train-compile"), "flux", str(FIXTURES / "project"), "-o", str(out), "--path", "deploy", *extra)
    return out


@pytest.fixture(scope="module")
def kustomizations(tmp_path_factory) -> dict[str, dict]:
    out = generate(tmp_path_factory.mktemp("flux") / "flux")
    return {k["metadata"]["name"]: k for k in kustomize(out)}


def test_one_kustomization_per_environment(kustomizations):
    assert sorted(kustomizations) == ["trainforge-dev", "trainforge-prod"]
    for env in ("dev", "prod"):
        k = kustomizations[f"trainforge-{env}"]
        assert k["apiVersion"] == "kustomize.toolkit.fluxcd.io/v1"
        assert k["metadata"]["namespace"] == "flux-system"
        spec = k["spec"]
        assert spec["path"] == f"./deploy/{env}"
        assert spec["sourceRef"] == {"kind": "GitRepository", "name": "flux-system"}
        assert spec["prune"] is True and spec["wait"] is True
        assert [(e["apiVersion"], e["kind"]) for e in spec["healthCheckExprs"]] == health.kinds()
        for entry in spec["healthCheckExprs"]:
            assert set(entry) == {"apiVersion", "kind", "current", "failed", "inProgress"}


PAIRS = [pytest.param(kind, case, id=f"{kind}: {case.id}") for case in CASES for kind in KINDS]


@pytest.mark.parametrize(("kind", "case"), PAIRS)
def test_the_generated_expressions_agree_with_the_lua_check(kustomizations, kind, case):
    (entry,) = [e for e in kustomizations["trainforge-prod"]["spec"]["healthCheckExprs"] if e["kind"] == kind]
    obj = case.build(kind)
    verdict = run_cel(entry, obj)
    assert verdict == case.flux
    argo = run_lua(health.lua_script(kind), obj)["status"]
    assert ARGO_TO_FLUX[argo] == verdict


def _apply_patches(tmp_path: Path, tree: Path, patches: list[dict]) -> list[dict]:
    """What Flux's kustomize build does with spec.patches over spec.path."""
    wrapper = tmp_path / "flux-build"
    wrapper.mkdir()
    (wrapper / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(tree, wrapper)], "patches": patches,
    }))
    return kustomize(wrapper)


def test_kueue_fields_are_ignored_for_every_replica_type_of_every_kinds_queued_jobs(kustomizations):
    rules = kustomizations["trainforge-prod"]["spec"]["ignore"]
    # only queued jobs (the label exists): Kueue manages no other, so git suspends and resumes them
    assert [r["target"] for r in rules] == [
        {"group": "kubeflow.org", "version": "v1", "kind": kind, "labelSelector": "kueue.x-k8s.io/queue-name"}
        for api, kind in health.kinds() if api == "kubeflow.org/v1"
    ] + [{"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob",  # test_trainer_v2_health.py
          "labelSelector": "kueue.x-k8s.io/queue-name"}]
    (tf,) = [r["paths"] for r in rules if r["target"]["kind"] == "TFJob"]
    assert tf[:2] == ["/spec/runPolicy/suspend", "/spec/runPolicy/managedBy"]
    for replica_type in ("Chief", "Master", "Worker", "PS", "Evaluator"):
        assert f"/spec/tfReplicaSpecs/{replica_type}/template/spec/nodeSelector" in tf
        assert f"/spec/tfReplicaSpecs/{replica_type}/template/spec/tolerations" in tf
    assert "patches" not in kustomizations["trainforge-prod"]["spec"]


def test_jobs_are_create_only_and_nothing_else_is(tmp_path, project_tree):
    (k, *_) = [k for k in kustomize(generate(tmp_path / "flux", "--create-only"))
               if k["metadata"]["name"] == "trainforge-prod"]
    assert "ignore" not in k["spec"]
    patches = k["spec"]["patches"]
    objects = _apply_patches(tmp_path, project_tree / "prod", patches)
    jobs = [o for o in objects if o["apiVersion"] == "kubeflow.org/v1"]
    others = [o for o in objects if o["apiVersion"] != "kubeflow.org/v1"]
    assert {j["kind"] for j in jobs} == {"PyTorchJob", "MPIJob"} and others
    for j in jobs:
        assert j["metadata"]["annotations"][flux.SSA_ANNOTATION] == "IfNotPresent"
        assert j["metadata"]["name"] in ("bert", "horovod")  # the patch's placeholder name is not applied
    for o in others:
        assert flux.SSA_ANNOTATION not in o["metadata"].get("annotations", {})
    assert len(objects) == len(kustomize(project_tree / "prod"))


def test_apply_updates_is_the_default(tmp_path):
    (k, *_) = kustomize(generate(tmp_path / "flux", "--apply-updates"))
    assert "patches" not in k["spec"] and k["spec"]["ignore"] == flux.ignore_rules()
