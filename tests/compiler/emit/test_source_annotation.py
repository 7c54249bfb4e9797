"""`trainforge.dev/source`: every object a job puts in the cluster names the spec it came from.

The value is the spec's path from the git repository's root whichever folder the compiler
ran in (the path given, outside a repository); on the objects' own metadata, never on a pod
template (moving a file changes no pod); the tree and the render stream agree; Namespaces,
shared by several specs, carry none.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml
from compiler_builders import EXAMPLES, example_sets, job_doc, project_doc, write_docs

from schemas.marks import SOURCE


def _objects(paths: list[Path]) -> list[dict]:
    from compiler.emit.render import rendered_objects
    from compiler.pipeline import compile_sources

    result = compile_sources(paths)
    assert result.ok, [d.text() for d in result.diagnostics]
    return [obj for env in result.environments for obj in rendered_objects(result, env)]


def _templates(node: object) -> list[dict]:
    """Every pod template inside an object (any mapping under a `template` key holding `spec`)."""
    found: list[dict] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "template" and isinstance(value, dict) and "spec" in value:
                found.append(value)
            found.extend(_templates(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_templates(item))
    return found


@pytest.mark.parametrize(("name", "paths"), example_sets(), ids=[name for name, _ in example_sets()])
def test_every_object_of_every_example_names_its_spec_and_no_pod_template_does(name, paths):
    objects = _objects(paths)

    for obj in objects:
        annotations = obj["metadata"].get("annotations") or {}
        if obj["kind"] == "Namespace":
            assert SOURCE not in annotations, obj["metadata"]["name"]
            continue
        assert annotations[SOURCE].startswith("examples/") and annotations[SOURCE].endswith(".yaml"), obj
        assert (EXAMPLES.parent / annotations[SOURCE]).is_file()
        for template in _templates(obj):
            assert SOURCE not in ((template.get("metadata") or {}).get("annotations") or {}), obj["metadata"]


def test_the_tree_writes_what_render_streams(tmp_path):
    from compiler.emit import tree
    from compiler.pipeline import compile_sources

    result = compile_sources([EXAMPLES / "project"])
    files = tree.files(result)
    stamped = {(d["kind"], d["metadata"]["name"]): d["metadata"]["annotations"][SOURCE]
               for path, text in files.items() if "kustomization" not in path and path.count("/") > 2
               for d in [yaml.safe_load(text)] if "metadata" in d and d["kind"] != "Namespace"}

    assert stamped[("PyTorchJob", "bert-finetune")] == "examples/project/bert-finetune.yaml"
    assert stamped[("PersistentVolumeClaim", "bert-finetune-ckpt")] == "examples/project/bert-finetune.yaml"
    assert {v for (kind, _), v in stamped.items() if kind == "ServiceAccount"} <= {
        "examples/project/bert-finetune.yaml", "examples/project/recsys.yaml"}


def test_the_value_is_the_path_from_the_repository_root_from_any_working_folder(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    write_docs(repo / "teams" / "nlp" / "jobs" / "bert.yaml", job_doc(name="bert"))
    write_docs(repo / "teams" / "nlp" / "trainforge.yaml", project_doc())
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    seen = set()
    for cwd in (repo, repo / "teams", repo / "teams" / "nlp" / "jobs", tmp_path):
        monkeypatch.chdir(cwd)
        (job,) = _objects([Path(os.path.relpath(repo / "teams" / "nlp", cwd))])[1:]
        seen.add(job["metadata"]["annotations"][SOURCE])

    assert seen == {"teams/nlp/jobs/bert.yaml"}


def test_outside_a_repository_the_value_is_the_path_given(tmp_path, monkeypatch):
    write_docs(tmp_path / "specs" / "bert.yaml", job_doc(name="bert"))
    monkeypatch.chdir(tmp_path)

    (_, job) = _objects([Path("specs")])

    assert job["metadata"]["annotations"][SOURCE] == "specs/bert.yaml"
