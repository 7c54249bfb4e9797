"""The examples as `make demo` compiles them: per-environment trees, kustomize, schemas.

Sources are found the way the demo finds them: the top-level `examples/*.yaml` compile
as one source (environment `default`), and every folder with a `trainforge.yaml` is a
project of its own. For every environment of every source, `kubectl kustomize` of the
written tree must print the same objects as `train-compile render`; every object the
overlays add must validate (PodGroups against the scheduling CRDs, the rest against the
Kubernetes schemas). The project examples are also pinned as YAML snapshots.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from overlay_kit import REPO, crd_errors, kubernetes_errors, tree_yaml

from compiler.cli.main import main
from compiler.emit import tree
from compiler.pipeline import compile_sources
from compiler.reading.sources import PROJECT_FILE
from testworld.assets import kubectl_path

EXAMPLES = REPO / "examples"
KUBECTL = str(kubectl_path())


def _sources() -> list[tuple[str, list[Path]]]:
    runs = []
    top = sorted(p for p in EXAMPLES.glob("*.y*ml") if p.is_file())
    if top:
        runs.append(("examples", top))
    runs += [(f.name, [f]) for f in sorted(EXAMPLES.iterdir()) if (f / PROJECT_FILE).is_file()]
    return runs


SOURCES = _sources()
PROJECTS = [name for name, paths in SOURCES if (paths[0] / PROJECT_FILE).is_file()]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """name -> (result, written output folder), compiled once for the module."""
    out = {}
    for name, paths in SOURCES:
        result = compile_sources(paths)
        assert result.ok, [d.text() for d in result.diagnostics]
        folder = tmp_path_factory.mktemp(name) / "out"
        tree.write(tree.files(result), folder, envs=result.environments, keep_other_envs=False)
        out[name] = (result, folder, paths)
    return out


ENVIRONMENTS = [
    pytest.param(name, env, id=f"{name} {env}")
    for name, paths in SOURCES
    for env in compile_sources(paths, lower_jobs=False).environments
]


def test_the_project_example_exists_with_dev_and_prod():
    assert "project" in PROJECTS
    result = compile_sources([EXAMPLES / "project"])
    assert result.environments == ["dev", "prod"]
    assert {len(b) for b in result.bundles.values()} == {3}


@pytest.mark.parametrize("name", PROJECTS)
def test_project_tree_snapshot(name, compiled, yaml_snapshot):
    result, _, _ = compiled[name]
    assert tree_yaml(tree.files(result)) == yaml_snapshot


@pytest.mark.parametrize(("name", "env"), ENVIRONMENTS)
def test_kubectl_kustomize_renders_what_train_compile_render_prints(name, env, compiled):
    _, folder, paths = compiled[name]
    proc = subprocess.run([KUBECTL, "kustomize", str(folder / env)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    kustomized = list(yaml.safe_load_all(proc.stdout))
    run = CliRunner().invoke(main, ["render", *map(str, paths), "--env", env])
    assert run.exit_code == 0, run.output
    rendered = list(yaml.safe_load_all(run.stdout))
    assert [_key(o) for o in kustomized] == [_key(o) for o in rendered]
    assert kustomized == rendered


def _key(obj: dict) -> str:
    return f"{obj['kind']} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


@pytest.mark.parametrize(("name", "env"), ENVIRONMENTS)
def test_overlay_objects_validate_against_their_schemas(name, env, compiled):
    result, _, _ = compiled[name]
    for bundle in result.bundles[env]:
        for component in bundle.components:
            for obj in component.resources:
                # a job's own TrainingRuntime (restartScope: job under trainer-v2) is a custom resource too
                errors = crd_errors(obj) if obj["kind"] in ("PodGroup", "TrainingRuntime") else kubernetes_errors(obj)
                assert errors == [], f"{_key(obj)}: {errors}"


@pytest.mark.parametrize("name", PROJECTS)
def test_patched_jobs_validate_against_the_kubeflow_crds(name, compiled):
    """The fields the overlays add (schedulingPolicy, pod scheduling, volumes) are real."""
    result, _, _ = compiled[name]
    for bundle in (b for bundles in result.bundles.values() for b in bundles):
        job = bundle.rendered_job()
        assert crd_errors(job) == [], f"{_key(job)}: {crd_errors(job)}"


def test_project_example_environments_differ_where_the_clusters_do(compiled):
    result, _, _ = compiled["project"]
    jobs = {env: {b.target.name: b for b in bundles} for env, bundles in result.bundles.items()}
    dev, prod = jobs["dev"]["recsys-horovod"], jobs["prod"]["recsys-horovod"]
    dev_worker = dev.rendered_job()["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    prod_worker = prod.rendered_job()["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    assert dev_worker["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
    assert prod_worker["nodeSelector"] == {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}
    assert dev_worker["schedulerName"] == "scheduler-plugins-scheduler"
    assert prod_worker["schedulerName"] == "volcano"
    # the environments' default queues, on a kind Kueue manages; the MPIJob opts out (Kueue
    # v0.17 ignores a queue on a kubeflow.org/v1 MPIJob: compiler/targets/kubeflow_v1.py)
    embeddings = {env: jobs[env]["recsys-embeddings"].rendered_job()["metadata"]["labels"] for env in ("dev", "prod")}
    assert embeddings["dev"]["kueue.x-k8s.io/queue-name"] == embeddings["prod"]["kueue.x-k8s.io/queue-name"] == "recsys"
    assert jobs["dev"]["bert-finetune"].rendered_job()["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "dev-queue"
    assert jobs["prod"]["bert-finetune"].rendered_job()["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "prod-queue"
    assert "kueue.x-k8s.io/queue-name" not in dev.rendered_job()["metadata"]["labels"]
    launcher = prod.rendered_job()["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    assert "nodeSelector" not in launcher and "tolerations" not in launcher
