"""Fixtures of the fault tests: a control plane of their own, figures printed at the end.

The long runs (`@pytest.mark.fault`, `make fault`) restart kube-apiserver and compact etcd,
so they get a control plane of their own (one per module) rather than the session's;
the short smoke run that `make test` keeps uses the session plane like every other test.
Each run's figures are printed in the terminal summary, even under `-q`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from testworld.controlplane import ControlPlane
from testworld.pytest_plugin import upstream_crd_dirs

FIGURES: list[str] = []


@pytest.fixture(scope="module")
def fault_plane(envtest_assets) -> Iterator[ControlPlane]:
    # open watches would hold a SIGTERMed kube-apiserver for its 15 s stop timeout; drop them after 1 s
    plane = ControlPlane(assets=envtest_assets, extra_apiserver_args=["--shutdown-watch-termination-grace-period=1s"])
    plane.start()
    try:
        plane.install_crds(upstream_crd_dirs(Path(__file__).resolve().parents[2]))
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def fault_namespace(fault_plane: ControlPlane) -> str:
    name = f"fault-{uuid.uuid4().hex[:8]}"
    fault_plane.kubectl("create", "namespace", name)
    return name


@pytest.fixture
def figures() -> list[str]:
    return FIGURES


def pytest_terminal_summary(terminalreporter) -> None:
    if FIGURES:
        terminalreporter.section("fault figures")
        for line in FIGURES:
            terminalreporter.write_line(line)
