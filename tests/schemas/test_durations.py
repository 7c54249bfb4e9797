"""One reader of durations in three spellings, and one writer per purpose (schemas.durations).

What each place accepts is pinned where the place is tested too (tests/schemas/test_types.py
for the spec, tests/cli/test_live_views.py for `status --timeout`, the controller's flags in
tests/controller/test_controller_leader.py); here the spellings side by side.
"""

from __future__ import annotations

import pytest

from schemas.durations import FLAG, GO, SPEC, age, go, prose

ACCEPTED = [
    # (text, spec, status --timeout, controller flag); None: refused there
    ("90s", 90, 90, 90),
    ("7d", 604800, None, None),
    ("90", 90, None, 90),
    ("1h30m", None, 5400, 5400),
    ("1 h 30 m", None, 5400, 5400),
    ("1.5s", None, 1.5, 1.5),
    ("300ms", None, 0.3, 0.3),
    ("ten minutes", None, None, None),
    ("1.5.5s", None, None, None),
    ("", None, None, None),
]


@pytest.mark.parametrize(("text", "spec", "timeout", "flag"), ACCEPTED, ids=[repr(row[0]) for row in ACCEPTED])
def test_each_place_reads_its_own_spelling_with_the_one_unit_table(text, spec, timeout, flag):
    assert [SPEC.seconds(text), GO.seconds(text), FLAG.seconds(text)] == [
        pytest.approx(v) if v is not None else None for v in (spec, timeout, flag)]


def test_the_spec_spelling_is_its_json_schema_pattern():
    assert SPEC.pattern == r"^(\d+)([smhd]?)$"


@pytest.mark.parametrize(("seconds", "prose_", "age_", "go_"), [
    (2, "2 s", "2s", "2s"),
    (90, "1 min 30 s", "1m30s", "1m30s"),
    (180, "3 min", "3m", "3m"),
    (3661, "1 h 1 min 1 s", "1h1m", "1h1m1s"),
    (5400, "1 h 30 min", "1h30m", "1h30m"),
    (90000, "25 h", "1d1h", "25h"),
], ids=lambda v: repr(v))
def test_one_writer_per_purpose(seconds, prose_, age_, go_):
    """prose: a plan's sentence; age: to the two units that matter; go: exact, as its flag reads it."""
    assert (prose(seconds), age(seconds), go(seconds)) == (prose_, age_, go_)
    assert FLAG.seconds(go(seconds)) == seconds
