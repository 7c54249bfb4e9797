"""The fast path of `loader`: libyaml parses, positions come later and only if asked.

ruamel.yaml's round-trip loader is pure Python here and slow on a job spec, which made
parsing most of a `train-compile build`. libyaml (the C parser that PyYAML ships, and the
`kubernetes` client pulls in) parses the same file many times faster (bench/README.md,
"Figures the compiler's code cites"), and the plain data is built here straight from its
events, never deeper than `MAX_DEPTH` (libyaml's own composer recurses in C and crashes on a
100,000-deep document). Positions are only needed for diagnostics, so a document loaded here
keeps only the marks its events carried (a few integers per key), and its position tables
answer from them (`schemas.positions`): a diagnostic looks up the few paths it names,
without parsing its file again.

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
from typing import Any, Callable

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


Pos = tuple[int, int]  # 1-based line, column (as `loader.Pos`)
Marks = dict[int, tuple[Any, list[int]]]  # id(collection) -> (the collection, its marks)


def _node(event: Any, next_event: Callable[[], Any], budget: list[int], depth: int, marks: Marks) -> Any:
    """The value that starts with `event`: a scalar, or a whole mapping or sequence."""
    kind = event.__class__
    if kind is ScalarEvent:
        return _scalar(event)
    if kind is MappingStartEvent:
        return _mapping(event, next_event, budget, depth + 1, marks)
    if kind is SequenceStartEvent:
        return _sequence(event, next_event, budget, depth + 1, marks)
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


class _Empty:
    """The mark of an empty node (`key:` and nothing after it): ruamel places those by a
    rule of its own (the next token's position, or the comment's after the colon), so its
    position is ruamel's to give (`schemas.positions`)."""

    line = column = -2


_EMPTY = _Empty()


def _mapping(start: Any, next_event: Callable[[], Any], budget: list[int], depth: int,
             marks: Marks) -> dict[Any, Any]:
    _opened(start, depth)
    out: dict[Any, Any] = {}
    own: list[int] = []  # key line, key column, value line, value column per key (0-based)
    marks[id(out)] = (out, own)
    flow = start.flow_style
    while True:
        event = next_event()
        if event.__class__ is not ScalarEvent:
            if event.__class__ is MappingEndEvent:
                break
            raise Fallback  # a non-scalar key: ruamel's to judge
        key_mark = event.start_mark
        if flow and key_mark.index == start.start_mark.index:
            raise Fallback  # a pair in a flow list (`[a: 1]`): ruamel refuses some libyaml takes (`["a":, b]`)
        key = _scalar(event)
        if key in out:
            raise Fallback  # a duplicate key: ruamel's to report
        if key is None and not event.value:
            key_mark = _EMPTY
        event = next_event()
        value_mark = event.start_mark
        # scalar values inline (`_scalar`'s rule): they are most of a document's events
        if event.__class__ is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise Fallback
            value = event.value
            if (not value or value[0] in _MAYBE_NOT_STR) and event.implicit[0]:
                if not value:
                    value_mark = _EMPTY
                value = _resolved(value)
            out[key] = value
        else:
            out[key] = _node(event, next_event, budget, depth, marks)
        own += (key_mark.line, key_mark.column, value_mark.line, value_mark.column)
    _counted(budget, len(out))
    return out


def _sequence(start: Any, next_event: Callable[[], Any], budget: list[int], depth: int,
              marks: Marks) -> list[Any]:
    _opened(start, depth)
    out: list[Any] = []
    own: list[int] = []  # line, column per item (0-based)
    marks[id(out)] = (out, own)
    while True:
        event = next_event()
        mark = event.start_mark
        if event.__class__ is ScalarEvent:
            item = _scalar(event)
            if item is None and not event.value:
                mark = _EMPTY
            out.append(item)
        elif event.__class__ is SequenceEndEvent:
            break
        else:
            out.append(_node(event, next_event, budget, depth, marks))
        own += (mark.line, mark.column)
    _counted(budget, len(out))
    return out


def documents(text: str, max_nodes: int) -> list[tuple[int, Any, Pos, Marks]]:
    """(index, plain data, 1-based start, marks) per non-empty document; raises `Fallback`.

    The data is built by recursive descent over libyaml's events, one call per collection:
    at most MAX_DEPTH deep, since a deeper document goes to ruamel (libyaml's own composer
    recurses without a limit, in C). The marks are where each key, value and item starts
    (0-based line and column, per collection in the order it holds them), read from the
    events while they pass: `schemas.positions` answers a diagnostic from them instead of
    parsing the file again (bench/README.md)."""
    if _ruamel_only(text):
        raise Fallback
    out = []

    def take(parser: Any, first: Any, index: int) -> None:
        if first.__class__ is MappingStartEvent:
            mark = first.start_mark
            marks: Marks = {}
            data = _mapping(first, parser.get_event, [max_nodes], 1, marks)
            out.append((index, data, (mark.line + 1, mark.column + 1), marks))
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

