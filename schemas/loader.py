"""YAML loading that keeps where every key and value came from.

ruamel.yaml's round-trip loader records line and column for every mapping key and
sequence item; we copy the document into plain Python data (so pydantic's strict mode
sees real `int`/`str`/`bool`, never ruamel's scalar subclasses) and keep a table
`path -> (line, col)` beside it. Diagnostics later look a pydantic `loc` up in that
table. Aliases are expanded while copying, under a node budget, so a "billion laughs"
document is an error rather than a hang. Problems are returned as `LoadProblem`s, not
raised, so one run can report every broken file.

That ruamel loader is the reference but pure Python (slow per spec: bench/README.md), so files go
through libyaml first (`schemas.fastyaml`): same plain data, position tables filled by
ruamel only when a diagnostic reads them, and the ruamel loader alone for any file the
fast path is not sure about (errors, anchors, tags, ambiguous scalars).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

MAX_NODES = 200_000  # per document, after alias expansion
YAML_SUFFIXES = (".yaml", ".yml")

Pos = tuple[int, int]  # 1-based line, column
Loc = tuple[Any, ...]


@dataclass
class Document:
    """One YAML document as plain data plus the positions of its keys and values."""

    file: str
    index: int  # 0-based position of the document in its file
    data: Any
    key_pos: dict[Loc, Pos] = field(default_factory=dict)  # where the key (or item) starts
    value_pos: dict[Loc, Pos] = field(default_factory=dict)  # where the value starts
    start: Pos = (1, 1)
    # the file's path from its git repository's root (compiler/reading/sources.py sets it): the
    # compiled files name it, the same from any working folder
    origin: str = ""

    def position(self, loc: Loc, *, prefer_key: bool = True) -> Pos:
        """Best position for `loc`: the key (or value), else the nearest enclosing one."""
        loc = tuple(loc)
        while loc:
            tables = (self.key_pos, self.value_pos) if prefer_key else (self.value_pos, self.key_pos)
            for table in tables:
                if loc in table:
                    return table[loc]
            loc = loc[:-1]
        return self.start


@dataclass(frozen=True)
class LoadProblem:
    file: str
    line: int
    col: int
    message: str
    fix: str


class _TooLarge(Exception):
    pass


def _yaml():  # ruamel is imported lazily: `train-compile --help` must stay fast
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    return yaml


def _plain(node: Any, loc: Loc, doc: Document, budget: list[int]) -> Any:
    """Copy ruamel data to plain Python, recording positions; expands aliases under budget."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if isinstance(node, CommentedMap):
        out: dict[Any, Any] = {}
        for key in node:
            child = loc + (_scalar(key),)  # the key as it appears in the data (and in pydantic locs)
            try:
                kl, kc = node.lc.key(key)
                doc.key_pos[child] = (kl + 1, kc + 1)
                vl, vc = node.lc.value(key)
                doc.value_pos[child] = (vl + 1, vc + 1)
            except (KeyError, TypeError, IndexError):  # merged keys (<<) carry no position
                pass
            out[_scalar(key)] = _plain(node[key], child, doc, budget)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for i, item in enumerate(node):
            child = loc + (i,)
            try:
                il, ic = node.lc.item(i)
                doc.key_pos[child] = doc.value_pos[child] = (il + 1, ic + 1)
            except (KeyError, TypeError, IndexError):
                pass
            items.append(_plain(item, child, doc, budget))
        return items
    return _scalar(node)


def _scalar(value: Any) -> Any:
    """ruamel scalar subclasses -> the plain built-in type (bool before int: bool is an int)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)  # timestamps and other tagged scalars: keep their text


def load_text(text: str, file: str) -> tuple[list[Document], list[LoadProblem]]:
    """Parse every document of one file; empty documents are skipped.

    libyaml first (`schemas.fastyaml`), with positions answered from its events' marks; the
    ruamel loader alone whenever the fast path is not sure (errors, anchors, tags...).
    """
    from schemas import fastyaml, positions

    try:
        parsed = fastyaml.documents(text, MAX_NODES)
    except fastyaml.Fallback:
        return load_text_ruamel(text, file)
    found = _Positions(text, {index: (data, marks) for index, data, _, marks in parsed})
    documents = [
        Document(
            file=file, index=index, data=data, start=start,
            key_pos=positions.LazyTable(functools.partial(found.find, index, positions.KEY),
                                        functools.partial(found.table, index, positions.KEY)),
            value_pos=positions.LazyTable(functools.partial(found.find, index, positions.VALUE),
                                          functools.partial(found.table, index, positions.VALUE)),
        )
        for index, data, start, _ in parsed
    ]
    return documents, []


class _Positions:
    """Positions in one file's documents, from the marks libyaml's events carried
    (`schemas.positions`), or from the ruamel loader, run once for the whole file, where
    those cannot say (ten times the cost of the marks' tables, and a re-parse of the file
    with libyaml still twice what the marks cost: `train-compile import` and a build whose
    every job has a warning paid one per file). It holds the text and the plain data, never
    the documents, so a document and its tables are freed with the last reference to them
    (no reference cycle through a closure, which only a garbage collection would free, at
    the end of a large build: bench/README.md)."""

    def __init__(self, text: str, marked: dict[int, tuple[Any, Any]]) -> None:
        self._text = text
        self._marked = marked  # index -> (data, fastyaml marks)
        self._tables: dict[int, tuple[dict[Loc, Pos], dict[Loc, Pos]]] = {}
        self._ruamel = False  # the tables are the ruamel loader's

    def find(self, index: int, which: int, loc: Loc) -> Optional[Pos]:
        from schemas import fastyaml, positions

        if not self._ruamel:
            try:
                return positions.find(*self._marked[index], loc, which)
            except fastyaml.Fallback:
                self._read_with_ruamel()
        return self.table(index, which).get(loc)

    def table(self, index: int, which: int) -> dict[Loc, Pos]:
        from schemas import fastyaml, positions

        if index not in self._tables:
            try:
                self._tables[index] = positions.tables(*self._marked[index])
            except fastyaml.Fallback:
                self._read_with_ruamel()
        return self._tables[index][which]

    def _read_with_ruamel(self) -> None:
        self._ruamel = True
        self._tables = {index: ({}, {}) for index in self._marked}
        self._tables.update((d.index, (d.key_pos, d.value_pos)) for d in load_text_ruamel(self._text, "")[0])


def load_text_ruamel(text: str, file: str) -> tuple[list[Document], list[LoadProblem]]:
    """The reference loader: ruamel round-trip, positions recorded while copying."""
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    documents: list[Document] = []
    try:
        for index, raw in enumerate(_yaml().load_all(text)):
            if raw is None:
                continue
            doc = Document(file=file, index=index, data=None)
            start = getattr(raw, "lc", None)
            if start is not None:
                doc.start = (start.line + 1, start.col + 1)
            try:
                doc.data = _plain(raw, (), doc, [MAX_NODES])
            except (_TooLarge, RecursionError):
                line, col = doc.start
                return documents, [
                    LoadProblem(
                        file, line, col,
                        f"document expands to more than {MAX_NODES} nodes (YAML aliases)",
                        "write the values out or use fewer nested aliases",
                    )
                ]
            documents.append(doc)
    except RecursionError:  # ruamel's parser recurses once per nesting level
        return documents, [
            LoadProblem(file, 1, 1, "YAML nests too deeply to parse", "flatten the nested lists or mappings")
        ]
    except MarkedYAMLError as exc:
        return documents, [_syntax_problem(exc, file, text)]
    except YAMLError as exc:
        return documents, [LoadProblem(file, 1, 1, str(exc).strip(), "fix the YAML syntax")]
    except TypeError:  # ruamel hashes a mapping or list used as a key (`? {a: 1}`) and fails
        line = _complex_key_line(text)
        return documents, [
            LoadProblem(
                file, line, 1, "a mapping or list is used as a mapping key",
                "use plain text keys (field names are strings)",
            )
        ]
    return documents, []


_DUPLICATE = re.compile(r'found duplicate key "(?P<key>(?:[^"\\]|\\.)*)"')


def _syntax_problem(exc: Any, file: str, text: str) -> LoadProblem:
    """A ruamel syntax error as one teaching line: where it broke, what was open there (an
    unclosed `[` is reported where the stream ends, so the line that opened it is the
    useful one), and the fix for the usual causes (tabs, duplicate keys) instead of
    ruamel's wording, which prints the duplicate's whole value."""
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
    what = (exc.problem or exc.context or "invalid YAML").strip()
    context, at = (exc.context or "").strip(), exc.context_mark
    duplicate = _DUPLICATE.search(what)
    if duplicate:
        key = duplicate.group("key")
        first = _first_key_line(text, key, mark.column, at.line if at else 0, mark.line) if mark else None
        where = f", first at {first}:{mark.column + 1}" if first else ""
        return LoadProblem(file, line, col, f'duplicate key "{key}"{where}',
                           "keep one of them: YAML takes each key once per mapping")
    if "'\\t'" in what or "\t" in what:
        return LoadProblem(file, line, col, "a tab character where YAML expects indentation or a value",
                           "indent with spaces; YAML does not allow tabs there")
    if context and at is not None and (at.line, at.column) != (mark.line, mark.column):
        what = f"{what}, {context} at {at.line + 1}:{at.column + 1}"
    return LoadProblem(file, line, col, what, "fix the YAML syntax")


def _first_key_line(text: str, key: str, column: int, start: int, end: int) -> Optional[int]:
    """The 1-based line, between a mapping's start and its duplicate key, where `key` first
    stands at the duplicate's column (block mappings; None when it cannot be told)."""
    lines = text.splitlines()[start:end]
    for offset, line in enumerate(lines):
        rest = line[column:]
        if line[:column].strip(" -") == "" and rest.startswith((f"{key}:", f'"{key}":', f"'{key}':")):
            return start + offset + 1
    return None


def _complex_key_line(text: str) -> int:
    """The line of the first explicit `? ` key, the only way to write a non-scalar key."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("? ") or line.strip() == "?":
            return number
    return 1


def load_file(path: Path, display: Optional[str] = None) -> tuple[list[Document], list[LoadProblem]]:
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return [], [LoadProblem(name, 1, 1, "file is not UTF-8 text", "save it as UTF-8")]
    except OSError as exc:
        return [], [LoadProblem(name, 1, 1, f"cannot read file: {exc.strerror}", "check the path")]
    return load_text(text, name)


def yaml_files(root: Path) -> Iterator[Path]:
    """YAML files under `root` (or `root` itself), in a stable order, hidden folders skipped."""
    return (path for path, _ in yaml_files_resolved(root))


def yaml_files_resolved(root: Path) -> Iterator[tuple[Path, str]]:
    """`yaml_files` with each file's resolved path (what `Path.resolve()` gives), as text.

    The order and the choice are `sorted(root.rglob("*"))`'s (a folder before its
    contents, names compared as text, symlinked folders not entered), filtered; but one
    `scandir` per folder instead of a stat per file, and `root` resolved once instead of
    every file (a `resolve()` is a syscall per path component): only a symlinked file
    is resolved on its own.
    """
    if root.is_file():
        yield root, str(root.resolve())
    elif root.is_dir():
        yield from _walk(root, str(root.resolve()))


def _walk(folder: Path, real: str) -> Iterator[tuple[Path, str]]:
    try:
        with os.scandir(folder) as found:
            entries = sorted(found, key=_name)
    except PermissionError:  # as rglob: an unreadable folder holds nothing
        return
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(folder / name, os.path.join(real, name))
        elif name.endswith(YAML_SUFFIXES) and entry.is_file():
            path = folder / name
            yield path, (str(path.resolve()) if entry.is_symlink() else os.path.join(real, name))


def _name(entry: os.DirEntry) -> str:
    return entry.name
