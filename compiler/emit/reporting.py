"""Printing what a run found: diagnostics in the chosen format, and stale-tree diffs.

Formatters are looked up in `compiler.diagnostics.FORMATTERS`, so a new plain format is one
function and one table entry there; SARIF is this layer's own (`compiler.emit.sarif`).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from compiler.diagnostics import FORMATTERS, Diagnostic


def render_diagnostics(diagnostics: list[Diagnostic], fmt: str) -> str:
    if fmt == "sarif":
        from compiler.emit.sarif import format_sarif  # its versions and rules only when asked for

        return format_sarif(diagnostics)
    if fmt not in FORMATTERS:
        raise ValueError(f"unknown format {fmt}")
    return FORMATTERS[fmt](diagnostics)


def tree_diff(actual: dict[str, str], expected: dict[str, str], out: Path) -> str:
    """A unified diff from what is on disk to what build would write ('' when equal)."""
    chunks = []
    for rel in sorted(set(actual) | set(expected)):
        before, after = actual.get(rel), expected.get(rel)
        if before == after:
            continue
        chunks.extend(
            difflib.unified_diff(
                (before or "").splitlines(keepends=True),
                (after or "").splitlines(keepends=True),
                fromfile=f"{out}/{rel}" if before is not None else "/dev/null",
                tofile=f"{out}/{rel}" if after is not None else "/dev/null",
            )
        )
    return "".join(chunks)


def _first_difference(before: str, after: str) -> int:
    """The 1-based line of the on-disk file where it first differs from what build writes."""
    old, new = before.splitlines(), after.splitlines()
    for number, (a, b) in enumerate(zip(old, new), start=1):
        if a != b:
            return number
    return min(len(old), len(new)) + 1 if old else 1


def stale_diagnostics(actual: dict[str, str], expected: dict[str, str], out: Path, rebuild: str) -> list[Diagnostic]:
    """One error per output file that is not what build would write, at its first differing
    line, so `check --format github|sarif|json` reports staleness like any other problem
    (an annotation on the file, a SARIF result, a JSON entry) and a reader of the text
    format sees which files are stale before the diff."""
    fix = f"run {rebuild} and commit the result"
    found = []
    for rel in sorted(set(actual) | set(expected)):
        before, after = actual.get(rel), expected.get(rel)
        if before == after:
            continue
        if before is None:
            line, message = 1, "missing: build would write this file"
        elif after is None:
            line, message = 1, "left over: build would delete this file (its job or environment is gone)"
        else:
            line = _first_difference(before, after)
            message = f"out of date: differs from what build would write, from line {line}"
        found.append(Diagnostic(f"{out}/{rel}", line, 1, "", message, fix))
    return found
