"""What the Dockerfile installs: a wheel built from the repository carries every file the
programs read at run time (install manifests, JSON Schemas, Lua health checks) and both
console scripts, and nothing from tests/, bench/ or the test world (testworld/)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "--wheel-dir", str(out), str(REPO)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return zipfile.ZipFile(next(out.glob("trainforge-*.whl")))


def test_the_wheel_carries_every_runtime_file(wheel) -> None:
    names = set(wheel.namelist())
    wanted = [p.relative_to(REPO).as_posix() for pattern in (
        "controller/install/**/*.yaml", "schemas/*.json", "compiler/gitops/lua/*.lua")
        for p in REPO.glob(pattern)]
    assert len(wanted) > 15
    assert sorted(set(wanted) - names) == []
    assert not any(n.startswith(("tests/", "bench/", "testworld/")) for n in names)


def test_the_wheel_declares_both_commands(wheel) -> None:
    entry_points = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    text = wheel.read(entry_points).decode()
    assert "train-compile = compiler.cli:main" in text
    assert "train-controller = controller.__main__:main" in text
