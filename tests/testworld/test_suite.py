"""`make test`'s order (testworld.suite): every part of the world is built either before the
tests or in the background for the late folders, and a test outside those folders that asks
for a background part fails at once, warm cache or cold, instead of waiting on the build."""

from __future__ import annotations

from pathlib import Path

import pytest

from testworld import gobuild, suite

ROOT = Path(__file__).resolve().parents[2]


def test_every_build_row_is_built_first_or_in_the_background_once() -> None:
    rows = set(gobuild.load_rows())
    assert set(suite.CORE) | set(suite.LATER) == rows
    assert not set(suite.CORE) & set(suite.LATER)


def test_the_late_folders_exist_and_the_rest_of_the_suite_is_not_empty() -> None:
    tests = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and not p.name.startswith(("_", "."))}
    assert all((ROOT / d).is_dir() for d in suite.LATE_DIRS), suite.LATE_DIRS
    late = {Path(d).name for d in suite.LATE_DIRS if Path(d).parent == Path("tests")}
    assert {"compiler", "controller", "overlays", "schemas", "testworld"} <= tests - late


@pytest.mark.parametrize("name", suite.LATER)
def test_a_background_part_asked_for_in_the_first_phase_is_an_error_naming_the_late_folders(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gobuild.DEFERRED_ENV, ",".join(suite.LATER))
    with pytest.raises(gobuild.BuildError, match="LATE_DIRS"):
        gobuild.build(name)  # raises before looking at the cache: the same warm or cold


def test_a_core_part_is_not_deferred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gobuild.DEFERRED_ENV, ",".join(suite.LATER))
    assert gobuild.build("kustomize") == gobuild.find("kustomize")
