"""Snapshot settings for the overlay tests, and the path to their builders.

Snapshots are stored as real YAML, one file per test, in syrupy's own layout
(`tests/overlays/__snapshots__/<test file>/<test>.yaml`; syrupy ties a snapshot to the
test module beside its `__snapshots__` folder) so a diff reads like Kubernetes. The
builders live in `overlay_kit.py` beside this file.

`tests/overlays` shares its name with the `overlays` package: when pytest puts `tests/`
on sys.path (rootdir conftest) and the repository root is not on it (`.venv/bin/pytest`
rather than `python -m pytest`), `import overlays` would find this folder as a
namespace package. The repository root goes first on sys.path to prevent that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
for path in (str(HERE), str(REPO)):  # builders (also under --import-mode=importlib), then the repo
    if path in sys.path:
        sys.path.remove(path)
    sys.path.insert(0, path)
if getattr(sys.modules.get("overlays"), "__file__", "") is None:  # namespace package: this folder
    del sys.modules["overlays"]


class YamlSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "yaml"


@pytest.fixture
def yaml_snapshot(snapshot):
    return snapshot.use_extension(YamlSnapshot)
