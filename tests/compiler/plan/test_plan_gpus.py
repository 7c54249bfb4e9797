"""GPUs and GPU-hours in the plan: per job, per environment, per namespace and per Kueue queue.

A job's GPUs are what it asks for with all its pods running; the GPU-hours a change can add
at most are known where every job it starts or grows has an activeDeadline (GPUs x deadline):
a whole budget for a new run, the growth for an update, nothing for a delete; a job that
will re-run after its TTL, or one without a deadline, leaves no bound and is named.
"""

from __future__ import annotations

import pytest
from plan_kit import env_of, job_of, new_repo, project, running_job


def _deadline(hours: int) -> dict:
    return {"activeDeadline": f"{hours}h"}


def test_gpus_before_and_after_per_job_environment_namespace_and_queue(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={"scheduling": {"queue": "team-a"}}))
    repo.write("jobs/a.yaml", running_job("a", policy=_deadline(10)))  # 2 x 8 GPUs
    repo.write("jobs/b.yaml", {**running_job("b", policy=_deadline(1)), "metadata": {"name": "b", "namespace": "cv"}})
    repo.commit()
    repo.edit("jobs/a.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    repo.remove("jobs/b.yaml")

    env = env_of(repo.plan(), "prod")

    assert job_of(repo.plan(), "a", env="prod")["gpus"] == {"before": 16, "after": 24}
    assert job_of(repo.plan(), "b", env="prod")["gpus"] == {"before": 16, "after": 0}
    assert env["gpus"] == {"before": 32, "after": 24}
    namespaces = {g["name"]: g for g in env["namespaces"]}
    assert namespaces["nlp"]["gpus"] == {"before": 16, "after": 24}
    assert namespaces["cv"]["gpus"] == {"before": 16, "after": 0}
    (queue,) = env["queues"]
    assert (queue["name"], queue["gpus"]) == ("team-a", {"before": 32, "after": 24})


def test_gpu_hours_added_at_most_by_an_update_is_the_growth_of_its_budget(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.write("jobs/a.yaml", running_job("a", policy=_deadline(10)))
    repo.commit()
    repo.edit("jobs/a.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    hours = env_of(repo.plan(), "prod")["gpuHours"]

    assert hours == {"before": 160.0, "after": 240.0, "addedAtMost": 80.0, "unbounded": []}


@pytest.mark.parametrize(("edit", "added"), [
    pytest.param(lambda r: r.write("jobs/new.yaml", running_job("new", policy=_deadline(2))), 32.0,
                 id="a new job adds its whole budget"),
    pytest.param(lambda r: r.edit("jobs/a.yaml", lambda d: d[0]["metadata"].__setitem__("name", "a2")), 160.0,
                 id="a rename starts a whole new run"),
    pytest.param(lambda r: r.remove("jobs/a.yaml"), 0.0, id="a delete adds nothing"),
])
def test_gpu_hours_added_at_most(tmp_path, edit, added):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.write("jobs/a.yaml", running_job("a", policy=_deadline(10)))
    repo.write("jobs/keep.yaml", running_job("keep", policy=_deadline(1)))
    repo.commit()
    edit(repo)

    assert env_of(repo.plan(), "prod")["gpuHours"]["addedAtMost"] == added


@pytest.mark.parametrize(("policy", "unbounded"), [
    pytest.param({}, ["nlp/new"], id="a new job without an activeDeadline leaves no bound"),
    pytest.param({"activeDeadline": "1h", "ttlAfterFinished": "1h"}, ["nlp/new"],
                 id="a job that re-runs after its TTL leaves no bound"),
])
def test_no_bound(tmp_path, policy, unbounded):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.write("jobs/keep.yaml", running_job("keep", policy=_deadline(1)))
    repo.commit()
    repo.write("jobs/new.yaml", running_job("new", policy=policy))

    hours = env_of(repo.plan(), "prod")["gpuHours"]

    assert hours["addedAtMost"] is None and hours["unbounded"] == unbounded
    assert "no bound (nlp/new without one)" in repo.run("--env", "prod").stdout


def test_a_refused_update_adds_no_gpus_and_no_gpu_hours(tmp_path):
    """Trainer v2 refuses a new node count (spec.trainer is immutable): the job keeps its 16 GPUs."""
    repo = new_repo(tmp_path, project=project(prod={"target": "trainer-v2"}))
    repo.write("jobs/a.yaml", running_job("a", policy=_deadline(10)))
    repo.commit()
    repo.edit("jobs/a.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 4))

    plan = repo.plan()

    job = job_of(plan, "a", env="prod")
    assert job["hazards"] == ["sync-refused"] and job["gpus"] == {"before": 16, "after": 32}  # what git asks
    env = env_of(plan, "prod")
    assert env["gpus"] == {"before": 16, "after": 16}
    assert env["gpuHours"] == {"before": 160.0, "after": 160.0, "addedAtMost": 0.0, "unbounded": []}
    assert "| update | `nlp/a` | TrainJob | 16 -> 32 (+16) (refused: stays 16) |" in repo.run("--format", "markdown").stdout
