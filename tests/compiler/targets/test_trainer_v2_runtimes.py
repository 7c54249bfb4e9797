"""Trainer v2 runtimes written beside the jobs, the image a runtime brings, and `initializer`.

A TrainingRuntime or ClusterTrainingRuntime in the sources is checked against the Trainer CRD at
its own lines, compiled with the jobs that name it (one copy per namespace, carried by one job),
and what review asks of the stock runtimes it asks of it too: the mlPolicy, a trainer step, the
trainer's image, an initializer step. Expected values are written from the Trainer v2.3.0 API
(`trainer.kubeflow.org/trainjob-ancestor-step`, `initializer.dataset.storageUri`), not read back.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from compiler_builders import compile_docs, job_doc, project_doc, run_cli, write_docs

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def step_job(name: str, step: str, container: str, image: str = "ghcr.io/acme/step:1") -> dict[str, Any]:
    return {"name": name, "template": {"metadata": {"labels": {ANCESTOR: step}}, "spec": {"template": {"spec": {
        "containers": [{"name": container, "image": image}]}}}}}


def runtime(name: str = "torch-init", kind: str = "TrainingRuntime", *, jobs: list[dict] | None = None,
            namespace: str | None = None, policy: str = "torch") -> dict[str, Any]:
    jobs = jobs if jobs is not None else [step_job("dataset-initializer", "dataset-initializer", "dataset-initializer"),
                                          step_job("node", "trainer", "node", "ghcr.io/acme/torch:2")]
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
            "spec": {"mlPolicy": {"numNodes": 1, policy: {}}, "template": {"spec": {"replicatedJobs": jobs}}}}


def v2_job(name: str = "sft", *, namespace: str | None = None, **spec: Any) -> dict[str, Any]:
    """A pytorch job without an image unless `spec` gives one."""
    doc = job_doc("pytorch", name=name, namespace=namespace, **spec)
    if "image" not in spec:
        del doc["spec"]["image"]
    return doc


PROJECT = project_doc(environments={"dev": {}, "prod": {"target": "trainer-v2"}})
OWN = {"name": "torch-init", "kind": "TrainingRuntime"}


def compiled(folder: Path, *docs: dict[str, Any], env: str = "prod") -> list[dict[str, Any]]:
    from compiler.emit.render import rendered_objects

    result = compile_docs(folder, *docs, project=PROJECT)
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    return rendered_objects(result, env)


def of_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


def messages(folder: Path, *docs: dict[str, Any], severity: str = "error") -> list[str]:
    result = compile_docs(folder, *docs, project=PROJECT)
    return [f"{d.path}: {d.message}".replace(f"{folder}/", "") for d in result.diagnostics if d.severity == severity]


# --- what the TrainJob says ------------------------------------------------------------------------


def test_without_an_image_the_trainjob_leaves_the_stock_runtimes(tmp_path):
    doc = v2_job(environments={"dev": None})

    (job,) = of_kind(compiled(tmp_path, doc), "TrainJob")

    assert "image" not in job["spec"]["trainer"]
    assert job["spec"]["runtimeRef"] == {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"}


def test_initializer_becomes_the_trainjobs_with_the_secret_as_secret_ref(tmp_path):
    init = {"dataset": {"storageUri": "hf://tatsu-lab/alpaca", "secret": "hf", "env": {"REVISION": "main"}},
            "model": {"storageUri": "s3://models/llama"}}
    jobs = [step_job("dataset-initializer", "dataset-initializer", "dataset-initializer"),
            step_job("model-initializer", "model-initializer", "model-initializer"),
            step_job("node", "trainer", "node")]
    doc = v2_job(runtime=OWN, initializer=init, environments={"dev": None})

    (job,) = of_kind(compiled(tmp_path, runtime(jobs=jobs), doc), "TrainJob")

    assert job["spec"]["initializer"] == {
        "dataset": {"storageUri": "hf://tatsu-lab/alpaca", "secretRef": {"name": "hf"},
                    "env": [{"name": "REVISION", "value": "main"}]},
        "model": {"storageUri": "s3://models/llama"},
    }


# --- the runtimes of the sources in the tree --------------------------------------------------------


def test_a_runtime_beside_the_job_is_compiled_into_its_namespace_with_it(tmp_path):
    doc = v2_job(namespace="nlp", runtime=OWN, environments={"dev": None})

    objects = compiled(tmp_path, runtime(), doc)

    (placed,) = of_kind(objects, "TrainingRuntime")
    assert placed["metadata"]["namespace"] == "nlp"
    assert placed["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] == "-1"  # before its TrainJob
    assert placed["spec"] == runtime()["spec"]


def test_one_runtime_named_by_jobs_in_two_namespaces_is_placed_once_in_each(tmp_path):
    docs = [v2_job(n, namespace=ns, runtime=OWN, environments={"dev": None})
            for n, ns in (("b", "nlp"), ("a", "nlp"), ("c", "vision"))]

    result = compile_docs(tmp_path, runtime(), *docs, project=PROJECT)

    carriers = {b.target.name: [r["metadata"]["namespace"] for c in b.components if c.name == "runtime"
                                for r in c.resources] for b in result.bundles["prod"]}
    assert carriers == {"a": ["nlp"], "b": [], "c": ["vision"]}  # the first job of each namespace carries it


def test_a_cluster_runtime_is_placed_once_for_all_jobs(tmp_path):
    cluster = runtime("torch-team", "ClusterTrainingRuntime")
    docs = [v2_job(n, namespace=ns, runtime="torch-team", environments={"dev": None}) for n, ns in (("a", "x"), ("b", "y"))]

    (placed,) = of_kind(compiled(tmp_path, cluster, *docs), "ClusterTrainingRuntime")

    assert "namespace" not in placed["metadata"]


def test_a_runtime_no_job_names_is_not_compiled_nor_in_a_kubeflow_v1_environment(tmp_path):
    named = v2_job(runtime=OWN, image="ghcr.io/acme/sft:1")
    unused = runtime("unused")

    result = compile_docs(tmp_path, runtime(), unused, named, project=PROJECT)

    from compiler.emit.render import rendered_objects
    assert [o["metadata"]["name"] for o in of_kind(rendered_objects(result, "prod"), "TrainingRuntime")] == ["torch-init"]
    assert of_kind(rendered_objects(result, "dev"), "TrainingRuntime") == []


def test_flux_takes_the_runtimes_into_the_prerequisites_and_out_of_the_environment(tmp_path):
    from compiler.emit import tree
    from compiler.gitops import flux

    result = compile_docs(tmp_path, runtime("torch-team", "ClusterTrainingRuntime"),
                          v2_job(runtime="torch-team", environments={"dev": None}), project=PROJECT)
    files = tree.files(result)

    assert "components:\n- ../default/sft/runtime\n" in files["prod/_prerequisites/kustomization.yaml"]
    handed = flux.handed_over(flux.job_runtimes(result.project, ["prod"])["prod"])
    assert {p["target"]["kind"] for p in handed} == {"Namespace", "TrainingRuntime", "ClusterTrainingRuntime"}


def test_validate_over_a_compiled_tree_skips_its_runtimes(tmp_path):
    write_docs(tmp_path / "src" / "trainforge.yaml", PROJECT)
    write_docs(tmp_path / "src" / "jobs.yaml", runtime(), v2_job(runtime=OWN, environments={"dev": None}))
    assert run_cli("build", tmp_path / "src", "-o", tmp_path / "out").exit_code == 0

    run = run_cli("validate", tmp_path / "out")

    assert "TrainingRuntime" in " ".join(run.notices())  # skipped: ours, compiled
    (error,) = run.errors()
    assert error.startswith(f"{tmp_path / 'out'}:1:1: error: found no TrainJob documents in {tmp_path / 'out'}")


# --- review ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        pytest.param(lambda: [v2_job(initializer={"dataset": {"storageUri": "hf://x/y"}}, environments={"dev": None})],
                     ["spec.initializer.dataset: the stock runtime torch-distributed has no dataset-initializer step"],
                     id="the stock runtimes have no initializer step"),
        pytest.param(lambda: [runtime(jobs=[step_job("node", "trainer", "node", "")]),
                              v2_job(runtime=OWN, environments={"dev": None})],
                     ["spec.image: is required: TrainingRuntime torch-init (jobs.yaml:"],
                     id="no image in the job nor the runtime's trainer node"),
        pytest.param(lambda: [runtime(jobs=[step_job("node", "launcher", "node")]),
                              v2_job(runtime=OWN, image="i", environments={"dev": None})],
                     ["spec.runtime: TrainingRuntime torch-init (jobs.yaml:"],
                     id="a runtime without a trainer step"),
        pytest.param(lambda: [runtime(jobs=[step_job("trainer", "trainer", "main")]),
                              v2_job(runtime=OWN, image="i", environments={"dev": None})],
                     ["spec.runtime: TrainingRuntime torch-init (jobs.yaml:"],
                     id="a runtime without the node job the runtimePatches name"),
        pytest.param(lambda: [runtime(policy="jax"), v2_job(runtime=OWN, environments={"dev": None})],
                     ["spec.runtime: TrainingRuntime torch-init runs mlPolicy jax, not pytorch (torch)"],
                     id="a runtime of another mlPolicy"),
        pytest.param(lambda: [runtime(namespace="other"), v2_job(runtime=OWN, environments={"dev": None})],
                     ["spec.runtime: TrainingRuntime torch-init (jobs.yaml:"],
                     id="a runtime in another namespace than the job"),
        pytest.param(lambda: [v2_job(image="i", initializer={"model": {"storageUri": "hf://m"}},
                                     environments={"prod": None})],
                     ["spec.initializer: a kubeflow.org/v1 job has no initializer step"],
                     id="initializer under kubeflow-v1"),
        pytest.param(lambda: [v2_job(environments={"prod": None})],
                     ["spec.image: is required: the master pods of a kubeflow.org/v1 job run the image"],
                     id="no image under kubeflow-v1"),
    ],
)
def test_what_a_runtime_cannot_give_is_a_positioned_error(tmp_path, docs, expected):
    got = messages(tmp_path, *docs())

    assert len(got) == len(expected), got
    for line, want in zip(got, expected):
        assert line.startswith(want), line


def test_a_runtime_the_compiler_cannot_see_is_a_notice_at_what_relies_on_it(tmp_path):
    doc = v2_job(runtime="team-runtime", initializer={"model": {"storageUri": "hf://m"}}, environments={"dev": None})

    got = messages(tmp_path, doc, severity="notice")

    assert [line.split(":")[0] for line in got] == ["spec.image", "spec.initializer.model"]
    assert all("cannot see ClusterTrainingRuntime team-runtime" in line for line in got)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(lambda r: r["metadata"].update(generateName="x-"),
                     "metadata.generateName: has no place in a TrainingRuntime kept in git", id="generateName"),
        pytest.param(lambda r: r["spec"]["mlPolicy"]["torch"].update(numProcPerNod=2),
                     "spec.mlPolicy.torch.numProcPerNod: unknown field 'numProcPerNod'", id="a field the CRD lacks"),
        pytest.param(lambda r: r["spec"]["template"]["spec"]["replicatedJobs"][0].update(replicas="1"),
                     "spec.template.spec.replicatedJobs[0].replicas: expected integer", id="a wrong type"),
        pytest.param(lambda r: r.update(status={}), "status: a TrainingRuntime in git has no 'status'", id="status"),
    ],
)
def test_a_runtime_document_is_checked_against_the_trainer_crd_at_its_lines(tmp_path, change, expected):
    broken = copy.deepcopy(runtime())
    change(broken)

    got = messages(tmp_path, broken, v2_job(image="i", environments={"prod": None}))

    assert len(got) == 1 and got[0].startswith(expected), got
