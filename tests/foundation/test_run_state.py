"""A job's state from its conditions (foundation.runs.state), the one rule `status` and
`plan --live` read. The last three cases pin where the two copies it replaced went wrong:
the plan's read only `active` child Jobs and only `...:SSZ` times, status' took any
condition type for a state."""

from __future__ import annotations

import pytest

from foundation.runs.state import JobState, job_state

T0, T1, T2 = "2026-11-28T07:00:00Z", "2026-11-28T07:01:00Z", "2026-11-28T07:02:00Z"


def cond(ctype: str, status: str = "True", at: str = T1, **extra: str) -> dict[str, str]:
    return {"type": ctype, "status": status, "lastTransitionTime": at, **extra}


def job(kind: str = "PyTorchJob", *conditions: dict[str, str], **status: object) -> dict[str, object]:
    return {"kind": kind, "metadata": {"creationTimestamp": T0}, "status": {"conditions": list(conditions), **status}}


@pytest.mark.parametrize(("obj", "expected"), [
    (job("PyTorchJob"), JobState("Created", T0)),
    (job("PyTorchJob", cond("Created", at=T0), cond("Running", at=T1)), JobState("Running", T1)),
    (job("PyTorchJob", cond("Created", at=T0), cond("Running", "False", at=T2),
         cond("Failed", at=T2, reason="PyTorchJobFailed", message="backoff")),
     JobState("Failed", T2, "PyTorchJobFailed", "backoff")),
    (job("PyTorchJob", cond("Running", "False", at=T2), cond("Restarting", at=T1)), JobState("Restarting", T1)),
    (job("PyTorchJob", cond("Suspended", at=T1), cond("Running", at=T1)), JobState("Running", T1)),
    (job("TrainJob", cond("Complete", at=T2)), JobState("Succeeded", T2)),
    (job("TrainJob", jobsStatus=[{"name": "node", "active": 1, "ready": 0}]),
     JobState("Running", T0, "", "child Jobs are active (jobsStatus)")),
    (job("TrainJob", jobsStatus=[{"name": "node", "active": 0, "ready": 0, "succeeded": 0}]), JobState("Created", T0)),
    (job("TrainJob", jobsStatus=[{"name": "node", "active": 0, "ready": 1, "succeeded": 0}]),
     JobState("Running", T0, "", "child Jobs are active (jobsStatus)")),
    (job("PyTorchJob", cond("Running", at="2026-11-28T07:01:00.500000Z"), cond("Restarting", at=T1)),
     JobState("Running", "2026-11-28T07:01:00.500000Z")),
    (job("TrainJob", cond("Suspended", at=T1), cond("PodsReady", at=T2)), JobState("Suspended", T1)),
], ids=["no condition yet reads Created since creation", "the newest true condition wins",
        "a failure carries its reason and message", "the newest true condition wins over a newer false one",
        "on a tie in time the later entry wins", "a TrainJob's Complete reads Succeeded",
        "a TrainJob with active child Jobs reads Running", "a TrainJob with no active child Job reads Created",
        "a TrainJob whose child Job is ready but no longer active reads Running (the plan's copy said Created)",
        "times with fractions are compared as times (the plan's copy took them for the oldest)",
        "a condition type the contract has no word for says nothing (status' copy printed it)"])
def test_a_jobs_state_is_its_newest_true_condition(obj, expected):
    assert job_state(obj) == expected
