"""`.pre-commit-hooks.yaml`, checked by pre-commit itself and run by pre-commit in a
scratch repository. The hooks are run as `language: system` copies of the manifest's
entries (same entry, args, files, pass_filenames): `language: python` would make
pre-commit build a virtualenv and install trainforge from the network, which is the
install step and not the hook."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from gitops_tools import BIN, FIXTURES, run, tool

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
GIT = ["-c", "user.name=ci", "-c", "user.email=ci@example.com", "-c", "init.defaultBranch=main"]


def test_pre_commit_accepts_the_manifest():
    run(tool("pre-commit"), "validate-manifest", str(MANIFEST))


def test_the_manifest_offers_validate_check_and_plan():
    hooks = {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}
    assert set(hooks) == {"trainforge-validate", "trainforge-check", "trainforge-plan"}
    assert hooks["trainforge-validate"]["entry"] == "train-compile validate"
    assert hooks["trainforge-check"]["entry"] == "train-compile check"
    assert hooks["trainforge-plan"]["entry"] == "train-compile plan"
    assert hooks["trainforge-plan"]["stages"] == ["pre-push"] and hooks["trainforge-plan"]["verbose"] is True
    assert all(h["language"] == "python" and h["pass_filenames"] is False for h in hooks.values())


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository laid out as the hooks' default args expect: jobs/ and deploy/."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "project", repo / "jobs")
    run(tool("train-compile"), "build", "jobs", "-o", "deploy", cwd=repo)
    hooks = []
    for hook in yaml.safe_load(MANIFEST.read_text()):
        program, *rest = hook["entry"].split()
        local = {k: v for k, v in hook.items() if k not in ("description", "minimum_pre_commit_version")}
        hooks.append({**local, "entry": " ".join([tool(program), *rest]), "language": "system"})
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]}))
    run(tool("git"), *GIT, "init", "-q", cwd=repo)
    run(tool("git"), *GIT, "add", ".", cwd=repo)
    run(tool("git"), *GIT, "commit", "-q", "-m", "init", cwd=repo)
    return repo


def pre_commit(repo: Path, hook: str, *, stage: str = "pre-commit"):
    env = {"PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": str(repo.parent),
           "PRE_COMMIT_HOME": str(repo.parent / "pre-commit-home")}
    return run(tool("pre-commit"), "run", hook, "--all-files", "--color", "never", "--hook-stage", stage, cwd=repo,
               env=env, ok=False)


def test_both_hooks_pass_on_a_clean_repository(repo):
    for hook in ("trainforge-validate", "trainforge-check"):
        proc = pre_commit(repo, hook)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Passed" in proc.stdout


def test_check_fails_with_a_diff_when_the_output_is_stale(repo):
    job = repo / "jobs" / "jobs" / "bert.yaml"
    job.write_text(job.read_text().replace("image: ghcr.io/acme/bert:1.4.2", "image: ghcr.io/acme/bert:1.5.0", 1))
    assert pre_commit(repo, "trainforge-validate").returncode == 0
    proc = pre_commit(repo, "trainforge-check")
    assert proc.returncode == 1
    assert "+            image: ghcr.io/acme/bert:1.5.0" in proc.stdout
    assert "deploy is stale; run train-compile build" in proc.stdout


def test_validate_fails_on_an_invalid_job_with_its_position(repo):
    job = repo / "jobs" / "jobs" / "bert.yaml"
    job.write_text(job.read_text().replace("nodes: 2\n", "nodes: true\n", 1))
    proc = pre_commit(repo, "trainforge-validate")
    assert proc.returncode == 1
    line = next(i for i, text in enumerate(job.read_text().splitlines(), 1) if text.startswith("  nodes: true"))
    assert f"jobs/jobs/bert.yaml:{line}:10: error: spec.nodes: expected a whole number" in proc.stdout
    assert os.path.exists(repo / "deploy")


def test_the_plan_hook_prints_what_a_push_does_to_the_runs(repo):
    run(tool("git"), *GIT, "update-ref", "refs/remotes/origin/main", "HEAD", cwd=repo)  # what was pushed before
    job = repo / "jobs" / "jobs" / "bert.yaml"
    job.write_text(job.read_text().replace("nodes: 2\n", "nodes: 3\n", 1))

    proc = pre_commit(repo, "trainforge-plan", stage="pre-push")

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "train-compile plan of jobs against origin/main\n" in proc.stdout  # verbose: shown though it passed
    assert "restarts-run" in proc.stdout and "Kueue stops the job" in proc.stdout  # bert is queued
