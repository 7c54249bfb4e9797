"""When a waiting pod is stuck (foundation.runs.stuck), and which exits restart
(foundation.runs.exits): the rules train-controller and `status` share."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from foundation.runs import exits
from foundation.runs.stuck import STUCK_AFTER, wait_of

NOW = datetime(2026, 11, 28, 7, 10, tzinfo=timezone.utc)


def pulling(*, waited: float | None, **meta: Any) -> dict[str, Any]:
    """A pod whose container cannot pull its image since `waited` s before NOW (None: unknown)."""
    status: dict[str, Any] = {"phase": "Pending", "containerStatuses": [
        {"name": "pytorch", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off"}}}]}
    if waited is not None:
        status["startTime"] = (NOW - timedelta(seconds=waited)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"metadata": {"name": "p", **meta}, "status": status}


@pytest.mark.parametrize("waited, threshold, stuck, left", [
    (60, STUCK_AFTER, False, 120), (180, STUCK_AFTER, True, 0), (600, STUCK_AFTER, True, 0), (2, 1, True, 0),
    (None, STUCK_AFTER, True, 0),
], ids=["a minute is waiting", "the threshold reached is stuck", "long past it is stuck", "a short threshold",
        "no time known counts as the threshold"])
def test_a_pod_is_waiting_then_stuck_at_the_threshold(waited, threshold, stuck, left):
    wait = wait_of(pulling(waited=waited), now=NOW, threshold=threshold)
    assert wait is not None and (wait.reason, wait.stuck, wait.left) == ("ImagePullBackOff", stuck, left)


def test_no_pod_is_stuck_with_threshold_0_nor_while_it_is_deleted_nor_when_nothing_blocks_it():
    assert wait_of(pulling(waited=600), now=NOW, threshold=0) is None
    assert wait_of(pulling(waited=600, deletionTimestamp="2026-11-28T07:09:00Z"), now=NOW) is None
    creating = {"metadata": {"name": "p"}, "status": {"phase": "Pending", "containerStatuses": [
        {"name": "pytorch", "state": {"waiting": {"reason": "ContainerCreating"}}}]}}
    assert wait_of(creating, now=NOW) is None


@pytest.mark.parametrize("policy, code, retried", [
    ("OnFailure", 1, True), ("Always", 0, True), ("Never", 137, False), ("ExitCode", 137, True),
    ("ExitCode", 128, True), ("ExitCode", 127, False), ("ExitCode", 1, False), ("ExitCode", 0, False),
    ("ExitCode", 0xBEEF, True), ("ExitCode", None, True), ("Never", None, False),
], ids=lambda v: str(v))
def test_which_exit_a_restart_policy_retries(policy, code, retried):
    assert exits.retries(policy, code) is retried


def test_the_permanent_codes_are_1_to_127():
    assert list(exits.PERMANENT) == list(range(1, 128))
