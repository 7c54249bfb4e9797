"""The fast path of `serialize.dump`: block YAML written directly, scalars as PyYAML would.

PyYAML's C emitter is fast, but the Python half in front of it is not: building a node per
value, resolving every scalar twice and the alias bookkeeping made emitting most of a
`train-compile build` (bench/README.md, "Figures the compiler's code cites"). Our objects
are JSON-shaped (dicts with string keys, lists, strings, numbers, booleans, null), and for
those PyYAML's block layout is a handful of fixed rules (`key: value`, nested mappings two
spaces in, lists not indented under their key, `- ` items carrying the first key of a
mapping, `{}`/`[]` for empty ones), written out here in one pass.

What varies is how a scalar is written (plain, quoted, escaped), and that is never
guessed: a short string made only of characters that cannot start or form an
indicator is written plain, or quoted exactly when serialize's own rule or PyYAML's
resolver says so; every other scalar is emitted once by `serialize`'s real PyYAML
dumper and the text reused (a one-line scalar is written the same wherever it stands in
block context). Anything else (a multi-line scalar, a long or non-string key, another
type) raises `Slow`, and the caller emits that document with PyYAML, as before.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from yaml import ScalarNode
from yaml.resolver import Resolver

STR_TAG = "tag:yaml.org,2002:str"
MAX_SCALAR = 2000  # far from the emitter's width (4096): nothing wraps
MAX_KEY = 100  # PyYAML writes keys of 128 characters or more as `? key`
# No indicator can start or appear in these (':' only inside, '-' only with more after,
# no document marker `---`/`...` in front).
_SAFE = re.compile(r"(?!---|\.\.\.)(?:[A-Za-z0-9_./]|-(?=.))(?:[A-Za-z0-9_./@=+-]|:(?=.))*\Z")

_SCALAR_TYPES = frozenset((str, int, bool, float, type(None)))
_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")  # what YAML 1.1 (PyYAML) takes for line breaks


class Slow(Exception):
    """This document needs PyYAML's own representer."""


class Emitter:
    """One emitter per PyYAML dumper setup; it remembers how each scalar is written."""

    def __init__(
        self,
        *,
        quote_double: Callable[[str], bool],
        emit_one: Callable[[Any], str],
        rank: Callable[[str], tuple],
    ) -> None:
        self._quote_double = quote_double  # serialize's rule for strings it double-quotes
        self._emit_one = emit_one  # the real dumper on {"k": value}
        self._rank = rank  # mapping key order
        self._resolver = Resolver()
        # scalar -> its text, one table per type (1, 1.0 and True are equal keys)
        self._texts: dict[type, dict[Any, str]] = {kind: {} for kind in _SCALAR_TYPES}
        self._strs = self._texts[str]  # by far the most scalars
        self._layouts: dict[tuple[Any, ...], list[tuple[Any, str]]] = {}

    def _scalar(self, value: Any) -> str:
        known = self._texts.get(value.__class__)
        if known is None:
            raise Slow  # not a scalar type we write
        text = known.get(value)
        if text is None:
            text = known[value] = self._render(value)
        return text

    def _render(self, value: Any) -> str:
        kind = value.__class__
        if kind is str and _SAFE.match(value) and len(value) <= MAX_SCALAR:
            if self._quote_double(value):
                return f'"{value}"'
            if self._resolver.resolve(ScalarNode, value, (True, False)) != STR_TAG:
                return f"'{value}'"
            return value
        if kind not in (str, int, bool, float) and value is not None:
            raise Slow
        if kind is str and (len(value) > MAX_SCALAR or _BREAKS.search(value)):
            raise Slow
        text = self._emit_one(value)
        if not text.startswith("k: ") or not text.endswith("\n") or _BREAKS.search(text, 0, len(text) - 1):
            raise Slow  # multi-line (or otherwise unusual): its indentation depends on where it stands
        return text[3:-1]

    def _key(self, key: Any) -> str:
        if key.__class__ is not str or len(key) > MAX_KEY:
            raise Slow
        text = self._scalar(key)
        if len(text) > MAX_KEY:
            raise Slow
        return text

    def dump(self, value: Any) -> str:
        out: list[str] = []
        kind = value.__class__
        if kind is dict and value:
            self._mapping(value, "", "", out)
        elif kind is list and value:
            self._sequence(value, "", "", out)
        elif kind is dict or kind is list:
            out.append("{}\n" if kind is dict else "[]\n")
        else:
            raise Slow  # a bare scalar document ends with `...`; leave it to PyYAML
        return "".join(out)

    def _layout(self, keys: tuple[Any, ...]) -> list[tuple[Any, str]]:
        """(key, its text) in writing order; mappings mostly repeat a few key sets."""
        layout = self._layouts[keys] = [(key, self._key(key)) for key in sorted(keys, key=self._rank)]
        return layout

    def _mapping(self, mapping: dict, pad: str, lead: str, out: list[str]) -> None:
        strs = self._strs
        texts = self._texts
        keys = tuple(mapping)
        head = lead
        for key, key_text in self._layouts.get(keys) or self._layout(keys):
            value = mapping[key]
            kind = value.__class__
            if kind is str:
                text = strs.get(value) or self._scalar(value)
                out.append(f"{head}{key_text}: {text}\n")
            elif kind is dict:
                if value:
                    out.append(f"{head}{key_text}:\n")
                    self._mapping(value, pad + "  ", pad + "  ", out)
                else:
                    out.append(f"{head}{key_text}: {{}}\n")
            elif kind is list:
                if value:  # a list under a key is not indented
                    out.append(f"{head}{key_text}:\n")
                    self._sequence(value, pad, pad, out)
                else:
                    out.append(f"{head}{key_text}: []\n")
            else:
                known = texts.get(kind)
                if known is None:
                    raise Slow
                out.append(f"{head}{key_text}: {known.get(value) or self._scalar(value)}\n")
            head = pad

    def _sequence(self, items: list, pad: str, lead: str, out: list[str]) -> None:
        strs = self._strs
        texts = self._texts
        head = lead + "- "
        rest = pad + "- "
        for item in items:
            kind = item.__class__
            if kind is str:
                out.append(f"{head}{strs.get(item) or self._scalar(item)}\n")
            elif kind is dict:
                if item:
                    out.append(head)
                    self._mapping(item, pad + "  ", "", out)
                else:
                    out.append(head + "{}\n")
            elif kind is list:
                if item:
                    out.append(head)
                    self._sequence(item, pad + "  ", "", out)
                else:
                    out.append(head + "[]\n")
            else:
                known = texts.get(kind)
                if known is None:
                    raise Slow
                out.append(f"{head}{known.get(item) or self._scalar(item)}\n")
            head = rest
