"""Fixtures for the controller tests: an in-process controller per test namespace."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

# `tests/controller` and `tests/overlays` share their names with the `controller` and
# `overlays` packages: put the repository root first so imports find the packages, not
# these folders as namespace packages (same guard as tests/overlays/conftest.py).
_REPO = str(Path(__file__).resolve().parents[2])
if _REPO in sys.path:
    sys.path.remove(_REPO)
sys.path.insert(0, _REPO)
for _name in ("controller", "overlays"):
    if getattr(sys.modules.get(_name), "__file__", "") is None:
        del sys.modules[_name]
from collections.abc import Iterator

import pytest

from controller.kube import Client
from controller.manager import Manager
from controller_kit import PODS_FIRST, Cluster, running_manager

logging.getLogger("controller").setLevel(logging.INFO)


@pytest.fixture
def cluster(control_plane, namespace: str) -> Iterator[Cluster]:
    client = Client.connect(str(control_plane.kubeconfig))
    try:
        yield Cluster(client, namespace)
    finally:
        client.close()


@pytest.fixture
def manager(control_plane, namespace: str) -> Iterator[Manager]:
    """The controller, running in this process, watching only the test's namespace.

    In train-controller's default order, --pods-first (controller.burst), unless
    `TRAINFORGE_TEST_UPSTREAM_ORDER=1` (--no-pods-first); `make test` runs this folder in both."""
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=PODS_FIRST) as mgr:
        yield mgr


from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode  # noqa: E402


class YamlSnapshot(SingleFileSnapshotExtension):
    """One real-YAML file per test under tests/__snapshots__/<test module>/."""

    _write_mode = WriteMode.TEXT
    file_extension = "yaml"

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(Path(_REPO) / "tests" / "__snapshots__" / test_location.basename)


@pytest.fixture
def yaml_snapshot(snapshot):
    return snapshot.use_extension(YamlSnapshot)
