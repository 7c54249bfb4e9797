"""What a plan says a kill or restart throws away, from the progress a running job reported.

Pure: the live job is a plain object as the CLI's reader hands it in; `test_plan_live.py` reads
states from an API server, and tests/e2e/test_progress_kubeflow_v1.py the whole way from a
training process's reports to `plan --live`.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from compiler.plan import words
from compiler.plan.build import _throws_away
from compiler.plan.live import state_of

NOW = datetime(2026, 11, 28, 14, 0, tzinfo=timezone.utc)


def stamp(ago: timedelta) -> str:
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def live_job(state: str = "Running", *, progress: dict | None = None) -> dict:
    status = {"conditions": [{"type": state, "status": "True", "lastTransitionTime": stamp(timedelta(hours=3, minutes=12))}],
              "startTime": stamp(timedelta(hours=3))}
    if progress is not None:
        status["trainerStatus"] = {"lastUpdatedTime": stamp(timedelta(minutes=1)), **progress}
    return {"kind": "PyTorchJob", "metadata": {"name": "bert-finetune", "namespace": "nlp"}, "status": status}


OLD = SimpleNamespace(name="bert-finetune", gpus=32)


def test_a_removed_running_job_that_reported_is_priced():
    found = state_of(live_job(progress={"progressPercentage": 62, "estimatedRemainingSeconds": 11400}))
    lead = words.delete_lead(OLD, found, NOW)
    assert lead == ("removed from git; kills bert-finetune at 62%, 3 h 10 min left, 96 GPU-hours of progress"
                    " (Running for 3h12m)")


def test_a_job_that_never_reported_reads_as_before():
    assert words.delete_lead(OLD, state_of(live_job()), NOW) == "removed from git; kills bert-finetune, Running for 3h12m"


@pytest.mark.parametrize("hazards, verb", [(["kills-run"], "kills"), (["restarts-run", "mixed-run"], "restarts"),
                                           (["suspends-run"], "suspends"), (["ignored-until-next-run"], None)],
                         ids=["a kill", "a restart", "a suspension", "a change the run does not take"])
def test_the_headline_names_what_stops_the_run(hazards, verb):
    found = state_of(live_job(progress={"progressPercentage": 62}))
    plan = SimpleNamespace(hazards=hazards, renamed_from=None, key="nlp/bert-finetune")
    expected = f"{verb} nlp/bert-finetune at 62%, 96 GPU-hours of progress" if verb else None
    assert _throws_away(plan, found, 32, NOW) == expected


def test_a_finished_job_throws_nothing_away():
    found = state_of(live_job("Succeeded", progress={"progressPercentage": 100}))
    plan = SimpleNamespace(hazards=["kills-run"], renamed_from=None, key="nlp/bert-finetune")
    assert _throws_away(plan, found, 32, NOW) is None
