"""The Namespace objects of the compiled tree: one per namespace used, labelled with the
environment's Pod Security level, never pruned or deleted by Flux or Argo CD, and
switched off per project or environment (`namespaces: {create: false}`)."""

from __future__ import annotations

import subprocess

import yaml
from compiler_builders import compile_docs, job_doc, project_doc

from compiler.emit import serialize
from compiler.emit.render import rendered_objects
from compiler.emit.tree import files


def namespaces_of(result, env: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in rendered_objects(result, env) if o["kind"] == "Namespace"}


def two_jobs() -> tuple[dict, dict]:
    return job_doc(name="a", namespace="nlp"), job_doc(name="b", namespace="vision")


def test_every_namespace_a_job_uses_gets_one_namespace_object_at_baseline_by_default(tmp_path):
    result = compile_docs(tmp_path, *two_jobs(), job_doc(name="c", namespace="nlp"), job_doc(name="d"))

    spaces = namespaces_of(result, "default")

    assert sorted(spaces) == ["default", "nlp", "vision"]
    labels = spaces["nlp"]["metadata"]["labels"]
    assert {labels[f"pod-security.kubernetes.io/{m}"] for m in ("enforce", "warn", "audit")} == {"baseline"}
    assert {labels[f"pod-security.kubernetes.io/{m}-version"] for m in ("enforce", "warn", "audit")} == {"v1.32"}


def test_a_namespace_is_never_pruned_or_deleted_by_the_gitops_engines(tmp_path):
    spaces = namespaces_of(compile_docs(tmp_path, *two_jobs()), "default")

    assert spaces["nlp"]["metadata"]["annotations"] == {
        "kustomize.toolkit.fluxcd.io/prune": "Disabled",
        "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
        "argocd.argoproj.io/sync-wave": "-1",  # with the ServiceAccounts it holds (Namespaces first)
    }


def test_the_labels_follow_each_environments_level(tmp_path):
    project = project_doc(
        policy={"podSecurity": "privileged"},
        environments={"dev": {}, "prod": {"policy": {"podSecurity": "restricted", "podSecurityDefaults": True}}},
    )
    result = compile_docs(tmp_path, job_doc(name="a", namespace="nlp", podTemplate={"spec": {"securityContext": {
        "runAsNonRoot": True}}}), project=project)

    assert not [d.text() for d in result.diagnostics if d.severity == "error"]
    enforce = "pod-security.kubernetes.io/enforce"
    assert namespaces_of(result, "dev")["nlp"]["metadata"]["labels"][enforce] == "privileged"
    assert namespaces_of(result, "prod")["nlp"]["metadata"]["labels"][enforce] == "restricted"


def test_namespaces_create_false_turns_them_off_per_project_and_per_environment(tmp_path):
    project = project_doc(
        defaults={"namespaces": {"create": False}},
        environments={"dev": {}, "prod": {"namespaces": {"create": True}}},
    )
    result = compile_docs(tmp_path, *two_jobs(), project=project)

    assert namespaces_of(result, "dev") == {}
    assert sorted(namespaces_of(result, "prod")) == ["nlp", "vision"]
    tree = files(result)
    assert "dev/nlp/namespace.yaml" not in tree and "prod/nlp/namespace.yaml" in tree
    assert "nlp/namespace.yaml" not in yaml.safe_load(tree["dev/kustomization.yaml"])["resources"]


def test_kubernetes_own_namespaces_are_never_emitted(tmp_path):
    result = compile_docs(tmp_path, job_doc(name="a", namespace="kube-system"), job_doc(name="b", namespace="ml"))

    assert sorted(namespaces_of(result, "default")) == ["ml"]


def test_the_namespace_file_sits_beside_the_job_folders_and_kustomize_renders_it_first(tmp_path):
    result = compile_docs(tmp_path / "src", *two_jobs())
    tree = files(result)
    for rel, text in tree.items():
        (tmp_path / "out" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "out" / rel).write_text(text, encoding="utf-8")

    root = yaml.safe_load(tree["default/kustomization.yaml"])
    rendered = subprocess.run(["kubectl", "kustomize", str(tmp_path / "out" / "default")],
                              capture_output=True, text=True, check=True).stdout

    assert root["resources"] == ["nlp/a", "nlp/namespace.yaml", "vision/b", "vision/namespace.yaml"]
    objects = list(yaml.safe_load_all(rendered))
    assert [o["kind"] for o in objects[:2]] == ["Namespace", "Namespace"]
    assert objects == list(yaml.safe_load_all(serialize.dump_all(rendered_objects(result, "default"))))
