"""Helpers of the install checks (tests/install/conftest.py says what they check): the
venv of one variant, its pins, and an environment that keeps the checkout off its path."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from testworld import pyenvs

REPO = Path(__file__).resolve().parents[2]
VARIANTS = ("locked", "newest", "oldest")


@dataclass(frozen=True)
class Install:
    """One clean venv with the wheel: its name, root and the pins it was built from."""

    variant: str
    root: Path
    pins: dict[str, str]  # normalized distribution name -> version

    def bin(self, name: str) -> str:
        return str(self.root / "bin" / name)

    def run(self, *argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, cwd=cwd, timeout=timeout, env=clean_env())


def clean_env() -> dict[str, str]:
    """The caller's environment without anything that would put the repository on a path."""
    return {k: v for k, v in pyenvs.uv_env().items() if not k.startswith(("PYTEST", "TRAINFORGE_TEST"))}


def normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pins_of(requirements: str) -> dict[str, str]:
    pins = {}
    for line in requirements.splitlines():
        line = line.split("#", 1)[0].strip().rstrip("\\").strip()
        if "==" in line and not line.startswith("-"):
            name, version = line.split("==", 1)
            pins[normalize(name.split(";")[0].strip())] = version.split(";")[0].strip()
    return pins


def uv_run(*argv: str) -> str:
    proc = subprocess.run([str(pyenvs.uv()), *argv], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env=pyenvs.uv_env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def requirements(variant: str) -> str:
    """The runtime dependencies' pins for `variant` (requirements.txt text)."""
    if variant == "locked":
        return pyenvs.locked_requirements()
    extra = ["--resolution", "lowest-direct"] if variant == "oldest" else []
    return uv_run("pip", "compile", "pyproject.toml", "--python-version", "3.11", "--no-header", "--quiet", *extra)
