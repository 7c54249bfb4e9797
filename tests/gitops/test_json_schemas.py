"""The JSON Schemas in `schemas/` as editors and CI use them: the `check-jsonschema` CLI
accepts every example and fixture (with the schema its `# yaml-language-server: $schema=`
line names, or the one for its kind) and rejects the bad cases."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
FIXTURES = Path(__file__).parent / "fixtures"
CHECK = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
MODELINE = re.compile(r"^#\s*yaml-language-server:\s*\$schema=(\S+)\s*$", re.MULTILINE)
BY_KIND = {"TrainJob": SCHEMAS / "trainjob.schema.json", "Project": SCHEMAS / "project.schema.json"}


def _check(schema: Path, *files: Path) -> subprocess.CompletedProcess:
    assert CHECK, "check-jsonschema is part of the test extras"
    return subprocess.run([CHECK, "--schemafile", str(schema), *map(str, files)], capture_output=True, text=True)


def _documents(path: Path) -> list[str]:
    """check-jsonschema reads one document per file; split streams at `---` lines."""
    return [d for d in re.split(r"^---[ \t]*$", path.read_text(), flags=re.MULTILINE) if d.strip()]


def _schema_for(doc: str, path: Path, modeline: str | None) -> Path | None:
    kind = re.search(r"^kind:\s*(\w+)", doc, re.MULTILINE)
    if kind is None or kind.group(1) not in BY_KIND:
        return None  # not ours (a ConfigMap beside the jobs)
    if modeline:
        resolved = (path.parent / modeline).resolve()
        assert resolved == BY_KIND[kind.group(1)].resolve(), f"{path}: $schema= names {modeline}"
        return resolved
    return BY_KIND[kind.group(1)]


def _good_files() -> list[Path]:
    files = sorted(FIXTURES.glob("project/**/*.yaml")) + sorted(FIXTURES.glob("kinds/*.yaml"))
    files += sorted((ROOT / "examples").glob("**/*.yaml"))  # written by the examples' author
    return files


def test_the_schemas_are_valid_json_schemas():
    proc = subprocess.run([CHECK, "--check-metaschema", *map(str, sorted(SCHEMAS.glob("*.schema.json")))],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_example_and_fixture_passes_check_jsonschema(tmp_path):
    batches: dict[Path, list[Path]] = {}
    for path in _good_files():
        modeline = MODELINE.search(path.read_text())
        for i, doc in enumerate(_documents(path)):
            schema = _schema_for(doc, path, modeline.group(1) if modeline else None)
            if schema is None:
                continue
            part = tmp_path / f"{path.stem}-{len(batches.get(schema, []))}-{i}.yaml"
            part.write_text(doc)
            batches.setdefault(schema, []).append(part)
    assert batches.get(BY_KIND["TrainJob"]) and batches.get(BY_KIND["Project"])
    for schema, parts in batches.items():
        proc = _check(schema, *parts)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_fixture_modelines_point_at_the_schemas():
    for path in sorted(FIXTURES.glob("project/**/*.yaml")) + sorted(FIXTURES.glob("kinds/*.yaml")):
        found = MODELINE.search(path.read_text())
        assert found, f"{path} has no yaml-language-server line"
        assert (path.parent / found.group(1)).resolve().is_file()


BAD = [pytest.param(p, id=p.stem.replace("-", " ")) for p in sorted((FIXTURES / "bad").glob("*.yaml"))]


@pytest.fixture(scope="module")
def bad_report() -> str:
    proc = _check(BY_KIND["TrainJob"], *sorted((FIXTURES / "bad").glob("*.yaml")))  # one run for all
    assert proc.returncode == 1
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("path", BAD)
def test_a_bad_case_fails_check_jsonschema(path, bad_report):
    assert f"{path}::$" in bad_report, bad_report
