"""What the Dockerfile installs: a wheel built from the repository carries every file the
programs read at run time (install manifests, JSON Schemas, Lua health checks) and both
console scripts, and nothing from tests/, bench/ or the test world (testworld/)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def contents(wheel: Path) -> zipfile.ZipFile:  # `wheel`: tests/install/conftest.py, built once per session
    return zipfile.ZipFile(wheel)


def test_the_wheel_carries_every_runtime_file(contents) -> None:
    names = set(contents.namelist())
    wanted = [p.relative_to(REPO).as_posix() for pattern in (
        "controller/install/**/*.yaml", "schemas/*.json", "compiler/gitops/lua/*.lua")
        for p in REPO.glob(pattern)]
    assert len(wanted) > 15
    assert sorted(set(wanted) - names) == []
    assert not any(n.startswith(("tests/", "bench/", "testworld/")) for n in names)


def test_the_wheel_declares_both_commands(contents) -> None:
    entry_points = next(n for n in contents.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = contents.read(entry_points).decode()
    assert "train-compile = compiler.cli.main:main" in text
    assert "train-controller = controller.__main__:main" in text


def test_the_dockerfile_installs_from_the_lock_with_the_pinned_uv() -> None:
    """The image takes exactly the steps the `locked` install check runs (install_kit.requirements)."""
    from testworld import pyenvs

    text = (REPO / "Dockerfile").read_text()
    assert f"ARG UV_VERSION={pyenvs.uv_version()}\n" in text
    assert "uv export --frozen --no-dev --no-emit-project --no-header --quiet -o /wheels/requirements.txt" in text
    assert "pip install --no-cache-dir --require-hashes -r /wheels/requirements.txt" in text
    assert "pip install --no-cache-dir --no-deps /wheels/*.whl" in text
