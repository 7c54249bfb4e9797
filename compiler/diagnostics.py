"""Diagnostics: one shape for every problem the compiler finds, and its output formats.

Every problem, from a YAML syntax error to a project policy violation, becomes a
`Diagnostic` with a file position, a field path, what is wrong and how to fix it, so
a pull request reviewer sees the same line whether it came from the parser, pydantic or
a cross-field rule. Diagnostics are collected (never raised one at a time) and sorted,
so one run reports everything. Formatters are pure functions of the sorted list.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import zip_longest
from typing import Callable, Iterable, Literal, Optional

Severity = Literal["error", "warning", "notice"]
_SEVERITY_RANK = {"error": 0, "warning": 1, "notice": 2}


@dataclass(frozen=True)
class Diagnostic:
    file: str
    line: int
    col: int
    path: str  # field path, e.g. spec.resources.gpu ("" for whole-document problems)
    message: str  # what is wrong
    fix: str = ""  # how to fix it
    severity: Severity = "error"

    def text(self) -> str:
        where = f"{self.path}: " if self.path else ""
        fix = f"; {self.fix}" if self.fix else ""
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {where}{self.message}{fix}"

    def sort_key(self) -> tuple[int, str, int, int, str, str]:
        return (_SEVERITY_RANK[self.severity], self.file, self.line, self.col, self.path, self.message)


def split_message(text: str) -> tuple[str, str]:
    """Split "what is wrong; how to fix" as written by our validators."""
    what, _, fix = text.partition("; ")
    return what.strip(), fix.strip()


def closest(word: str, choices: Iterable[str]) -> Optional[str]:
    """The choice a misspelled `word` most likely meant (difflib's ratio >= 0.6), or None:
    every did-you-mean of the compiler, so a rule that asks "is this key a typo of that
    field?" gets the answer the user is shown."""
    import difflib  # only a run with errors (or a key to judge) gets here

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def ordered(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """Errors first, then by file and position; duplicates dropped."""
    return sorted(set(diagnostics), key=Diagnostic.sort_key)


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def annotation_order(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Most useful first: by severity, then round-robin over files, each file in line order."""
    out: list[Diagnostic] = []
    by_severity: dict[str, dict[str, list[Diagnostic]]] = defaultdict(lambda: defaultdict(list))
    for d in ordered(diagnostics):
        by_severity[d.severity][d.file].append(d)
    for severity in ("error", "warning", "notice"):
        files = by_severity.get(severity, {})
        for turn in zip_longest(*(files[f] for f in sorted(files))):
            out.extend(d for d in turn if d is not None)
    return out


def format_text(diagnostics: list[Diagnostic]) -> str:
    return "".join(d.text() + "\n" for d in diagnostics)


def format_json(diagnostics: list[Diagnostic]) -> str:
    return json.dumps([asdict(d) for d in diagnostics], indent=2) + "\n"


def _escape_github(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


def format_github(diagnostics: list[Diagnostic]) -> str:
    """GitHub workflow commands; GitHub shows ten per step, so they come in annotation order."""
    lines = []
    for d in annotation_order(diagnostics):
        level = {"error": "error", "warning": "warning", "notice": "notice"}[d.severity]
        title = _escape_github(d.path or "trainforge", prop=True)
        props = f"file={_escape_github(d.file, prop=True)},line={d.line},col={d.col},title={title}"
        body = d.message + (f"; {d.fix}" if d.fix else "")
        lines.append(f"::{level} {props}::{_escape_github(body)}\n")
    return "".join(lines)


FORMATTERS: dict[str, Callable[[list[Diagnostic]], str]] = {
    "text": format_text,
    "json": format_json,
    "github": format_github,
}
# every format the CLI offers: these three, and SARIF, which lives with the emitters above this
# module (compiler.emit.sarif, picked by compiler.emit.reporting) since it needs the versions
FORMATS = (*FORMATTERS, "sarif")
