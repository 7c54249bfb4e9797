"""Where the keys and values of a document read by `schemas.fastyaml` stand, asked path by path.

A diagnostic names a path (`spec.policy.ttlAfterFinished`) and needs its line and column.
The ruamel loader records a table of every path while it reads (`loader._plain`); the fast
path keeps only the marks libyaml's events carried, per collection (`fastyaml.documents`),
and answers from them: one lookup walks the path down the data, so a warning on every job
costs a few dictionary reads each, where building every document's tables, or parsing its
file again, cost a large share of a build (bench/README.md). The whole table is built only
when something iterates it.

The answers are the ruamel loader's: libyaml's marks are where ruamel's parser (PyYAML's,
which mirrors libyaml) puts them, held to the ruamel loader by
tests/bench/test_loader_parity.py. Where the marks cannot say, `Fallback` sends the caller
to ruamel: an empty node (`key:` and nothing after it, which ruamel places by a rule of its
own), or data that no longer has the shape it was read with.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from schemas.fastyaml import Fallback, Marks, Pos

KEY, VALUE = 0, 1  # which table: where the key (or list item) starts, where its value does


def find(data: Any, marks: Marks, loc: tuple[Any, ...], which: int) -> Optional[Pos]:
    """The position of `loc` in table `which`, None when the document has no such path."""
    node, last = data, len(loc) - 1
    for depth, step in enumerate(loc):
        held = marks.get(id(node))
        if held is None or held[0] is not node:
            raise Fallback  # a collection the loader did not read (the data was changed)
        own = held[1]
        if node.__class__ is dict:
            if len(own) != 4 * len(node):
                raise Fallback
            try:
                if step not in node:
                    return None
            except TypeError:  # an unhashable step names no key
                return None
            at = 4 * list(node).index(step) + 2 * which
            child = node[step]
        else:
            if step.__class__ is not int or not 0 <= step < len(node):
                return None
            if len(own) != 2 * len(node):
                raise Fallback
            at = 2 * step
            child = node[step]
        if depth == last:
            line, column = own[at], own[at + 1]
            if line < 0:
                raise Fallback  # an empty node
            return line + 1, column + 1
        if child.__class__ is not dict and child.__class__ is not list:
            return None
        node = child
    return None  # the empty path: the document itself is in no table


def tables(data: Any, marks: Marks) -> tuple[dict[Any, Pos], dict[Any, Pos]]:
    """Both whole tables (key, value), as the ruamel loader records them."""
    keys: dict[Any, Pos] = {}
    values: dict[Any, Pos] = {}
    _place(data, (), marks, keys, values)
    return keys, values


def _place(node: Any, loc: tuple[Any, ...], marks: Marks, keys: dict[Any, Pos], values: dict[Any, Pos]) -> None:
    held = marks.get(id(node))
    if held is None or held[0] is not node:
        raise Fallback
    own = held[1]
    if node.__class__ is dict:
        if len(own) != 4 * len(node):
            raise Fallback
        for at, (key, value) in zip(range(0, len(own), 4), node.items()):
            child = (*loc, key)
            if own[at] < 0 or own[at + 2] < 0:
                raise Fallback
            keys[child] = (own[at] + 1, own[at + 1] + 1)
            values[child] = (own[at + 2] + 1, own[at + 3] + 1)
            if value.__class__ is dict or value.__class__ is list:
                _place(value, child, marks, keys, values)
        return
    if len(own) != 2 * len(node):
        raise Fallback
    for item, value in enumerate(node):
        child = (*loc, item)
        if own[2 * item] < 0:
            raise Fallback
        keys[child] = values[child] = (own[2 * item] + 1, own[2 * item + 1] + 1)
        if value.__class__ is dict or value.__class__ is list:
            _place(value, child, marks, keys, values)


class LazyTable(dict):
    """A position table that answers a path with `find(path)` (None: not in the table) and
    fills itself from `fill()` the first time anything else is asked of it."""

    def __init__(self, find: Callable[[tuple[Any, ...]], Optional[Pos]], fill: Callable[[], dict[Any, Pos]]) -> None:
        super().__init__()
        self._find: Optional[Callable[[tuple[Any, ...]], Optional[Pos]]] = find
        self._fill: Optional[Callable[[], dict[Any, Pos]]] = fill

    def _ready(self) -> None:
        fill, self._fill, self._find = self._fill, None, None
        if fill is not None:
            dict.update(self, fill())

    def __contains__(self, key: object) -> bool:
        if self._find is not None and key.__class__ is tuple:
            return self._find(key) is not None  # type: ignore[arg-type]
        self._ready()
        return super().__contains__(key)

    def __getitem__(self, key: Any) -> Any:
        if self._find is not None and key.__class__ is tuple:
            found = self._find(key)
            if found is None:
                raise KeyError(key)
            return found
        self._ready()
        return super().__getitem__(key)

    def get(self, key: Any, default: Any = None) -> Any:
        if self._find is not None and key.__class__ is tuple:
            found = self._find(key)
            return default if found is None else found
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
