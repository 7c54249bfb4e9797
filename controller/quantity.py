"""Kubernetes resource quantities (`500m`, `2Gi`, `1e3`, `4`) as exact decimals.

Two places need them: a PodGroup's `minResources` is a sum of container requests
(semantics §8), and deciding whether a PodGroup or an HPA drifted must compare `1` with
`1000m` as equal, because the API server rewrites quantities of built-in types in their
canonical form while CRDs keep what was written. Sums are printed the way apimachinery's
`Quantity.String()` would print them in the format of the first term, so what we write
reads like what upstream writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

_PATTERN = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {suffix: Decimal(1024) ** (i + 1) for i, suffix in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY, DECIMAL = "BinarySI", "DecimalSI"


def parse(value: Any) -> tuple[Decimal, str]:
    """(amount, format) of a quantity; ValueError if it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value)), DECIMAL
    match = _PATTERN.match(str(value).strip())
    if match is None:
        raise ValueError(f"{value!r} is not a quantity")
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix], BINARY
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix]), DECIMAL
    return number.scaleb(int(suffix[1:])), DECIMAL  # e/E exponent: printed as DecimalSI


def amount(value: Any) -> Decimal | Any:
    """The exact amount of a quantity, or the value itself when it is not one (compare-safe)."""
    try:
        return parse(value)[0].normalize()
    except ValueError:
        return value


def format_quantity(total: Decimal, fmt: str) -> str:
    """apimachinery's canonical form: the largest suffix that keeps the number whole."""
    if fmt == BINARY and total == total.to_integral_value() and abs(total) >= 1024:
        for suffix, unit in reversed(_BINARY.items()):
            if total % unit == 0:
                return f"{int(total / unit)}{suffix}"
        return str(int(total))
    if total == 0:
        return "0"
    for suffix, exponent in sorted(_DECIMAL.items(), key=lambda item: -item[1]):
        scaled = total.scaleb(-exponent)
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return f"{int(total.scaleb(9).to_integral_value(rounding='ROUND_CEILING'))}n"  # finer than nano rounds up


def add_lists(lists: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Sum resource lists name by name; each sum keeps the format of its first term."""
    totals: dict[str, tuple[Decimal, str]] = {}
    for resources in lists:
        for name, value in resources.items():
            number, fmt = parse(value)
            previous = totals.get(name)
            totals[name] = (number, fmt) if previous is None else (previous[0] + number, previous[1])
    return {name: format_quantity(number, fmt) for name, (number, fmt) in sorted(totals.items())}


def same_lists(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """Resource lists equal by value (`1` == `1000m`); absent equals empty."""
    return {k: amount(v) for k, v in (a or {}).items()} == {k: amount(v) for k, v in (b or {}).items()}
