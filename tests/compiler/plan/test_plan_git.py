"""The base from git in a CI checkout: a clone that lacks it is told the command that fetches it,
and that command works (run here on real shallow and single-branch clones).

CI passes the base as `origin/main`; `git fetch origin origin/main` names no branch of the
remote, so the hint fetches the branch into its remote-tracking name. A `HEAD~N` of a shallow
clone is fetched by deepening it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
from plan_kit import GIT_ENV, new_repo, running_job

from compiler_builders import run_cli


@pytest.fixture
def origin(tmp_path):
    """A repository with main (two commits) and a feature branch that scales bert: the pull request."""
    repo = new_repo(tmp_path)
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.commit("base")
    repo.write("jobs/other.yaml", running_job("other"))
    repo.commit("main moves on")
    repo.git("checkout", "-q", "-b", "feature")
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    repo.commit("scale bert")
    return repo


def _clone(origin, dest, *flags: str):
    subprocess.run(["git", "clone", "-q", *flags, "--branch", "feature", f"file://{origin.root}", str(dest)],
                   check=True, env={**os.environ, **GIT_ENV})
    return dest


def _hint(stderr: str) -> str:
    match = re.search(r"fetch it \((git fetch [^,]+),", stderr)
    assert match, stderr
    return match[1]


def _run_hint(clone, command: str) -> None:
    subprocess.run(shlex.split(command), cwd=clone, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


@pytest.mark.parametrize("flags", [
    pytest.param(("--depth", "1"), id="a shallow clone, as actions/checkout makes by default"),
    pytest.param(("--single-branch",), id="a single-branch clone, as GitLab's fetch of the merge request branch"),
])
def test_a_clone_without_origin_main_is_told_a_fetch_that_works(origin, tmp_path, flags):
    clone = _clone(origin, tmp_path / "clone", *flags)

    run = run_cli("plan", clone / "jobs", "--base", "origin/main")

    assert run.exit_code == 2
    hint = _hint(run.stderr)
    assert hint == "git fetch origin main:refs/remotes/origin/main"
    _run_hint(clone, hint)
    again = run_cli("plan", clone / "jobs", "--base", "origin/main", "--format", "json")
    assert again.exit_code == 0, again.stderr
    assert '"change": "update"' in again.stdout


def test_head_1_of_a_shallow_clone_is_fetched_by_deepening(origin, tmp_path):
    clone = _clone(origin, tmp_path / "clone", "--depth", "1")

    run = run_cli("plan", clone / "jobs", "--base", "HEAD~1")

    assert run.exit_code == 2 and "is not in this shallow clone" in run.stderr
    hint = _hint(run.stderr)
    assert hint == "git fetch --deepen=1"
    _run_hint(clone, hint)
    assert run_cli("plan", clone / "jobs", "--base", "HEAD~1").exit_code == 0


def test_a_branch_name_the_clone_lacks_is_fetched_into_origin(origin, tmp_path):
    clone = _clone(origin, tmp_path / "clone", "--depth", "1")

    run = run_cli("plan", clone / "jobs", "--base", "main")

    assert "git fetch origin main:refs/remotes/origin/main, then plan with --base origin/main" in run.stderr
    _run_hint(clone, "git fetch origin main:refs/remotes/origin/main")
    assert run_cli("plan", clone / "jobs", "--base", "origin/main").exit_code == 0
