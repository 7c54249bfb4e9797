"""The one reader and the two writers of the API server's times (foundation.rfc3339)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from foundation import rfc3339

AT = datetime(2026, 11, 28, 7, 1, 2, tzinfo=timezone.utc)


@pytest.mark.parametrize(("text", "instant"), [
    pytest.param("2026-11-28T07:01:02Z", AT, id="metav1.Time: whole seconds and Z"),
    pytest.param("2026-11-28T07:01:02.000042Z", AT.replace(microsecond=42), id="a MicroTime's fractions"),
    pytest.param("2026-11-28T09:01:02+02:00", AT, id="an offset is the same instant"),
    pytest.param("2026-11-28T07:01:02", AT, id="no offset is the API server's UTC"),
])
def test_every_spelling_of_an_instant_reads_as_that_instant_and_never_naive(text, instant):
    parsed = rfc3339.parse(text)

    assert parsed == instant
    assert parsed.tzinfo is not None  # comparable with datetime.now(timezone.utc)


@pytest.mark.parametrize("text", [None, "", "yesterday", 1700000000], ids=["absent", "empty", "words", "a number"])
def test_what_is_no_time_reads_as_none(text):
    assert rfc3339.parse(text) is None


def test_the_writers_give_the_two_wire_forms_in_utc_and_read_back():
    when = AT.replace(microsecond=42).astimezone(timezone(timedelta(hours=2)))

    assert rfc3339.timestamp(when) == "2026-11-28T07:01:02Z"
    assert rfc3339.micro_time(when) == "2026-11-28T07:01:02.000042Z"
    assert rfc3339.parse(rfc3339.micro_time(when)) == when
