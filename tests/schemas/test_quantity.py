"""The one quantity parser (schemas/quantity.py): exact amounts, upstream's formats, its
canonical printing, and what it refuses. Callers' own rules (the scheduling overlay's
sums, podrules' comparisons, the controller's drift checks) are tested with them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from schemas import quantity as q


@pytest.mark.parametrize("value, amount, fmt", [
    ("4", "4", q.DECIMAL_SI),
    (4, "4", q.DECIMAL_SI),
    ("0.5", "0.5", q.DECIMAL_SI),
    (0.5, "0.5", q.DECIMAL_SI),
    (".5", "0.5", q.DECIMAL_SI),
    ("5.", "5", q.DECIMAL_SI),
    ("100m", "0.1", q.DECIMAL_SI),
    ("250u", "0.00025", q.DECIMAL_SI),
    ("1n", "0.000000001", q.DECIMAL_SI),
    ("2k", "2000", q.DECIMAL_SI),
    ("1E", "1000000000000000000", q.DECIMAL_SI),
    ("1Ki", "1024", q.BINARY_SI),
    ("1.5Gi", "1610612736", q.BINARY_SI),
    ("1Ei", "1152921504606846976", q.BINARY_SI),
    ("1e3", "1000", q.DECIMAL_EXPONENT),
    ("1E-2", "0.01", q.DECIMAL_EXPONENT),
    ("+2", "2", q.DECIMAL_SI),
    ("-2Mi", "-2097152", q.BINARY_SI),
    (1e16, "1E+16", q.DECIMAL_EXPONENT),
], ids=[
    "a whole number", "a YAML integer", "a fraction", "a YAML float", "a fraction without its zero",
    "a number ending in a point", "millicores", "micro", "nano", "kilo", "exa (not an exponent)", "kibi",
    "a fraction of a gibi", "exbi", "an exponent", "a negative exponent in capitals", "a plus sign",
    "a minus sign", "a float Python prints with an exponent",
])
def test_a_quantity_parses_to_its_exact_amount_and_upstream_format(value, amount, fmt) -> None:
    parsed = q.parse(value)
    assert parsed.amount == Decimal(amount)
    assert parsed.format == fmt


@pytest.mark.parametrize("value", [
    "", "Gi", "1Gb", "1K", "1ki", "1.2.3", "1e", "1e1.5", "0x10", "1_000", " 4", "4\n", "--1", True, False, None, [1],
    float("inf"), "1e9999999",
], ids=[
    "empty text", "a suffix alone", "a unit that is not a suffix", "upper-case K", "lower-case ki",
    "two decimal points", "an exponent without digits", "a fractional exponent", "hexadecimal",
    "an underscore", "leading space", "a final line break", "two signs", "true", "false", "null", "a list", "infinity",
    "an exponent beyond any amount",
])
def test_what_is_not_a_quantity_is_refused_with_a_value_error(value) -> None:
    with pytest.raises(ValueError):
        q.parse(value)


@pytest.mark.parametrize("value", ["-1", -1, "-0.5Gi", "-0"], ids=["negative text", "a negative integer",
                                                                     "a negative binary amount", "minus zero"])
def test_unsigned_parsing_refuses_a_minus_sign_as_the_spec_pattern_does(value) -> None:
    assert q.parse(value).amount <= 0
    with pytest.raises(ValueError):
        q.parse(value, signed=False)
    assert not q.QUANTITY.fullmatch(str(value))


def test_the_spec_pattern_and_the_parser_agree_on_every_unsigned_text() -> None:
    texts = [f"{sign}{number}{suffix}" for sign in ("", "+", "-") for number in ("0", "1", "1.5", ".5", "5.", "x")
             for suffix in ("", "m", "k", "K", "Ki", "Gi", "e3", "E-2", "E", "e", "i", "\n", " ")]
    for text in texts:
        try:
            q.parse(text, signed=False)
            parsed = True
        except ValueError:
            parsed = False
        assert parsed == bool(q.QUANTITY.fullmatch(text)), text


@pytest.mark.parametrize("total, fmt, text", [
    ("0", q.DECIMAL_SI, "0"),
    ("1", q.DECIMAL_SI, "1"),
    ("1.5", q.DECIMAL_SI, "1500m"),
    ("2000", q.DECIMAL_SI, "2k"),
    ("1500", q.DECIMAL_SI, "1500"),
    ("0.0000000001", q.DECIMAL_SI, "1n"),
    ("1073741824", q.BINARY_SI, "1Gi"),
    ("1536", q.BINARY_SI, "1536"),
    ("1000", q.BINARY_SI, "1k"),
    ("0.5", q.BINARY_SI, "500m"),
], ids=[
    "zero", "one", "a fraction in millis", "a round thousand", "a number no suffix divides",
    "finer than nano rounds up to 1n", "a whole gibi", "binary that no binary suffix divides",
    "binary below 1024 prints decimal", "a binary fraction prints decimal",
])
def test_canonical_prints_as_upstreams_quantity_string(total, fmt, text) -> None:
    assert q.canonical(Decimal(total), fmt) == text


def test_one_and_a_thousand_millis_are_the_same_amount() -> None:
    assert q.parse("1").amount == q.parse("1000m").amount == q.parse("1e0").amount == q.parse(1).amount
