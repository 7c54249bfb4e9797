"""The one reader of the API server's times (foundation.runs.clock), which plan --live, status
and the controller share."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from foundation.runs.clock import parse_time

AT = datetime(2026, 11, 28, 7, 1, 2, tzinfo=timezone.utc)


@pytest.mark.parametrize(("text", "instant"), [
    pytest.param("2026-11-28T07:01:02Z", AT, id="metav1.Time: whole seconds and Z"),
    pytest.param("2026-11-28T07:01:02.000042Z", AT.replace(microsecond=42), id="a MicroTime's fractions"),
    pytest.param("2026-11-28T09:01:02+02:00", AT, id="an offset is the same instant"),
    pytest.param("2026-11-28T07:01:02", AT, id="no offset is the API server's UTC"),
])
def test_every_spelling_of_an_instant_reads_as_that_instant_and_never_naive(text, instant):
    parsed = parse_time(text)

    assert parsed == instant
    assert parsed.tzinfo is not None  # comparable with datetime.now(timezone.utc)


@pytest.mark.parametrize("text", [None, "", "yesterday", 1700000000], ids=["absent", "empty", "words", "a number"])
def test_what_is_no_time_reads_as_none(text):
    assert parse_time(text) is None


def test_status_reads_an_age_with_the_same_reader():
    from compiler.cli.live.clock import age

    assert age("2026-11-28T07:00:02", AT) == "1m"  # no offset: UTC, not a naive time that cannot be subtracted
    assert age("2026-11-28T09:00:02+02:00", AT) == "1m"
