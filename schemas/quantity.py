"""Kubernetes resource quantities (`500m`, `16Gi`, `1e3`, `4`): one grammar, one exact parser.

It sits at the bottom (schemas/) because every layer reads quantities: the spec validates
them (`QUANTITY`, also the JSON Schema's pattern), the compiler compares a podTemplate's
requests with its limits, the scheduling overlay adds pod requests into a PodGroup's
`minResources`, and the controller adds and compares them as upstream does. Amounts are
exact `Decimal`s, never floats, so `1` equals `1000m` and sums do not drift. How a total
is printed stays with each caller; `canonical` is upstream's `Quantity.String()` for
those that print like the operator.

Each caller keeps its own tolerance for bad input: `parse` raises ValueError, and
`signed=False` refuses a leading '-' exactly as `QUANTITY` does (amounts in the spec are
never negative). Matching is `fullmatch`: Python's `$` also matches before a final
newline, which the same pattern in ECMA (editors) or Go (the API server, the CRDs) does not,
so `"4\n"` passed review and was refused at sync.
"""

from __future__ import annotations

import decimal
import functools
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any, NamedTuple, TypeVar

_NUMBER = r"(\d+(\.\d*)?|\.\d+)"
_SUFFIX = r"(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?"
# The spec's quantities: upstream's grammar without the minus sign. Its text is the JSON
# Schema's pattern (editors use it), so it stays plain ECMA-compatible regex.
QUANTITY = re.compile(rf"^\+?{_NUMBER}{_SUFFIX}$")
# Upstream's whole grammar: groups sign, number, fraction, suffix, binary suffix.
GRAMMAR = re.compile(rf"^([+-]?){_NUMBER}{_SUFFIX}$")

T = TypeVar("T")

BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"  # upstream's formats
BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
MULTIPLIERS: dict[str, Decimal] = {
    **{suffix: Decimal(10) ** exponent for suffix, exponent in DECIMAL_EXPONENTS.items()},
    **{suffix: Decimal(1024) ** (i + 1) for i, suffix in enumerate(BINARY_SUFFIXES)},
}


class Quantity(NamedTuple):
    amount: Decimal  # exact
    suffix: str  # as written: "", "m", "Gi", "e3", ...

    @property
    def format(self) -> str:
        """Upstream's format of the quantity: the one its sums keep."""
        if self.suffix in BINARY_SUFFIXES:
            return BINARY_SI
        return DECIMAL_SI if self.suffix in DECIMAL_EXPONENTS else DECIMAL_EXPONENT


def remembered_for_scalars(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn`, remembered per (type, value, other arguments) when its first argument is one of the
    scalars a spec holds (str, int, float; `typed` keeps `1`, `1.0` and `"1"` apart, and a
    bool is never one). A build asks for the same handful of quantities thousands of times,
    and re-parsing them was a visible part of its CPU (issue 27; the counts and the CPU:
    bench/README.md, "Figures the compiler's code cites"). Results are immutable; a
    ValueError is raised again each time (exceptions are not remembered)."""
    cached = functools.lru_cache(maxsize=4096, typed=True)(fn)

    @functools.wraps(fn)
    def call(value: object, *args: Any, **kwargs: Any) -> T:
        if value.__class__ in (str, int, float):
            return cached(value, *args, **kwargs)
        return fn(value, *args, **kwargs)

    return call


@remembered_for_scalars
def parse(value: object, *, signed: bool = True) -> Quantity:
    """A quantity written as text or a number (a YAML `4` or `0.5`); ValueError otherwise.

    Integers are exact; any other value is read as its text, as the API server reads
    a JSON number. A boolean is never a quantity. Remembered (`remembered_for_scalars`)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int) and (signed or value >= 0):
        return Quantity(Decimal(value), "")
    match = GRAMMAR.fullmatch(str(value))
    if match is None or (not signed and match.group(1) == "-"):
        raise ValueError(f"{value!r} is not a quantity")
    number, suffix = Decimal(match.group(1) + match.group(2)), match.group(4) or ""
    try:
        if suffix in MULTIPLIERS:
            return Quantity(number * MULTIPLIERS[suffix], suffix)
        return Quantity(number.scaleb(int(suffix[1:])), suffix)
    except decimal.DecimalException as exc:  # an exponent beyond Decimal's range (1e9999999)
        raise ValueError(f"{value!r} is out of range") from exc


@functools.lru_cache(maxsize=4096)
def canonical(total: Decimal, fmt: str) -> str:
    """upstream `Quantity.String()` of `total` in format `fmt`: the largest suffix of that
    format that keeps the number whole (DecimalExponent prints as DecimalSI here).

    Remembered: it depends on the amount's value alone (`1` and `1.0` print alike), and a
    build prints the same few PodGroup sums again and again (see `remembered_for_scalars`)."""
    if fmt == BINARY_SI and total == total.to_integral_value() and abs(total) >= 1024:
        for suffix in reversed(BINARY_SUFFIXES):
            if total % MULTIPLIERS[suffix] == 0:
                return f"{int(total / MULTIPLIERS[suffix])}{suffix}"
        return str(int(total))
    if total == 0:
        return "0"
    for suffix, exponent in sorted(DECIMAL_EXPONENTS.items(), key=lambda item: -item[1]):
        scaled = total.scaleb(-exponent)
        if scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return f"{int(total.scaleb(9).to_integral_value(rounding='ROUND_CEILING'))}n"  # finer than nano rounds up



def read(value: object) -> tuple[Decimal, str]:
    """(amount, format) of a quantity as apimachinery reads it from JSON: text is trimmed
    first, and an exponent's format prints as DecimalSI; ValueError if it is not one."""
    parsed = parse(value.strip() if isinstance(value, str) else value)
    return parsed.amount, BINARY_SI if parsed.format == BINARY_SI else DECIMAL_SI


def amount(value: object) -> object:
    """The exact amount of a quantity, or the value itself when it is not one: compare-safe,
    so drift checks see `1` and `1000m` as equal (the API server rewrites quantities of
    built-in types in canonical form, while CRDs keep what was written)."""
    try:
        return read(value)[0].normalize()
    except ValueError:
        return value


def _kept_as_written(text: str) -> bool:
    """Whether Go's `ParseQuantity` keeps `text` itself as the quantity's `String()`: its fast
    path reuses the written text when it deems it canonical already (a decimal whose digits
    end in no "000", start with no 0 and whose scale is a multiple of 3, e.g. "1.5e-2" or
    "1.500"; a binary one whose number is not a multiple of 8, e.g. "100Mi")."""
    match = GRAMMAR.fullmatch(text)
    if text == "0":
        return True
    if match is None:
        return False
    whole, _, denom = match.group(2).partition(".")
    num = whole.lstrip("0") or "0"
    suffix, shifted = match.group(4) or "", num + denom
    if suffix in BINARY_SUFFIXES:
        exponent = 10 * (BINARY_SUFFIXES.index(suffix) + 1)
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        value = int(shifted)
        return (not denom and precision >= 0 and abs(value << exponent) < 2**63
                and value & 7 != 0)
    exponent = DECIMAL_EXPONENTS[suffix] if suffix in DECIMAL_EXPONENTS else int(suffix[1:])
    scale = exponent - len(denom)
    return (len(num) + len(denom) <= 18 and scale >= -9 and scale % 3 == 0
            and not shifted.endswith("000") and not shifted.startswith("0"))


@remembered_for_scalars
def canonical_text(value: object) -> str:
    """What a Go client stores for a written quantity: it parses `value` into a
    `resource.Quantity` and marshals its `String()`: the written text when Go deems it
    canonical already (`_kept_as_written`), else the canonical form in the format the
    suffix implies (`4` -> "4", `0.5` -> "500m", `1.5Gi` -> "1536Mi", `2048Mi` -> "2Gi",
    `1000` -> "1k"). A webhook that decodes an object into Go types and answers with a
    patch (Kubeflow Trainer's) rewrites every quantity so; ValueError for a non-quantity.
    Remembered (`remembered_for_scalars`)."""
    quantity = parse(value)
    text = str(value)
    if _kept_as_written(text):
        return text
    if quantity.format != DECIMAL_EXPONENT or quantity.amount == 0:
        return canonical(quantity.amount, quantity.format)
    exponent = 3 * (quantity.amount.adjusted() // 3)  # the largest multiple of 3 keeping the number whole
    while exponent > -9 and quantity.amount.scaleb(-exponent) != quantity.amount.scaleb(-exponent).to_integral_value():
        exponent -= 3
    number = int(quantity.amount.scaleb(-exponent).to_integral_value(rounding="ROUND_CEILING"))
    return f"{number}e{exponent}" if exponent else str(number)


QuantityPath = tuple[str, ...]  # keys into a JSON object; "*" is any key or list item


_LEAF = ""  # a trie key no JSON path uses here: the node itself is a quantity


@functools.lru_cache(maxsize=64)
def _trie(paths: tuple[QuantityPath, ...]) -> dict:
    """`paths` as one tree of keys, so an object is walked once for all of them, not once a
    path (11 walks of every pod template did cost as much as the rest of lowering)."""
    root: dict = {}
    for path in paths:
        node = root
        for key in path:
            node = node.setdefault(key, {})
        node[_LEAF] = {}
    return root


def _canonical_at(node: object, trie: dict) -> object:
    """`node` with the quantities under `trie` canonical: each dict or list on the way is a
    new one, everything off the paths is shared with `node`."""
    if isinstance(node, dict):
        out = dict(node)
        for key, sub in trie.items():
            if key == "*":
                for k in out:
                    out[k] = _canonical_at(out[k], sub)
            elif key != _LEAF and key in out:
                out[key] = _canonical_at(out[key], sub)
        return out
    if isinstance(node, list):
        return [_canonical_at(item, trie["*"]) for item in node] if "*" in trie else node
    if _LEAF in trie:
        try:
            return canonical_text(node)
        except ValueError:  # not a quantity: review or the API server says so at its line
            return node
    return node


def canonical_quantities(obj: dict, paths: tuple[QuantityPath, ...]) -> dict:
    """`obj` (not changed) with the quantities at `paths` in the form a Go admission webhook
    stores them (see canonical_text): a webhook that decodes an object into Go types and
    answers with a patch (Trainer's, Kueue's) rewrites every quantity so on create, and a
    GitOps engine then sees what git holds as drift, or an immutable field refuses it."""
    out = _canonical_at(obj, _trie(paths))
    assert isinstance(out, dict)
    return out
