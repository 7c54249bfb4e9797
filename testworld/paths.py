"""Where the test world finds shared inputs: the ../shared reference dir and the upstream CRDs.

Why a module of its own: the CLI, the World and the pytest plugin all need these paths,
and the CLI must not import pytest to learn them.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# trainer-v2.3.0: the Kubeflow Trainer v2 CRDs (TrainJob and both runtime kinds; its
# runtimes/ subfolder holds objects, not CRDs, and is not read), for the trainer-v2 target
UPSTREAM_CRD_DIRS = ("reference/crds/kubeflow-v1", "reference/crds/scheduling", "reference/crds/trainer-v2.3.0")
# the mpi-operator v0.8.0's v2beta1 MPIJob CRD (target mpi-operator), a copy kept in the repository
# (its SOURCES.md says from where): it shares the name mpijobs.kubeflow.org with the v1 CRD above, so
# no plane installs both; tests validate compiled objects against its schema
MPI_OPERATOR_CRD = REPO_ROOT / "tests" / "reference" / "crds" / "mpi-operator-v0.8.0" / "kubeflow.org_mpijobs.yaml"


def shared_dir(repo_root: Path | None = None) -> Path:
    """``$TRAINFORGE_SHARED`` if set, else ``<repo root>/../shared``."""
    env = os.environ.get("TRAINFORGE_SHARED")
    if env:
        return Path(env)
    return (repo_root or REPO_ROOT).parent / "shared"


def upstream_crd_dirs(repo_root: Path | None = None) -> list[Path]:
    """The upstream kubeflow.org/v1, scheduling and Trainer v2 CRD dirs the session plane installs."""
    base = shared_dir(repo_root)
    return [base / sub for sub in UPSTREAM_CRD_DIRS]


def cache_root() -> Path:
    """``$TRAINFORGE_CACHE`` or ``~/.cache/trainforge``: every built binary lives below it."""
    return Path(os.environ.get("TRAINFORGE_CACHE") or Path.home() / ".cache" / "trainforge")
