"""Shared pytest configuration: the real control plane fixtures (``control_plane``,
``namespace``, ``k8s_client``) from testworld, and the one YAML snapshot extension.

Import paths are set once, in pyproject.toml (`[tool.pytest.ini_options] pythonpath`): the
repository root, so `compiler`, `controller`, `overlays`, `schemas` and `bench` are the
packages and never the test folders of the same names, and the folders whose helper
modules other folders import (`compiler_builders`, `controller_kit`, `fault_kit`, ...).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

pytest_plugins = ["testworld.pytest_plugin"]

SNAPSHOTS = Path(__file__).resolve().parent / "__snapshots__"


class YamlSnapshot(SingleFileSnapshotExtension):
    """One real-YAML file per snapshot, in tests/__snapshots__/<test module>/, so a snapshot
    diff reads like the Kubernetes objects it pins."""

    _write_mode = WriteMode.TEXT
    file_extension = "yaml"

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(SNAPSHOTS / test_location.basename)


@pytest.fixture
def yaml_snapshot(snapshot):
    return snapshot.use_extension(YamlSnapshot)
