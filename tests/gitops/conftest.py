"""Fixtures of the GitOps tests (helpers live in gitops_tools)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitops_tools import FIXTURES, run, tool


@pytest.fixture(scope="session")
def project_tree(tmp_path_factory) -> Path:
    """The fixture project compiled with `train-compile build` into <tmp>/deploy."""
    out = tmp_path_factory.mktemp("repo") / "deploy"
    run(tool("train-compile"), "build", str(FIXTURES / "project"), "-o", str(out))
    return out
