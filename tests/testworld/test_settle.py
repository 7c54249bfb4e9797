"""The one wait for quiet (testworld.settle.until_quiet) that tests and benchmarks settle on."""

from __future__ import annotations

import time

import pytest

from testworld.settle import Unsettled, until_quiet


def readings(*values: int):
    """A read() that gives `values` one per call, then the last one for ever."""
    given = list(values)
    return lambda: given.pop(0) if len(given) > 1 else given[0]


def test_it_returns_the_reading_once_it_stayed_the_same_for_the_quiet_time():
    started = time.monotonic()

    assert until_quiet(readings(1, 2, 3, 3), quiet=0.1, timeout=5, poll=0.01) == 3
    assert time.monotonic() - started >= 0.1


def test_a_change_starts_the_quiet_time_again():
    read = readings(*([1] * 5 + [2]))  # 1 for ~0.05 s, then 2
    started = time.monotonic()

    assert until_quiet(read, quiet=0.1, timeout=5, poll=0.01) == 2
    assert time.monotonic() - started >= 0.14  # 0.1 s of quiet counted from the change


def test_quiet_counts_only_while_ready_holds():
    assert until_quiet(readings(0, 0, 0, 1), quiet=0.05, timeout=5, poll=0.01, ready=lambda r: r > 0) == 1


def test_how_long_may_depend_on_the_reading():
    started = time.monotonic()

    until_quiet(readings(7), quiet=lambda r: 0.2 if r == 7 else 60, timeout=5, poll=0.01)
    assert 0.2 <= time.monotonic() - started < 5


def test_same_says_which_part_of_a_reading_counts_as_a_change():
    ticks = iter(range(1000))
    read = lambda: (next(ticks), "calm")  # noqa: E731  (a clock that always moves, a state that does not)

    assert until_quiet(read, quiet=0.05, timeout=5, poll=0.01, same=lambda a, b: a[1] == b[1])[1] == "calm"


def test_what_never_goes_quiet_raises_with_its_last_reading():
    ticks = iter(range(1000))

    with pytest.raises(Unsettled, match="the counter did not settle within 0s") as raised:
        until_quiet(lambda: next(ticks), quiet=1, timeout=0.2, poll=0.01, what="the counter")
    assert raised.value.last > 0
