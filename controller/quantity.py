"""Quantities as the controller needs them: sums printed as upstream prints them, and
comparison by value. Grammar and parsing are `schemas.quantity`, shared with the compiler.

Two places need them: a PodGroup's `minResources` is a sum of container requests
(semantics §8), and deciding whether a PodGroup or an HPA drifted must compare `1` with
`1000m` as equal, because the API server rewrites quantities of built-in types in their
canonical form while CRDs keep what was written. Sums are printed the way apimachinery's
`Quantity.String()` would print them in the format of the first term, so what we write
reads like what upstream writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from schemas import quantity as q

BINARY, DECIMAL = q.BINARY_SI, q.DECIMAL_SI


def parse(value: Any) -> tuple[Decimal, str]:
    """(amount, format) of a quantity; ValueError if it is not one. Text is trimmed first,
    as apimachinery trims a quantity it reads from JSON; an exponent prints as DecimalSI."""
    parsed = q.parse(value.strip() if isinstance(value, str) else value)
    return parsed.amount, BINARY if parsed.format == BINARY else DECIMAL


def amount(value: Any) -> Decimal | Any:
    """The exact amount of a quantity, or the value itself when it is not one (compare-safe)."""
    try:
        return parse(value)[0].normalize()
    except ValueError:
        return value


def add_lists(lists: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Sum resource lists name by name; each sum keeps the format of its first term."""
    totals: dict[str, tuple[Decimal, str]] = {}
    for resources in lists:
        for name, value in resources.items():
            number, fmt = parse(value)
            previous = totals.get(name)
            totals[name] = (number, fmt) if previous is None else (previous[0] + number, previous[1])
    return {name: q.canonical(number, fmt) for name, (number, fmt) in sorted(totals.items())}


def same_lists(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Resource lists equal by value (`1` == `1000m`); absent equals empty."""
    return {k: amount(v) for k, v in (a or {}).items()} == {k: amount(v) for k, v in (b or {}).items()}
