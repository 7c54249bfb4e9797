"""`train-compile flux`: Kustomizations that kustomize renders, whose `healthCheckExprs`
(read back from the generated YAML) give the Lua check's answer in a CEL evaluator, whose
`.spec.ignore` names Kueue's fields, and whose `--create-only` patches make jobs
create-only when kustomize applies them; a trainer-v2 environment's second Kustomization
(its `_prerequisites`) and the patches that hand those objects over to it. The real
kustomize-controller runs them in tests/e2e (test_trainer_v2_e2e.py: a job's own runtime
synced before its TrainJob under stock flags)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from gitops_tools import FIXTURES, kustomize, run, tool
from gitops_statuses import CASES, KINDS

from compiler.gitops import flux, health
from health_eval import ARGO_TO_FLUX, run_cel, run_lua


RESTARTS = Path(__file__).resolve().parents[2] / "examples" / "whole-job-restarts"  # dev kubeflow-v1, prod trainer-v2


def generate(out: Path, *extra: str, src: Path = FIXTURES / "project") -> Path:
    run(tool("train-compile"), "flux", str(src), "-o", str(out), "--path", "deploy", *extra)
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
        {"group": "kubeflow.org", "version": api.split("/")[1], "kind": kind, "labelSelector": "kueue.x-k8s.io/queue-name"}
        for api, kind in health.api_versions() if api.startswith("kubeflow.org/")  # v1, and the mpi-operator's v2beta1 MPIJob
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


@pytest.fixture(scope="module")
def restarts_tree(tmp_path_factory) -> Path:
    """examples/whole-job-restarts built: prod's two jobs each have a TrainingRuntime of their own."""
    out = tmp_path_factory.mktemp("restarts") / "deploy"
    run(tool("train-compile"), "build", str(RESTARTS), "-o", str(out))
    return out


def restarts_kustomizations(out: Path, *extra: str) -> dict[str, dict]:
    return {k["metadata"]["name"]: k for k in kustomize(generate(out, *extra, src=RESTARTS))}


def test_a_trainer_v2_environment_depends_on_a_kustomization_of_its_prerequisites(tmp_path):
    found = restarts_kustomizations(tmp_path / "flux")

    assert sorted(found) == ["trainforge-dev", "trainforge-prod", "trainforge-prod-prerequisites"]
    prod, first = found["trainforge-prod"]["spec"], found["trainforge-prod-prerequisites"]
    assert prod["dependsOn"] == [{"name": "trainforge-prod-prerequisites"}]
    assert first["metadata"]["labels"] == found["trainforge-prod"]["metadata"]["labels"]
    assert first["spec"] == {"interval": "10m", "path": "./deploy/prod/_prerequisites", "prune": True,
                             "sourceRef": {"kind": "GitRepository", "name": "flux-system"}, "timeout": "5m",
                             "wait": True}
    dev = found["trainforge-dev"]["spec"]
    assert "dependsOn" not in dev and "patches" not in dev  # kubeflow-v1: one Kustomization, as before


WRITES = [pytest.param((), id="applying updates"), pytest.param(("--create-only",), id="create-only")]


def _ids(objects: list[dict]) -> list[tuple[str, str, str]]:
    return sorted((o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects)


@pytest.mark.parametrize("extra", WRITES)
def test_every_object_of_a_trainer_v2_environment_has_exactly_one_kustomization(tmp_path, restarts_tree, extra):
    spec = restarts_kustomizations(tmp_path / "flux", *extra)["trainforge-prod"]["spec"]

    own = _apply_patches(tmp_path, restarts_tree / "prod", spec["patches"])
    first = kustomize(restarts_tree / "prod" / "_prerequisites")

    assert sorted(_ids(own) + _ids(first)) == _ids(kustomize(restarts_tree / "prod"))  # what Argo CD syncs, split
    assert _ids(first) == [("Namespace", "", "ml"), ("TrainingRuntime", "ml", "llm-pretrain"),
                           ("TrainingRuntime", "ml", "t5-jax")]
    assert {o["kind"] for o in own} == {"TrainJob"}
    for job in own:  # each names a runtime the first Kustomization applies
        assert ("TrainingRuntime", "ml", job["spec"]["runtimeRef"]["name"]) in _ids(first)
        assert (job["metadata"].get("annotations", {}).get(flux.SSA_ANNOTATION) == "IfNotPresent") == bool(extra)
