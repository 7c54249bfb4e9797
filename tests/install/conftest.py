"""What users install, tested as they install it: the wheel built from this checkout, put
into clean venvs with its runtime dependencies only, at three sets of versions.

- `locked`: uv.lock's runtime part, exported with hashes and installed by pip with
  `--require-hashes`, then the wheel with `--no-deps`: the Dockerfile's own steps.
- `newest`: the newest versions pyproject.toml's ranges allow today (what a plain
  `pip install trainforge` gets), resolved by uv at each run.
- `oldest`: the lowest version of every direct dependency (`--resolution lowest-direct`),
  so a floor in pyproject.toml that no longer works is found here, not by a user.

Each set is resolved at every run (a second or so) and its venv cached by the resolved
pins (testworld.pyenvs), so a rerun only reinstalls the wheel; the tests run the
variant's own `train-compile` and `train-controller`, with the repository off their path.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from install_kit import VARIANTS, Install, pins_of, requirements
from testworld import pyenvs


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built offline with the venv's setuptools, as the Dockerfile's build stage."""
    return pyenvs.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session", params=VARIANTS)
def install(request, wheel: Path) -> Install:
    variant = request.param
    reqs = requirements(variant)
    if variant == "locked":  # the Dockerfile's steps
        return Install(variant, pyenvs.locked_install(wheel, reqs), pins_of(reqs))
    root = pyenvs.venv(f"install-{variant}", reqs)
    argv = [str(pyenvs.uv()), "pip", "install", "-q", "--no-deps", "--reinstall", "--python",
            str(root / "bin" / "python"), str(wheel)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=pyenvs.uv_env())
    assert proc.returncode == 0, proc.stderr
    return Install(variant, root, pins_of(reqs))

