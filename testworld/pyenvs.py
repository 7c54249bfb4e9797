"""Python environments of their own for the test world: the pinned `uv` and cached venvs.

Two kinds of test need a Python environment that is not the project's `.venv`: the
install checks (tests/install) put the built wheel into clean venvs at the locked, the
newest and the oldest allowed versions, and tools that pin the world (the Kubeflow SDK
pins kubernetes<36) run from their own venv so they never hold the project's
dependencies back. Both go through `venv()`: a venv per requirement set, kept under
`${TRAINFORGE_CACHE:-~/.cache/trainforge}/venvs/<name>-<hash of the requirements>`, so
a rerun finds it at once and a changed set gets a new one (the old one is removed). uv makes a cold one cheap
(a few seconds from its download cache); it is the version `pyproject.toml` pins in
`[tool.uv] required-version`, bootstrapped by pip into the cache exactly as the
Makefile does (`$TRAINFORGE_UV` names one to use instead).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[1]
PYTHON = "python3.11"


def cache_root() -> Path:
    return Path(os.environ.get("TRAINFORGE_CACHE") or Path.home() / ".cache" / "trainforge")


def uv_version() -> str:
    """The uv version pyproject.toml pins (`[tool.uv] required-version = "==X"`)."""
    pin = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["uv"]["required-version"]
    match = re.fullmatch(r"==\s*([\w.]+)", pin)
    if match is None:
        raise ValueError(f"pyproject.toml [tool.uv] required-version must be an exact pin (==X), not {pin!r}")
    return match.group(1)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One builder at a time per path (parallel test runs share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: Sequence[str | Path], **kw) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, argv))} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def uv() -> Path:
    """The pinned uv: `$TRAINFORGE_UV`, else the cache's, bootstrapped with pip on first use."""
    if os.environ.get("TRAINFORGE_UV"):
        return Path(os.environ["TRAINFORGE_UV"])
    version = uv_version()
    home = cache_root() / "tools" / f"uv-{version}"
    exe = home / "bin" / "uv"
    with _locked(home):
        if not exe.exists():
            _run([shutil.which(PYTHON) or sys.executable, "-m", "venv", home])
            _run([home / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", f"uv=={version}"])
    return exe


def uv_env() -> dict[str, str]:
    """The environment uv runs in: no project venv or PYTHONPATH leaking in from the caller."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "UV_PROJECT_ENVIRONMENT")}
    env.setdefault("UV_PYTHON_DOWNLOADS", "never")  # only the machine's python3.11
    return env


def venv(name: str, requirements: str, *, pip: bool = False, python: str = PYTHON) -> Path:
    """A venv holding exactly `requirements` (requirements.txt text, hashes allowed),
    cached by their hash; `pip=True` installs with pip instead of uv (as the Dockerfile
    does), from the interpreter `python` (a name on PATH or a path). Returns the venv's root."""
    key = hashlib.sha256(f"{name}\n{pip}\n{python}\n{requirements}".encode()).hexdigest()[:16]
    root = cache_root() / "venvs" / f"{name}-{key}"
    with _locked(root):
        if (root / ".complete").exists():
            return root
        shutil.rmtree(root, ignore_errors=True)
        reqs = root.parent / f"{root.name}.txt"
        reqs.write_text(requirements)
        if pip:
            _run([shutil.which(python) or sys.executable, "-m", "venv", root])
            _run([root / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  "--require-hashes" if "--hash=" in requirements else "--no-deps", "-r", reqs])
        else:
            _run([uv(), "venv", "-q", "--python", python, root], env=uv_env())
            _run([uv(), "pip", "sync", "-q", "--python", root / "bin" / "python", reqs], env=uv_env())
        (root / ".complete").touch()
    _prune(root, name)
    return root


def locked_requirements() -> str:
    """uv.lock's runtime dependencies with their hashes (requirements.txt text): what the
    Dockerfile installs with `pip --require-hashes` before the wheel."""
    return _run([uv(), "export", "--frozen", "--no-dev", "--no-emit-project", "--no-header", "--quiet"],
                cwd=REPO, timeout=300, env=uv_env()).stdout


def build_wheel(out: Path) -> Path:
    """The wheel of this checkout, built offline with the running venv's setuptools, as the
    Dockerfile's build stage does."""
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "--wheel-dir", out, REPO],
         timeout=300)
    return next(out.glob("trainforge-*.whl"))


def locked_install(wheel: Path, requirements: str, *, python: str = PYTHON) -> Path:
    """The Dockerfile's two steps in a venv of `python`: `requirements` (`locked_requirements()`,
    which the caller usually also reads for its pins) with pip `--require-hashes`, then the wheel
    alone. One venv per interpreter, shared by the install checks and `bench.compiler_bench
    --python`; returns its root."""
    name = "install-locked"
    if python != PYTHON:
        name += "-" + re.sub(r"[^A-Za-z0-9.]+", "-", python).strip("-")
    root = venv(name, requirements, pip=True, python=python)
    _run([root / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
          "--force-reinstall", wheel], timeout=300, env=uv_env())
    return root


def _prune(keep: Path, name: str) -> None:
    """Drop this name's venvs for other requirement sets (a lock or a range changed): the
    cache holds one per name, not one per commit ever tested."""
    for old in keep.parent.glob(f"{name}-" + "?" * 16):
        if old != keep and old.is_dir():
            with _locked(old):
                shutil.rmtree(old, ignore_errors=True)
            for extra in (old.parent / f"{old.name}.txt", old.parent / f"{old.name}.lock"):
                extra.unlink(missing_ok=True)
