"""podrules compares a podTemplate's requests with its limits by exact amount (the shared
parser in schemas/quantity.py); what is not an amount is left to the quantity rule."""

from __future__ import annotations

from decimal import Decimal

import pytest

from compiler.review.podrules import _amount


@pytest.mark.parametrize("value, amount", [
    ("500m", "0.5"), (2, "2"), ("1E", "1e18"), ("1Ei", "1152921504606846976"), ("1e3", "1000"), ("+1Ki", "1024"),
], ids=["millicores", "a YAML integer", "exa, not an exponent", "exbi", "an exponent", "a plus sign"])
def test_a_request_or_limit_is_compared_by_its_exact_amount(value, amount) -> None:
    assert _amount(value) == Decimal(amount)


@pytest.mark.parametrize("value", ["-1", -1, True, "4 cores", "1e9999999"],
                         ids=["negative text", "a negative integer", "a boolean", "words", "an exponent out of range"])
def test_what_is_no_amount_is_not_compared(value) -> None:
    assert _amount(value) is None
