"""Sync waves on a compiled project with a ServiceAccount, RBAC, a new PVC and a PodGroup:
as the pipeline compiles it (the overlays that add them annotate them), the kustomize tree (rendered by kubectl kustomize) and the plugin
stream both put the job's prerequisites in an earlier wave than the job, and keep the
PVC beside the job (an earlier wave would deadlock on WaitForFirstConsumer claims)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from gitops_tools import FIXTURES, by_kind, kustomize

from compiler.emit import render, tree
from compiler.pipeline import compile_sources
from overlays import waves


@pytest.fixture(scope="module")
def result():
    compiled = compile_sources([FIXTURES / "project"])
    assert compiled.ok, compiled.diagnostics
    return compiled


@pytest.fixture(scope="module")
def rendered_tree(result, tmp_path_factory) -> dict[str, list[dict]]:
    out = tmp_path_factory.mktemp("waves")
    for rel, text in tree.files(result).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(text)
    return {env: kustomize(out / env) for env in result.environments}


def _service_accounts(job: dict) -> set[str]:
    specs = next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))
    return {r["template"]["spec"].get("serviceAccountName") for r in specs.values()} - {None}


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_prerequisites_are_in_an_earlier_wave_than_the_job(rendered_tree, env):
    objects = rendered_tree[env]
    (bert,) = [o for o in by_kind(objects, "PyTorchJob")]
    sas = {o["metadata"]["name"]: o for o in by_kind(objects, "ServiceAccount")}
    assert _service_accounts(bert) == {"bert"}, "the fixture job runs as its own ServiceAccount"
    for name in _service_accounts(bert):
        assert waves.wave_of(sas[name]) < waves.wave_of(bert) == 0
    assert [n["metadata"]["name"] for n in by_kind(objects, "Namespace")] == ["ml"]
    for kind in ("Namespace", "ServiceAccount", "Role", "RoleBinding", "PodGroup"):
        for o in by_kind(objects, kind):
            assert o["metadata"]["annotations"][waves.ANNOTATION] == "-1", (kind, o["metadata"]["name"])
    assert by_kind(objects, "Role") and by_kind(objects, "RoleBinding")


def test_the_gang_scheduled_environment_has_its_podgroups_first(rendered_tree):
    groups = by_kind(rendered_tree["prod"], "PodGroup")
    assert {g["metadata"]["name"] for g in groups} == {"bert", "horovod"}
    assert all(waves.wave_of(g) == -1 for g in groups)


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_pvcs_and_jobs_stay_in_wave_zero(rendered_tree, env):
    objects = rendered_tree[env]
    (pvc,) = by_kind(objects, "PersistentVolumeClaim")
    assert waves.wave_of(pvc) == 0 and waves.ANNOTATION not in pvc["metadata"].get("annotations", {})
    for job in [o for o in objects if o["apiVersion"] == "kubeflow.org/v1"]:
        assert waves.ANNOTATION not in job["metadata"].get("annotations", {})


def test_the_plugin_stream_carries_the_same_waves(result, rendered_tree):
    stream = [d for d in yaml.safe_load_all(render.render_stream(replace(result, environments=["prod"]))) if d]

    def waves_of(objects):
        return sorted((o["kind"], o["metadata"]["name"], waves.wave_of(o)) for o in objects)

    assert waves_of(stream) == waves_of(rendered_tree["prod"])


def test_annotate_keeps_an_existing_earlier_wave_and_other_annotations():
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": "a", "annotations": {waves.ANNOTATION: "-5", "x": "y"}}}
    assert waves.annotate(sa) == sa
    plain = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a", "annotations": {"x": "y"}}}
    assert waves.annotate(plain)["metadata"]["annotations"] == {"x": "y", waves.ANNOTATION: "-1"}
    assert plain["metadata"]["annotations"] == {"x": "y"}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert waves.annotate(cm) is cm


