"""Printing what a run found: diagnostics in the chosen format, and stale-tree diffs.

Formatters are looked up in `compiler.diagnostics.FORMATTERS`, so a new format (SARIF)
is one function and one table entry there.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from compiler.diagnostics import FORMATTERS, Diagnostic


def render_diagnostics(diagnostics: list[Diagnostic], fmt: str) -> str:
    if fmt == "text":
        return FORMATTERS["text"](diagnostics)
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
