"""Import paths and the YAML snapshot extension for the compiler tests.

`tests/compiler` shares its name with the `compiler` package (and `tests/overlays` with
`overlays`): when pytest puts `tests/` on sys.path for the rootdir conftest and the
repository root is not on it (`.venv/bin/pytest` uses the editable-install finder,
which runs after the path finder), `import overlays` finds the test folder as a
namespace package. A regular package anywhere on sys.path wins over a namespace
portion, so the repository root goes on sys.path and any namespace stand-in already
imported is dropped. This folder goes first so `compiler_builders` imports.

Snapshots are real YAML files, one per example, under `tests/__snapshots__/<module>/`,
so a snapshot diff reads like the Kubernetes objects it pins.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for _path in (str(REPO), str(HERE)):
    if _path in sys.path:
        sys.path.remove(_path)
    sys.path.insert(0, _path)
for _name in ("compiler", "overlays", "schemas"):
    if getattr(sys.modules.get(_name), "__file__", "") is None:  # a namespace stand-in
        del sys.modules[_name]


class TreeSnapshot(SingleFileSnapshotExtension):
    """One `.yaml` file per snapshot in tests/__snapshots__/<test module>/."""

    _write_mode = WriteMode.TEXT
    file_extension = "yaml"

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(REPO / "tests" / "__snapshots__" / test_location.basename)


@pytest.fixture
def tree_snapshot(snapshot):
    return snapshot.use_extension(TreeSnapshot)
