"""`plan --live` on a real API server: each job's state turns conditional hazards into facts.

The jobs are the compiled base applied as a GitOps engine would, their status written as a
controller writes it (no controller runs: the state is what is under test, not how it came
about). A killed run is named with its state and age; an edit of a finished job changes
nothing that runs; a job the cluster does not have is `absent`; the reader only reads.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from plan_kit import job_of, new_repo, project, running_job

pytestmark = pytest.mark.controlplane


def _stamp(ago: timedelta) -> str:
    return (datetime.now(timezone.utc) - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def _apply_base(repo, control_plane) -> None:
    """The base as the engine applied it: `render` of the committed specs, applied."""
    from compiler_builders import run_cli

    run = run_cli("render", repo.root / "jobs")
    assert run.exit_code == 0, run.stderr
    control_plane.kubectl("apply", "--server-side", "-f", "-", input=run.stdout)


def _status(control_plane, namespace: str, name: str, *conditions: tuple[str, timedelta]) -> None:
    body = {"status": {"conditions": [
        {"type": kind, "status": "True" if i == len(conditions) - 1 or kind == "Created" else "False",
         "reason": f"PyTorchJob{kind}", "message": "", "lastUpdateTime": _stamp(ago), "lastTransitionTime": _stamp(ago)}
        for i, (kind, ago) in enumerate(conditions)], "replicaStatuses": {}}}
    control_plane.kubectl("patch", "pytorchjob", name, "-n", namespace, "--subresource=status", "--type=merge",
                          "-p", json.dumps(body))


@pytest.fixture
def repo(tmp_path, control_plane, namespace):
    """Three jobs in `namespace`, committed and applied: bert Running for 3h12m, done Succeeded, paused
    Suspended."""
    repo = new_repo(tmp_path, project=project(prod={}))
    for name, policy in (("bert", {}), ("done", {}), ("paused", {"suspend": True})):
        doc = running_job(name, policy=policy)
        doc["metadata"]["namespace"] = namespace
        repo.write(f"jobs/{name}.yaml", doc)
    repo.commit()
    _apply_base(repo, control_plane)
    _status(control_plane, namespace, "bert", ("Created", timedelta(hours=4)), ("Running", timedelta(hours=3, minutes=12)))
    _status(control_plane, namespace, "done", ("Created", timedelta(hours=5)), ("Running", timedelta(hours=4)),
            ("Succeeded", timedelta(hours=2)))
    _status(control_plane, namespace, "paused", ("Created", timedelta(hours=1)), ("Suspended", timedelta(minutes=30)))
    return repo


def _live(repo, control_plane) -> dict:
    return repo.plan("--live", "--kubeconfig", str(control_plane.kubeconfig))


def test_a_deleted_running_job_is_named_with_its_state_and_age(repo, control_plane):
    repo.remove("jobs/bert.yaml")

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert (job["state"], job["hazards"]) == ("Running", ["kills-run"])
    # Running since 3h12m before the fixture's write (the age as status says it): a minute more if the machine is slow
    assert re.search(r"kills bert, Running for 3h1[23]m\b", job["summary"]), job["summary"]
    assert "compiled from" not in job["summary"]  # the cluster's job carries this spec's source


def test_a_deleted_finished_job_kills_no_run(repo, control_plane):
    repo.remove("jobs/done.yaml")

    job = job_of(_live(repo, control_plane), "done", env="prod")

    assert (job["state"], job["hazards"]) == ("Succeeded", [])
    assert "done has finished (Succeeded for 2h): no run is killed" in job["summary"]


def test_an_edit_of_a_finished_job_changes_nothing_that_runs(repo, control_plane):
    repo.edit("jobs/done.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    job = job_of(_live(repo, control_plane), "done", env="prod")

    assert (job["state"], job["hazards"]) == ("Succeeded", ["ignored-until-next-run"])
    assert "it has finished (Succeeded): the change is stored and changes nothing that runs" in job["summary"]


def test_an_edit_of_a_running_job_keeps_its_hazard(repo, control_plane):
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert (job["state"], job["hazards"]) == ("Running", ["mixed-run"])


def test_resuming_a_suspended_job_restarts_it_and_suspending_a_finished_one_does_nothing(repo, control_plane):
    repo.edit("jobs/paused.yaml", lambda docs: docs[0]["spec"].pop("policy"))
    repo.edit("jobs/done.yaml", lambda docs: docs[0]["spec"].__setitem__("policy", {"suspend": True}))

    plan = _live(repo, control_plane)

    assert job_of(plan, "paused", env="prod")["hazards"] == ["restarts-run"]
    done = job_of(plan, "done", env="prod")
    assert done["hazards"] == ["ignored-until-next-run"]


def test_a_job_the_cluster_does_not_have_is_absent_and_its_edit_is_no_mixed_run(repo, control_plane, namespace):
    control_plane.kubectl("delete", "pytorchjob", "bert", "-n", namespace)
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    plan = _live(repo, control_plane)

    job = job_of(plan, "bert", env="prod")
    assert (job["state"], job["hazards"]) == ("absent", [])
    assert plan["live"] is True
    assert {j["name"]: j["state"] for j in plan["environments"][0]["jobs"]} == {
        "bert": "absent", "done": "Succeeded", "paused": "Suspended"}


def test_a_live_job_compiled_from_another_spec_is_named(repo, control_plane, namespace):
    control_plane.kubectl("annotate", "--overwrite", "pytorchjob", "bert", "-n", namespace,
                          "trainforge.dev/source=teams/other/bert.yaml")
    repo.remove("jobs/bert.yaml")

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert "the cluster's bert was compiled from teams/other/bert.yaml, not from jobs/bert.yaml" in job["summary"]


def test_the_reader_only_reads(repo, control_plane):
    repo.remove("jobs/bert.yaml")
    before = len(control_plane.audit_events())

    _live(repo, control_plane)

    ours = [e for e in control_plane.audit_events()[before:] if e.get("userAgent", "").startswith("python-urllib3")]
    assert {(e["verb"], e["objectRef"]["resource"]) for e in ours} == {("list", "pytorchjobs")}
