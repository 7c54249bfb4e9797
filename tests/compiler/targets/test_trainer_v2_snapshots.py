"""Golden trees of the trainer-v2 target, one per framework Trainer v2 can run.

Each framework's job of `examples/project-v2` (the migration project: `prod` targets
trainer-v2) is compiled for `prod`, and its whole job folder (TrainJob, components,
patches) is pinned as real YAML under `tests/__snapshots__/test_trainer_v2_snapshots/`.
Every TrainJob, as `render` prints it, also parses with the upstream Python models
(`kubeflow-trainer-api` 2.3.0) without losing a field. Facts are asserted in
test_trainer_v2_lowering.py; these pin the rest.
"""

from __future__ import annotations

import pytest
import yaml
from compiler_builders import EXAMPLES

PROJECT = EXAMPLES / "project-v2"


@pytest.fixture(scope="module")
def prod():
    from compiler.pipeline import compile_sources

    result = compile_sources([PROJECT], env="prod")
    assert result.ok, [d.text() for d in result.diagnostics]
    return {bundle.target.spec.framework: bundle for bundle in result.bundles["prod"]}


@pytest.mark.parametrize("framework", ["pytorch", "mpi", "jax", "xgboost"])
def test_the_trainjob_folder_of_each_framework_is_pinned(prod, framework, yaml_snapshot):
    from compiler.emit import tree

    files = tree.bundle_files(prod[framework])
    text = "---\n".join(f"# file: {path}\n{body}" for path, body in files.items())

    assert all(doc is not None for doc in yaml.safe_load_all(text))
    assert f"{prod[framework].target.namespace}/{prod[framework].target.name}/trainjob.yaml" in files
    assert text == yaml_snapshot


@pytest.mark.parametrize("framework", ["pytorch", "mpi", "jax", "xgboost"])
def test_each_rendered_trainjob_parses_with_the_upstream_models_without_losing_a_field(prod, framework):
    from kubeflow_trainer_api.models import TrainerV1alpha1TrainJob

    job = prod[framework].rendered_job()

    model = TrainerV1alpha1TrainJob.from_dict(job)

    assert model.spec.runtime_ref.name == job["spec"]["runtimeRef"]["name"]
    assert model.spec.trainer.num_nodes == job["spec"]["trainer"]["numNodes"]
    # the models drop what they do not know: equality means every field is a real one
    assert model.to_dict() == job


def test_the_models_notice_a_field_the_api_does_not_have():
    """The round trip above can fail: an unknown field does not come back."""
    from kubeflow_trainer_api.models import TrainerV1alpha1TrainJob

    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "x"},
           "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2, "nprocPerNode": 4}}}

    assert TrainerV1alpha1TrainJob.from_dict(job).to_dict() != job


def _stock_runtime(name: str) -> dict:
    from compiler_builders import shared_dir

    folder = shared_dir() / "reference" / "crds" / "trainer-v2.3.0" / "runtimes"
    (doc,) = [d for p in folder.glob("*.yaml") if (d := yaml.safe_load(p.read_text()))["metadata"]["name"] == name]
    return doc


@pytest.mark.parametrize("framework", ["pytorch", "mpi", "jax", "xgboost"])
def test_each_trainjob_passes_the_trainers_runtime_patch_checks_against_its_stock_runtime(prod, framework):
    """What the Trainer v2.3.0 webhook (jobset plugin) checks, applied to the compiled output
    with the release's runtime: the manager is a domain-prefixed path, every patched
    replicated job and container exists in the runtime, and no env is set on `node`."""
    job = prod[framework].rendered_job()
    runtime = _stock_runtime(job["spec"]["runtimeRef"]["name"])
    containers = {
        rj["name"]: {c["name"] for c in rj["template"]["spec"]["template"]["spec"]["containers"]}
        for rj in runtime["spec"]["template"]["spec"]["replicatedJobs"]
    }

    (patch,) = job["spec"]["runtimePatches"]
    domain, _, path = patch["manager"].partition("/")
    assert "." in domain and path
    for entry in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
        assert entry["name"] in containers
        pod = entry["template"]["spec"]["template"]["spec"]
        for container in pod.get("containers", []) + pod.get("initContainers", []):
            assert container["name"] in containers[entry["name"]]
            assert "env" not in container or container["name"] != "node"
