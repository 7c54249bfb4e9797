"""`--format sarif`: diagnostics as a SARIF 2.1.0 log for GitHub code scanning and other
review tools.

It sits beside the other formatters of `compiler.diagnostics` (registered there through
a lazy hook, so `train-compile --help` never imports this module) and is, like them, a
pure function of the diagnostic list. A result's rule is its field path with list
indices folded (`spec.storage[].size`), so code scanning groups the same mistake across
files and jobs; the fingerprint leaves the line out, so an alert survives edits above
it. Results come in `annotation_order`: errors first, then one diagnostic per file in
turn, so the first ten (all GitHub shows per step for workflow annotations) reach as
many broken files as possible instead of ten lines of the same file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import PurePosixPath
from urllib.parse import quote

from compiler.diagnostics import Diagnostic, annotation_order

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL = "train-compile"
_LEVEL = {"error": "error", "warning": "warning", "notice": "note"}
_INDEX = re.compile(r"\[[^\]]*\]")


def rule_id(d: Diagnostic) -> str:
    return f"trainforge/{_INDEX.sub('[]', d.path)}" if d.path else "trainforge/document"


def _uri(path: str) -> dict:
    posix = path.replace("\\", "/")
    if PurePosixPath(posix).is_absolute():
        return {"uri": "file://" + quote(posix)}
    return {"uri": quote(posix), "uriBaseId": "%SRCROOT%"}


def _fingerprint(d: Diagnostic) -> str:
    key = "\0".join((d.file, d.path, d.message, d.fix))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _rule(rid: str, d: Diagnostic) -> dict:
    return {
        "id": rid,
        "name": rid.split("/", 1)[1],
        "shortDescription": {"text": f"Problems at {d.path}" if d.path else "Whole-document problems"},
        "help": {"text": "See docs/gitops.md and the TrainJob spec for this field."},
        "defaultConfiguration": {"level": _LEVEL[d.severity]},
    }


def _result(d: Diagnostic, rule_index: int) -> dict:
    text = d.message + (f"; {d.fix}" if d.fix else "")
    location: dict = {
        "physicalLocation": {
            "artifactLocation": _uri(d.file),
            "region": {"startLine": max(d.line, 1), "startColumn": max(d.col, 1)},
        }
    }
    if d.path:
        location["logicalLocations"] = [{"fullyQualifiedName": d.path, "kind": "member"}]
    return {
        "ruleId": rule_id(d),
        "ruleIndex": rule_index,
        "level": _LEVEL[d.severity],
        "message": {"text": f"{d.path}: {text}" if d.path else text},
        "locations": [location],
        "partialFingerprints": {"trainforgeDiagnostic/v1": _fingerprint(d)},
    }


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trainforge")
    except PackageNotFoundError:
        return "0.0.0"


def sarif_log(diagnostics: list[Diagnostic]) -> dict:
    rules: dict[str, dict] = {}
    results = []
    for d in annotation_order(diagnostics):
        rid = rule_id(d)
        if rid not in rules:
            rules[rid] = _rule(rid, d)
        results.append(_result(d, list(rules).index(rid)))
    driver = {"name": TOOL, "version": _version(), "rules": list(rules.values())}
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results, "columnKind": "unicodeCodePoints"}],
    }


def format_sarif(diagnostics: list[Diagnostic]) -> str:
    """The SARIF log as JSON text (an empty run when there is nothing to report)."""
    return json.dumps(sarif_log(diagnostics), indent=2, ensure_ascii=False) + "\n"
