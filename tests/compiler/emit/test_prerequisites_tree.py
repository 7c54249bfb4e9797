"""`OUT/<env>/_prerequisites`: what Flux syncs before a trainer-v2 environment's jobs.

Every trainer-v2 environment's tree holds it (the Namespaces and each `restartScope: job`
job's own TrainingRuntime), no environment's kustomization lists it (so `kubectl kustomize
OUT/<env>` and Argo CD see what they did before), `check` covers it, and a kubeflow-v1
environment has none. Built through the real CLI, rendered with `kubectl kustomize`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from compiler_builders import job_doc, project_doc, run_cli, write_docs

PROJECT = project_doc(environments={"dev": {"controller": "train-controller"}, "prod": {"target": "trainer-v2"}})
WHOLE = {"policy": {"restartScope": "job", "backoffLimit": 2}}


def build(tmp_path: Path, *docs: dict, project: dict = PROJECT) -> Path:
    write_docs(tmp_path / "src" / "trainforge.yaml", project)
    write_docs(tmp_path / "src" / "jobs.yaml", *docs)
    run = run_cli("build", tmp_path / "src", "-o", tmp_path / "out")
    assert run.exit_code == 0, run.stderr
    return tmp_path / "out"


def kustomize(folder: Path) -> list[tuple[str, str]]:
    proc = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return sorted((o["kind"], f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}")
                  for o in yaml.safe_load_all(proc.stdout) if o)


def rendered(tmp_path: Path, env: str) -> list[tuple[str, str]]:
    run = run_cli("render", tmp_path / "src", "--env", env)
    return sorted((o["kind"], f"{o['metadata'].get('namespace', '')}/{o['metadata']['name']}")
                  for o in yaml.safe_load_all(run.stdout) if o)


def two_jobs(a: dict | None = None) -> tuple[dict, dict]:
    return job_doc(name="a", namespace="nlp", **(a or {})), job_doc(name="b", namespace="vision")


def test_a_trainer_v2_environment_keeps_its_namespaces_and_job_owned_runtimes_in_a_folder_nothing_lists(tmp_path):
    out = build(tmp_path, *two_jobs(WHOLE))

    assert kustomize(out / "prod/_prerequisites") == [
        ("Namespace", "/nlp"), ("Namespace", "/vision"), ("TrainingRuntime", "nlp/a")]
    assert yaml.safe_load((out / "prod/_prerequisites/kustomization.yaml").read_text()) == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "components": ["../nlp/a/runtime"], "resources": ["../nlp", "../vision"]}
    assert yaml.safe_load((out / "prod/kustomization.yaml").read_text())["resources"] == [
        "nlp/a", "nlp/namespace.yaml", "vision/b", "vision/namespace.yaml"]  # as before: no folder of its own
    assert kustomize(out / "prod") == rendered(tmp_path, "prod")
    assert ("TrainingRuntime", "nlp/a") in kustomize(out / "prod")  # Argo CD still syncs it, in wave -1
    assert kustomize(out / "prod/nlp") == [("Namespace", "/nlp")]


def test_a_kubeflow_v1_environment_has_no_prerequisites(tmp_path):
    out = build(tmp_path, *two_jobs(WHOLE))

    assert not (out / "dev/_prerequisites").exists()
    assert sorted(p.name for p in (out / "dev/nlp").iterdir()) == ["a", "namespace.yaml"]


def test_the_folder_stays_with_the_namespaces_when_the_last_job_owned_runtime_leaves(tmp_path):
    build(tmp_path, *two_jobs(WHOLE))
    out = build(tmp_path, *two_jobs())

    assert kustomize(out / "prod/_prerequisites") == [("Namespace", "/nlp"), ("Namespace", "/vision")]
    assert not (out / "prod/nlp/a/runtime").exists()


def test_without_namespaces_of_its_own_the_folder_builds_to_nothing(tmp_path):
    project = project_doc(defaults={"target": "trainer-v2", "namespaces": {"create": False}})
    out = build(tmp_path, *two_jobs(), project=project)

    assert yaml.safe_load((out / "default/_prerequisites/kustomization.yaml").read_text())["resources"] == []
    assert kustomize(out / "default/_prerequisites") == []  # an empty kustomization is an error, this is not


def test_check_covers_the_prerequisites(tmp_path):
    out = build(tmp_path, *two_jobs(WHOLE))
    prerequisites = out / "prod/_prerequisites/kustomization.yaml"
    prerequisites.write_text(prerequisites.read_text().replace("- ../nlp/a/runtime\n", ""))
    (out / "prod/vision/kustomization.yaml").unlink()

    run = run_cli("check", tmp_path / "src", "-o", out)

    assert run.exit_code == 1
    assert f"--- {prerequisites}" in run.stdout and "+- ../nlp/a/runtime\n" in run.stdout
    assert f"+++ {out}/prod/vision/kustomization.yaml" in run.stdout
