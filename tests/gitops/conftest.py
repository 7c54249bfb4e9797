"""Helpers for the GitOps tests: the real tools (train-compile, kubectl kustomize, git) run
as subprocesses on fixture projects compiled once per session."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

FIXTURES = Path(__file__).parent / "fixtures"
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}:/usr/local/bin:/usr/bin:/bin")
    assert found, f"{name} is needed by the GitOps tests (kubectl ships kustomize; train-compile is this package)"
    return found


def run(*args: str, cwd: Path | None = None, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def kustomize(folder: Path) -> list[dict]:
    """`kubectl kustomize folder`, parsed."""
    return [d for d in yaml.safe_load_all(run(tool("kubectl"), "kustomize", str(folder)).stdout) if d]


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [o for o in objects if o["kind"] == kind]


@pytest.fixture(scope="session")
def project_tree(tmp_path_factory) -> Path:
    """The fixture project compiled with `train-compile build` into <tmp>/deploy."""
    out = tmp_path_factory.mktemp("repo") / "deploy"
    run(tool("train-compile"), "build", str(FIXTURES / "project"), "-o", str(out))
    return out
