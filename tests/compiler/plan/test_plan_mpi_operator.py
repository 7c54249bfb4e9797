"""`train-compile plan` offline under the mpi-operator target: what the mpi-operator does with each change.

The mpi-operator v0.8.0 makes the workers once and never updates them (it makes a deleted
worker again from the current spec, and added ones on a scale-up), and makes the launcher
as a batch Job once, from the launcher's template and the run policy's backoffLimit,
activeDeadlineSeconds and ttlSecondsAfterFinished, never updated, not even on a resume
(testworld/FACTS-mpi-operator.md; proven on the real one by tests/e2e). Each case is a
base MPI spec, the head's edit and the environment; the hazards and a phrase are pinned.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from plan_kit import job_of, new_repo, project

from compiler_builders import job_doc

MPI_OPERATOR = {"default": {"target": "mpi-operator"}}
QUEUED = {"default": {"target": "mpi-operator", "scheduling": {"queue": "hpc"}}}


def mpi_job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    return job_doc("mpi", name=name, namespace="hpc", **{"nodes": 2, "resources": {"cpu": "2"},
                                                         "command": ["mpirun", "/app/pi"], **spec})


def spec(**fields: Any) -> Callable[[dict], None]:
    return lambda doc: doc["spec"].update(fields)


def policy(**fields: Any) -> Callable[[dict], None]:
    return lambda doc: doc["spec"].setdefault("policy", {}).update(fields)


CASES = [
    ("nodes 2 -> 3 adds a worker from the new spec beside the running ones", MPI_OPERATOR, None, spec(nodes=3),
     ["mixed-run"], "makes added workers"),
    ("an image change reaches new workers only, and never the launcher Job", MPI_OPERATOR, None,
     spec(image="ghcr.io/acme/train:2"), ["mixed-run", "ignored-until-next-run"],
     "this MPIJob's launcher keeps its old pod template"),
    ("the launcher's own resources are the launcher Job's, made once", MPI_OPERATOR, None,
     spec(roles={"launcher": {"resources": {"cpu": "1"}}}), ["ignored-until-next-run"],
     "not even on a resume"),
    ("a backoffLimit was copied into the launcher Job: no run of this MPIJob uses it", MPI_OPERATOR, None,
     policy(backoffLimit=5), ["ignored-until-next-run"], "made the launcher Job once with runPolicy.backoffLimit"),
    ("cleanPods is read from the MPIJob when the job ends", MPI_OPERATOR, None, policy(cleanPods="All"), [],
     "reads runPolicy.cleanPodPolicy from the MPIJob itself"),
    ("suspend added stops the run", MPI_OPERATOR, None, policy(suspend=True), ["suspends-run"],
     "deletes the workers and suspends the launcher Job"),
    ("suspend removed starts the run again from the beginning", MPI_OPERATOR, policy(suspend=True),
     lambda doc: doc["spec"].pop("policy"), ["restarts-run"], "makes the workers from the head spec"),
    ("a queued MPIJob's image change makes Kueue stop and re-queue it; the launcher keeps its template",
     QUEUED, None, spec(image="ghcr.io/acme/train:2"), ["restarts-run", "ignored-until-next-run"],
     "Kueue stops the job"),
    ("suspend on a queued MPIJob is Kueue's", QUEUED, None, policy(suspend=True), [], "Kueue owns the suspend"),
    ("a TTL is the launcher Job's: the MPIJob stays and runs nothing again", MPI_OPERATOR, None,
     policy(ttlAfterFinished="1h"), ["ignored-until-next-run"], "ttlAfterFinished is the launcher Job's"),
]


@pytest.mark.parametrize(("envs", "base", "head", "hazards", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_hazards_of_a_change_under_the_mpi_operator(tmp_path, envs, base, head, hazards, says):
    repo = new_repo(tmp_path, project=project(**envs))
    doc = mpi_job()
    if base:
        base(doc)
    repo.write("jobs/pi.yaml", doc)
    repo.commit()
    repo.edit("jobs/pi.yaml", lambda docs: head(docs[0]))

    job = job_of(repo.plan(), "pi")

    assert (job["change"], job["kind"]) == ("update", "MPIJob")
    assert job["hazards"] == hazards, job["summary"]
    assert says.lower() in job["summary"].lower(), job["summary"]


def test_a_target_switch_from_kubeflow_v1_to_the_mpi_operator_is_a_new_run(tmp_path):
    repo = new_repo(tmp_path, project=project(default={}))
    repo.write("jobs/pi.yaml", mpi_job())
    repo.commit()
    repo.write("jobs/trainforge.yaml", project(**MPI_OPERATOR))

    plan = repo.plan()
    job = job_of(plan, "pi")

    assert (job["change"], job["hazards"]) == ("rename", ["kills-run", "restarts-run"])
    assert "project.environments.default.target" in job["fields"]
    assert (plan["environments"][0]["target"], plan["environments"][0]["controller"]) == ("mpi-operator", None)


def test_a_new_queued_mpijob_is_queued_and_a_ttl_is_no_rerun(tmp_path):
    repo = new_repo(tmp_path, project=project(**QUEUED))
    repo.write("jobs/keep.yaml", mpi_job("keep"))
    repo.commit()
    repo.write("jobs/pi.yaml", mpi_job(policy={"ttlAfterFinished": "1h"}))

    job = job_of(repo.plan(), "pi")

    assert (job["change"], job["hazards"], job["queue"]) == ("create", [], "hpc")
    assert "queued in Kueue's hpc" in job["summary"] and "the MPIJob stays" in job["summary"]
