"""A quantity compared by its amount: the one piece of the canonical form the kinds read too.

`sameness.canonical` turns every quantity of a job (container resources, a volume's size, an
elastic policy's metric targets) into an `Amount`: the text as written, equal to any other
writing of the same amount (`cpu: 90` is `"90"`, `1Gi` is `1024Mi`). `plain` turns a canonical
value back into plain JSON, as the importer writes it into a spec.
"""

from __future__ import annotations

import functools
from typing import Any

from schemas import quantity


class Amount(str):
    """A quantity as written, equal to any other writing of the same amount (read once)."""

    value: object

    def __new__(cls, text: str) -> "Amount":
        made = super().__new__(cls, text)
        made.value = _amount(text)
        return made

    def __eq__(self, other: object) -> bool:
        if other.__class__ is Amount:
            return self.value == other.value  # type: ignore[attr-defined]
        if isinstance(other, (str, int, float)) and not isinstance(other, bool):
            return self.value == _amount(other if not isinstance(other, float) else repr(other))
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self.value)

    @property
    def text(self) -> str:
        return str.__str__(self)


@functools.lru_cache(maxsize=4096)
def _cached_amount(value: object) -> object:
    return _read_amount(value)


def _amount(value: object) -> object:
    return _cached_amount(value) if value.__class__ in (str, int) else _read_amount(value)


def _read_amount(value: object) -> object:
    try:
        return quantity.read(value)[0].normalize()
    except ValueError:
        return value


def plain(value: Any) -> Any:
    """A canonical value back as plain JSON (an `Amount` as the text it was written as)."""
    if isinstance(value, Amount):
        return value.text
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
