"""Leaf types of the spec: what each accepts, what it refuses, and the fix it suggests."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from schemas.types import Name, Quantity, Seconds


class Probe(BaseModel):
    name: Name | None = None
    quantity: Quantity | None = None
    seconds: Seconds | None = None


def error_of(**value) -> str:
    with pytest.raises(ValidationError) as info:
        Probe(**value)
    (error,) = info.value.errors()
    return str(error["ctx"]["error"]) if "ctx" in error else error["msg"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [("4", "4"), (4, "4"), (0, "0"), ("500m", "500m"), ("16Gi", "16Gi"), ("1.5", "1.5"), ("1e3", "1e3"),
     ("2Ti", "2Ti"), (".5", ".5"), ("+1", "+1"), ("128k", "128k")],
    ids=lambda v: repr(v),
)
def test_quantities_follow_the_kubernetes_grammar(value, expected):
    assert Probe(quantity=value).quantity == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("16 GB", "'16 GB' is not a Kubernetes quantity; write e.g. 4, \"500m\", 16Gi or 1.5",
                     id="a space before the unit"),
        pytest.param("16gb", "'16gb' is not a Kubernetes quantity; write e.g. 4, \"500m\", 16Gi or 1.5",
                     id="a unit Kubernetes does not know"),
        pytest.param(1.5, '1.5 is read as a YAML float, not a Kubernetes quantity; write "1.5" (the same amount)',
                     id="an unquoted fraction"),
        pytest.param(1e3, '1000 is read as a YAML float, not a Kubernetes quantity; write "1000" (the same amount)',
                     id="an exponent YAML reads as a float (not 'use 500m')"),
        pytest.param(2.5e9, '2.5e+09 is read as a YAML float, not a Kubernetes quantity; write 2500M (the same amount)',
                     id="a large float in a quantity's own words"),
        pytest.param(float("inf"), "inf is not an amount; write a quantity such as 4, 500m or 16Gi", id="infinity"),
        pytest.param("16Gi\n", "'16Gi\\n' has white space around it (a YAML block scalar keeps its last line break),"
                     " which the API server refuses; write 16Gi", id="a final line break"),
        pytest.param(True, "a quantity cannot be a boolean; write a number such as 4 or 16Gi", id="a boolean"),
        pytest.param(-1, "-1 is negative; resources are amounts, use 0 or more", id="a negative number"),
        pytest.param("-2Gi", "-2Gi is negative; resources are amounts, use 0 or more", id="a negative size"),
    ],
)
def test_bad_quantities_say_how_to_write_one(value, message):
    assert error_of(quantity=value) == message


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(0, 0), (90, 90), ("90", 90), ("90s", 90), ("30m", 1800), ("24h", 86400), ("7d", 604800)],
    ids=lambda v: repr(v),
)
def test_durations_become_seconds(value, seconds):
    assert Probe(seconds=value).seconds == seconds


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("2 days", "'2 days' is not a duration; write 90s, 30m, 24h, 7d or whole seconds", id="words"),
        pytest.param("1h30m", "'1h30m' is not a duration; write 90s, 30m, 24h, 7d or whole seconds",
                     id="compound durations are not supported"),
        pytest.param(1.5, "'1.5' is not a duration; write 90s, 30m, 24h, 7d or whole seconds", id="a fraction"),
        pytest.param(-5, "-5 is negative; durations are whole seconds >= 0", id="a negative number"),
        pytest.param(False, "a duration cannot be a boolean; write e.g. 90s, 30m, 24h or 7d", id="a boolean"),
    ],
)
def test_bad_durations_say_how_to_write_one(value, message):
    assert error_of(seconds=value) == message


@pytest.mark.parametrize("value", ["a", "bert-finetune", "job-1", "a" * 63])
def test_dns_1035_names_are_accepted(value):
    assert Probe(name=value).name == value


@pytest.mark.parametrize(
    "value",
    [pytest.param("1job", id="starts with a digit"), pytest.param("job-", id="ends with a dash"),
     pytest.param("Job", id="upper case"), pytest.param("my_job", id="underscore"),
     pytest.param("a.b", id="a dot")],
)
def test_names_that_are_not_dns_1035_labels_are_refused(value):
    assert error_of(name=value).startswith(f"'{value}' is not a DNS-1035 label; use lower-case letters")


def test_a_name_over_63_characters_says_its_length():
    assert error_of(name="a" * 70) == f"'{'a' * 70}' is 70 characters; use at most 63"


def test_a_name_is_never_coerced_from_a_number():
    with pytest.raises(ValidationError, match="string_type|Input should be a valid string"):
        Probe(name=123)
