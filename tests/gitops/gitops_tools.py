"""Helpers for the GitOps tests: the real tools (train-compile, kubectl kustomize, git,
pre-commit) run as subprocesses. A module of its own name (not conftest) so imports
never pick up another folder's conftest."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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
