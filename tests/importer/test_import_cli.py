"""`train-compile import` through the real CLI: what it writes, what `render` makes of it, and bad
input (a positioned error, exit 1, no traceback, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from compiler_builders import run_cli
from manifest_kit import pytorchjob

from compiler.importing.sameness import differences

PYTORCHJOB = pytorchjob("bert", "nlp", image="ghcr.io/acme/bert:1.4.2", workers=3, limits="{nvidia.com/gpu: 8}")
# what kubectl get -o yaml adds to it
STATUS = """\
status:
  conditions:
    - {type: Running, status: "True", reason: PyTorchJobRunning}
  replicaStatuses: {Master: {active: 1}, Worker: {active: 3}}
"""
SERVER = """\
  uid: 8c8f3c8e-1f6a-4b7e-9d0c-2b1b1f0a9e11
  resourceVersion: "48213"
  generation: 1
  creationTimestamp: "2025-01-02T03:04:05Z"
  managedFields:
    - {manager: kubectl-client-side-apply, operation: Update, apiVersion: kubeflow.org/v1}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: '{"apiVersion":"kubeflow.org/v1"}'
"""


def kubectl_get(text: str = PYTORCHJOB) -> str:
    return text.replace("  namespace: nlp\n", "  namespace: nlp\n" + SERVER) + STATUS


def write(tmp_path: Path, text: str, name: str = "job.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def rendered(folder: Path) -> list[dict]:
    run = run_cli("render", folder)
    assert run.exit_code == 0, run.stderr
    return [d for d in yaml.safe_load_all(run.stdout) if d and d["kind"] != "Namespace"]


def test_a_manifest_becomes_a_spec_that_renders_the_same_job(tmp_path):
    source = write(tmp_path, PYTORCHJOB)

    run = run_cli("import", source, "-o", tmp_path / "jobs")

    assert run.exit_code == 0, run.stderr
    assert sorted(p.name for p in (tmp_path / "jobs").iterdir()) == ["bert.yaml", "trainforge.yaml"]
    spec = yaml.safe_load((tmp_path / "jobs" / "bert.yaml").read_text())
    assert spec["spec"] == {"framework": "pytorch", "image": "ghcr.io/acme/bert:1.4.2",
                            "command": ["torchrun", "train.py"], "nodes": 4, "resources": {"gpu": 8}}
    (job,) = rendered(tmp_path / "jobs")
    assert differences(yaml.safe_load(PYTORCHJOB), job) == []
    assert "PyTorchJob nlp/bert -> " in run.stderr


def test_kubectl_get_output_on_stdin_drops_what_the_cluster_wrote(tmp_path):
    from click.testing import CliRunner

    from compiler.cli.main import main

    run = CliRunner().invoke(main, ["import", "-", "-o", str(tmp_path / "jobs")], input=kubectl_get())

    assert run.exit_code == 0, run.stderr
    assert "left out what the cluster wrote: status, uid, resourceVersion, creationTimestamp, generation," \
           " managedFields, annotations.kubectl.kubernetes.io/last-applied-configuration" in run.stderr
    spec = yaml.safe_load((tmp_path / "jobs" / "bert.yaml").read_text())
    assert "annotations" not in spec["metadata"]


def test_a_job_a_gitops_engine_synced_comes_without_the_engines_marks(tmp_path):
    marks = ("  labels:\n    kustomize.toolkit.fluxcd.io/name: jobs\n    kustomize.toolkit.fluxcd.io/namespace: flux-system\n"
             "    team: nlp\n  annotations:\n    argocd.argoproj.io/tracking-id: 'jobs:kubeflow.org/PyTorchJob:nlp/bert'\n"
             "    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n")
    source = write(tmp_path, PYTORCHJOB.replace("  namespace: nlp\n", "  namespace: nlp\n" + marks))

    run = run_cli("import", source, "-o", tmp_path / "jobs")

    assert run.exit_code == 0, run.stderr
    assert "left out the marks of the GitOps engine that synced it: labels.kustomize.toolkit.fluxcd.io/name," \
           " labels.kustomize.toolkit.fluxcd.io/namespace, annotations.argocd.argoproj.io/tracking-id" in run.stderr
    meta = yaml.safe_load((tmp_path / "jobs" / "bert.yaml").read_text())["metadata"]
    # the ssa annotation is a setting a person wrote (how Flux applies the object): kept
    assert (meta["labels"], meta["annotations"]) == ({"team": "nlp"}, {"kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent"})
    assert run_cli("import", "--check", source).exit_code == 0


def test_a_list_of_jobs_in_two_namespaces_gets_a_folder_per_namespace(tmp_path):
    other = PYTORCHJOB.replace("name: bert", "name: gpt").replace("namespace: nlp", "namespace: llm")
    items = [yaml.safe_load(PYTORCHJOB), yaml.safe_load(other), {"apiVersion": "v1", "kind": "ConfigMap",
                                                                  "metadata": {"name": "settings"}}]
    source = write(tmp_path, yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))

    run = run_cli("import", source, "-o", tmp_path / "jobs")

    assert run.exit_code == 0, run.stderr
    assert sorted(str(p.relative_to(tmp_path / "jobs")) for p in (tmp_path / "jobs").rglob("*.yaml")) == [
        "llm/gpt.yaml", "nlp/bert.yaml", "trainforge.yaml"]
    assert "not a training job, left out: ConfigMap settings" in run.stderr


def test_check_says_it_is_the_same_job_and_writes_nothing(tmp_path):
    source = write(tmp_path, PYTORCHJOB)

    run = run_cli("import", "--check", source)

    assert run.exit_code == 0, run.stderr
    assert run.stdout == f"PyTorchJob nlp/bert ({source}:1): the same job\n"


def test_check_prints_each_difference_of_a_job_the_spec_cannot_say(tmp_path):
    source = write(tmp_path, PYTORCHJOB.replace("  namespace: nlp\n", "  namespace: nlp\n  finalizers: [acme.dev/keep]\n")
                   .replace("spec:\n", "spec:\n  runPolicy:\n    schedulingPolicy: {queue: research}\n", 1))

    run = run_cli("import", "--check", source, "-o", tmp_path / "jobs")

    assert run.exit_code == 1
    assert run.stdout.splitlines() == [
        f"PyTorchJob nlp/bert ({source}:1): 2 difference(s), original -> round trip",
        '  metadata.finalizers: ["acme.dev/keep"] -> (absent)',
        '  spec.runPolicy.schedulingPolicy.queue: "research" -> (absent)',
    ]
    assert not (tmp_path / "jobs").exists()


BAD = [
    ("not YAML", "kind: [PyTorchJob\n", "job.yaml:2:1: error: expected ',' or ']', but got '<stream end>'"),
    ("not a job", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
     "job.yaml:1:1: error: found no training job in 1 file(s)"),
    ("a kind nobody knows", "apiVersion: kubeflow.org/v1\nkind: PytorchJob\nmetadata: {name: x}\n",
     "job.yaml:2:7: error: kind: kubeflow.org/v1 PytorchJob is no job kind train-compile reads; did you mean"
     " PyTorchJob?"),
    ("a misspelt kind", "apiVersion: kubeflow.org/v1\nkind: PyTorchJobb\nmetadata: {name: x}\n",
     "job.yaml:2:7: error: kind: kubeflow.org/v1 PyTorchJobb is no job kind train-compile reads; did you mean"
     " PyTorchJob?"),
    ("another kind of the group", "apiVersion: kubeflow.org/v1beta1\nkind: Experiment\nmetadata: {name: x}\n",
     "job.yaml:1:1: error: found no training job in 1 file(s)"),
    ("a legacy version", PYTORCHJOB.replace("kubeflow.org/v1", "kubeflow.org/v1alpha2"),
     "job.yaml:1:13: error: apiVersion: kubeflow.org/v1alpha2 PyTorchJob is a legacy version no operator serves"
     " any more"),
    ("a generated name", PYTORCHJOB.replace("  name: bert", "  generateName: bert-"),
     "job.yaml:4:3: error: metadata.generateName: the job has no name"),
    ("a field the target cannot carry", PYTORCHJOB.replace(
        "spec:\n  pytorchReplicaSpecs:", "spec:\n  runPolicy:\n    schedulingPolicy: {queue: research}\n"
        "  pytorchReplicaSpecs:"),
     'job.yaml:8:24: error: spec.runPolicy.schedulingPolicy.queue: the spec cannot say this: the round trip leaves'
     ' out "research"'),
    ("not a mapping", "- a\n- b\n", "job.yaml:1:1: error: not a Kubernetes object (a list)"),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_a_positioned_error_and_nothing_is_written(tmp_path, text, expected, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, text)

    run = run_cli("import", "job.yaml", "-o", "jobs")

    assert run.exit_code == 1
    assert expected in run.stderr, run.stderr
    assert run.stderr.rstrip().endswith("nothing was written")
    assert not (tmp_path / "jobs").exists()


def test_one_refused_job_keeps_the_others_from_being_written(tmp_path):
    good = write(tmp_path, PYTORCHJOB, "good.yaml")
    bad = write(tmp_path, PYTORCHJOB.replace("name: bert", "generateName: gpt-"), "bad.yaml")

    run = run_cli("import", good, bad, "-o", tmp_path / "jobs")

    assert run.exit_code == 1
    assert not (tmp_path / "jobs").exists()


def test_a_spec_already_there_with_other_content_is_not_replaced(tmp_path):
    source = write(tmp_path, PYTORCHJOB)
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "bert.yaml").write_text("# mine\n")

    run = run_cli("import", source, "-o", tmp_path / "jobs")

    assert run.exit_code == 1
    assert "bert.yaml exists already" in run.stderr
    assert (tmp_path / "jobs" / "bert.yaml").read_text() == "# mine\n"
    assert not (tmp_path / "jobs" / "trainforge.yaml").exists()


def test_without_an_output_folder_it_is_a_usage_error(tmp_path):
    run = run_cli("import", write(tmp_path, PYTORCHJOB))

    assert run.exit_code == 2
    assert "-o DIR" in run.stderr
