"""docs/gitops.md stays true: its workflows validate against GitHub's workflow schema
(check-jsonschema's vendored copy), its pre-commit config passes pre-commit's own
validation, and its ignoreDifferences example is what the generator writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from gitops_tools import run, tool

from compiler.gitops import argocd

DOC = Path(__file__).resolve().parents[2] / "docs" / "gitops.md"
BLOCKS = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def _blocks(first_line: str) -> list[str]:
    return [b for b in BLOCKS if b.startswith(first_line)]


@pytest.mark.parametrize("block", _blocks("# .github/workflows/"), ids=lambda b: b.splitlines()[0][2:])
def test_the_workflows_validate_against_the_github_workflow_schema(tmp_path, block):
    path = tmp_path / "workflow.yaml"
    path.write_text(block)
    run(tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path))
    steps = [s.get("run", "") for job in yaml.safe_load(block)["jobs"].values() for s in job["steps"]]
    assert any("train-compile" in s for s in steps)


def test_the_workflows_are_all_there():
    names = [b.splitlines()[0] for b in _blocks("# .github/workflows/")]
    assert names == ["# .github/workflows/trainforge.yaml", "# .github/workflows/trainforge-render.yaml",
                     "# .github/workflows/trainforge-plan.yaml"]


def test_the_gitlab_plan_job_validates_against_gitlabs_schema(tmp_path):
    (block,) = _blocks("# .gitlab-ci.yml")
    path = tmp_path / ".gitlab-ci.yml"
    path.write_text(block)
    run(tool("check-jsonschema"), "--builtin-schema", "vendor.gitlab-ci", str(path))
    assert "train-compile plan" in block and "--format markdown" in block


def test_the_pre_commit_config_is_valid(tmp_path):
    (block,) = _blocks("# .pre-commit-config.yaml")
    path = tmp_path / ".pre-commit-config.yaml"
    path.write_text(block)
    run(tool("pre-commit"), "validate-config", str(path))
    ids = {h["id"] for r in yaml.safe_load(block)["repos"] for h in r["hooks"]}
    manifest = yaml.safe_load((DOC.parents[1] / ".pre-commit-hooks.yaml").read_text())
    assert ids == {h["id"] for h in manifest}


def test_the_ignore_differences_example_is_what_is_generated():
    (block,) = _blocks("ignoreDifferences:")
    (shown,) = yaml.safe_load(block)["ignoreDifferences"]
    (generated,) = [e for e in argocd.ignore_differences() if e["kind"] == "PyTorchJob"]
    assert shown == generated
