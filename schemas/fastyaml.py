"""The fast path of `loader`: libyaml parses, positions come later and only if asked.

ruamel.yaml's round-trip loader is pure Python here and slow on a job spec, which made
parsing most of a `train-compile build`. libyaml (the C parser that PyYAML ships, and the
`kubernetes` client pulls in) parses the same file many times faster (bench/README.md,
"Figures the compiler's code cites"), and the plain data is built here straight from its
events, never deeper than `MAX_DEPTH` (libyaml's own composer recurses in C and crashes on a
100,000-deep document). Positions are only needed for diagnostics, so a document loaded here
gets position tables that fill themselves, on first read, from one re-parse of its file with
the ruamel loader: a clean run never pays for them, a run with errors pays once per file
that has one.

The fast path must never change what a document means, so it takes only what it is
sure of and gives up (`Fallback`) on everything else, and the caller then runs the
ruamel loader on the whole file, which keeps its exact values, errors and messages:
any libyaml error, anchors and aliases (alias expansion and its size limit stay ruamel's)
and tags (all three seen in libyaml's events, so a shell script's `&&` or a `!` in a
message stays on the fast path), tabs (ruamel rejects some that libyaml takes), NEL/LS/PS characters (line breaks in
YAML 1.1, not in 1.2), `%` directives (a `%YAML 1.1` would change the schema), duplicate keys, non-scalar
keys, non-mapping documents, and any plain scalar that ruamel's YAML 1.2 resolver would
not read as a string unless it is one of the plain forms below (`true`, `null`, `42`,
`-1.5e3`). Scalars are resolved here, not by libyaml's YAML 1.1 resolver (`on` would
be a boolean there).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator

from yaml import (
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    YAMLError,
)
from yaml._yaml import CParser

STR = "tag:yaml.org,2002:str"
_NULL = "tag:yaml.org,2002:null"
_BOOL = "tag:yaml.org,2002:bool"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_UNSURE = "tag:trainforge.dev,2025:unsure"  # let ruamel decide
MAX_DEPTH = 100  # deeper documents go to ruamel, which reports when it cannot cope

_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_TRUE = frozenset(("true", "True", "TRUE"))
_FALSE = frozenset(("false", "False", "FALSE"))
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")
_PLAIN_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)\Z")
# Every plain scalar ruamel 0.19's YAML 1.2 resolver takes for something other than a
# string (int, float, merge, timestamp, value; bools and nulls are the sets above):
# matching here without being a plain form above means "ask ruamel".
_RUAMEL_NOT_STR = re.compile(
    r"""(?:
        [-+]?0b[0-1_]+ | [-+]?0o?[0-7_]+ | [-+]?[0-9_]+ | [-+]?0x[0-9a-fA-F_]+
      | [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
      | [-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
      | [-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
      | [-+]?\.(?:inf|Inf|INF) | \.(?:nan|NaN|NAN)
      | << | =
      | [0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?.*
    )\Z""",
    re.VERBOSE,
)
_MAYBE_NOT_STR = frozenset("-+.0123456789~nNtTfF<=")
# Tabs (ruamel rejects some that libyaml takes), NEL/LS/PS (line breaks in YAML 1.1 only)
# and directives: the whole file goes to ruamel. (Anchors, aliases and tags are caught in the
# events: `_scalar`, `_opened`, `_node`.)
_RUAMEL_ONLY = re.compile("[\t\x85\u2028\u2029]")


def _ruamel_only(text: str) -> bool:
    """Whether the text has any of the above. Plain `in` tests for ASCII text (nearly
    every spec): a regex scan of a whole file was a measurable part of loading it (bench/README.md)."""
    if text.startswith("%") or "\n%" in text:
        return True
    if text.isascii():
        return "\t" in text
    return _RUAMEL_ONLY.search(text) is not None


class Fallback(Exception):
    """This file needs the ruamel loader (see the module docstring for when)."""


def _implicit_tag(value: str) -> str:
    if not value or value in _NULLS:
        return _NULL
    if value[0] not in _MAYBE_NOT_STR:
        return STR
    if value in _TRUE or value in _FALSE:
        return _BOOL
    if _PLAIN_INT.match(value):
        return _INT
    if _PLAIN_FLOAT.match(value):
        return _FLOAT
    if _RUAMEL_NOT_STR.match(value):
        return _UNSURE
    return STR


def _resolved(value: str) -> Any:
    """A plain scalar that may not be a string (empty, or starting like a number/null/bool).

    Remembered per text: a repository repeats the same few (`nodes`, `true`, `4`), and
    deciding one takes up to three regex matches."""
    known = _KNOWN.get(value, _KNOWN)
    if known is not _KNOWN:
        return known
    tag = _implicit_tag(value)
    if tag == STR:
        known = value
    elif tag == _INT:
        known = int(value)
    elif tag == _NULL:
        known = None
    elif tag == _BOOL:
        known = value in _TRUE
    elif tag == _FLOAT:
        known = float(value)
    else:
        raise Fallback
    if len(_KNOWN) < MAX_KNOWN:
        _KNOWN[value] = known
    return known


MAX_KNOWN = 50_000  # texts remembered by `_resolved`, a bound for huge generated files
_KNOWN: dict[str, Any] = {}


def _scalar(event: ScalarEvent) -> Any:
    if event.anchor is not None or event.tag is not None:
        raise Fallback
    value = event.value
    if (value and value[0] not in _MAYBE_NOT_STR) or not event.implicit[0]:
        return value  # quoted, block, or plain that can only be a string
    return _resolved(value)


def _node(event: Any, next_event: Callable[[], Any], budget: list[int], depth: int) -> Any:
    """The value that starts with `event`: a scalar, or a whole mapping or sequence."""
    kind = event.__class__
    if kind is ScalarEvent:
        return _scalar(event)
    if kind is MappingStartEvent:
        return _mapping(event, next_event, budget, depth + 1)
    if kind is SequenceStartEvent:
        return _sequence(event, next_event, budget, depth + 1)
    raise Fallback  # an alias (anchors are already excluded) or something unexpected


def _opened(start: Any, depth: int) -> None:
    if start.anchor is not None or start.tag is not None:
        raise Fallback
    if depth > MAX_DEPTH:
        raise Fallback  # ruamel reports how deep is too deep (and the recursion stays shallow)


def _counted(budget: list[int], nodes: int) -> None:
    # counted as the ruamel loader counts (every value and item, keys are free), one
    # collection at a time: the total, and so whether it passes the limit, is the same
    budget[0] -= nodes
    if budget[0] < 1:
        raise Fallback  # ruamel reports the size error with its position


def _mapping(start: Any, next_event: Callable[[], Any], budget: list[int], depth: int) -> dict[Any, Any]:
    _opened(start, depth)
    out: dict[Any, Any] = {}
    while True:
        event = next_event()
        if event.__class__ is not ScalarEvent:
            if event.__class__ is MappingEndEvent:
                break
            raise Fallback  # a non-scalar key: ruamel's to judge
        key = _scalar(event)
        if key in out:
            raise Fallback  # a duplicate key: ruamel's to report
        event = next_event()
        # scalar values inline (`_scalar`'s rule): they are most of a document's events
        if event.__class__ is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise Fallback
            value = event.value
            if (not value or value[0] in _MAYBE_NOT_STR) and event.implicit[0]:
                value = _resolved(value)
            out[key] = value
        else:
            out[key] = _node(event, next_event, budget, depth)
    _counted(budget, len(out))
    return out


def _sequence(start: Any, next_event: Callable[[], Any], budget: list[int], depth: int) -> list[Any]:
    _opened(start, depth)
    out: list[Any] = []
    while True:
        event = next_event()
        if event.__class__ is ScalarEvent:
            out.append(_scalar(event))
        elif event.__class__ is SequenceEndEvent:
            break
        else:
            out.append(_node(event, next_event, budget, depth))
    _counted(budget, len(out))
    return out


def _build(parser: CParser, first: Any, max_nodes: int) -> Any:
    """Plain data of one document from its events (`first` is its root's start).

    Recursive descent, one call per collection: at most MAX_DEPTH deep, since a deeper
    document goes to ruamel (libyaml's own composer recurses without a limit, in C)."""
    return _node(first, parser.get_event, [max_nodes], 0)


def documents(text: str, max_nodes: int) -> list[tuple[int, Any, tuple[int, int]]]:
    """(index, plain data, 1-based start) per non-empty document; raises `Fallback`."""
    if _ruamel_only(text):
        raise Fallback
    out = []

    def take(parser: Any, first: Any, index: int) -> None:
        if first.__class__ is MappingStartEvent:
            mark = first.start_mark
            out.append((index, _build(parser, first, max_nodes), (mark.line + 1, mark.column + 1)))
        elif not (first.__class__ is ScalarEvent and _scalar(first) is None):  # an empty one is skipped, index kept
            raise Fallback  # ruamel positions non-mapping documents its own way

    _each_document(text, take)
    return out


def _each_document(text: str, take: Callable[[Any, Any, int], None]) -> None:
    """`take(parser, first event, index)` for each document of `text` (a mapping's events up to
    its end are take's to read); libyaml's errors raise `Fallback`."""
    parser = CParser(text)
    index = 0
    try:
        while True:
            event = parser.get_event()
            kind = event.__class__
            if kind is DocumentStartEvent:
                take(parser, parser.get_event(), index)
                parser.get_event()  # DocumentEndEvent
                index += 1
            elif kind is StreamEndEvent or event is None:
                return
    except YAMLError as exc:
        raise Fallback from exc
    finally:
        parser.dispose()


class LazyTable(dict):
    """A position table that fills itself, from `fill()`, on its first read."""

    def __init__(self, fill: Callable[[], dict[Any, Any]]) -> None:
        super().__init__()
        self._fill: Callable[[], dict[Any, Any]] | None = fill

    def _ready(self) -> None:
        fill, self._fill = self._fill, None
        if fill is not None:
            dict.update(self, fill())

    def __contains__(self, key: object) -> bool:
        self._ready()
        return super().__contains__(key)

    def __getitem__(self, key: Any) -> Any:
        self._ready()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        self._ready()
        return super().get(key, default)

    def __iter__(self) -> Iterator[Any]:
        self._ready()
        return super().__iter__()

    def __len__(self) -> int:
        self._ready()
        return super().__len__()

    def keys(self):  # type: ignore[override]
        self._ready()
        return super().keys()

    def values(self):  # type: ignore[override]
        self._ready()
        return super().values()

    def items(self):  # type: ignore[override]
        self._ready()
        return super().items()

    def __eq__(self, other: object) -> bool:
        self._ready()
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._ready()
        return super().__repr__()


# --- positions from libyaml's marks ---------------------------------------------------------


def positions(text: str) -> dict[int, tuple[dict[Any, tuple[int, int]], dict[Any, tuple[int, int]]]]:
    """Document index -> (key positions, value positions), 1-based, for a text `documents`
    took: the marks libyaml gives every event are the ones ruamel's composer keeps for each
    node (it is a port of the same scanner), so the tables equal the ruamel loader's (the
    parity tests hold them to it), for a tenth of its time. A key's position is the key's,
    a value's its node's start; an item is both."""
    out: dict[int, tuple[dict[Any, tuple[int, int]], dict[Any, tuple[int, int]]]] = {}

    def take(parser: Any, first: Any, index: int) -> None:
        if first.__class__ is MappingStartEvent:
            marks = _Marks(parser.get_event)
            _marked(first, marks, ())
            out[index] = (marks.keys, marks.values)
        elif first.__class__ is not ScalarEvent:
            raise Fallback

    _each_document(text, take)
    return out


def _at(event: Any) -> tuple[int, int]:
    mark = event.start_mark
    return mark.line + 1, mark.column + 1


class _Marks:
    """The events of one document and the tables their positions go to. An empty plain scalar
    (`k:` with nothing after it) is placed by ruamel where some following token starts, by
    rules that differ between block and flow context: such a document's tables are ruamel's
    (`Fallback`), so they always equal the reference loader's."""

    def __init__(self, next_event: Callable[[], Any]) -> None:
        self.event = next_event
        self.keys: dict[Any, tuple[int, int]] = {}
        self.values: dict[Any, tuple[int, int]] = {}

    def record(self, tables: tuple[dict[Any, tuple[int, int]], ...], loc: Any, event: Any) -> None:
        if event.__class__ is ScalarEvent and event.value == "" and event.implicit[0]:
            raise Fallback
        for table in tables:
            table[loc] = _at(event)


def _marked(start: Any, marks: _Marks, loc: tuple[Any, ...]) -> None:
    """Record the positions under the collection that `start` opens (its events consumed)."""
    if start.__class__ is MappingStartEvent:
        while True:
            key = marks.event()
            if key.__class__ is MappingEndEvent:
                return
            child = loc + (_scalar(key),)
            marks.record((marks.keys,), child, key)
            value = marks.event()
            marks.record((marks.values,), child, value)
            if value.__class__ in (MappingStartEvent, SequenceStartEvent):
                _marked(value, marks, child)
    else:
        i = 0
        while True:
            item = marks.event()
            if item.__class__ is SequenceEndEvent:
                return
            child = loc + (i,)
            marks.record((marks.keys, marks.values), child, item)
            if item.__class__ in (MappingStartEvent, SequenceStartEvent):
                _marked(item, marks, child)
            i += 1
