"""Accepting an intended hazard: patterns that scale, and mistakes that warn instead of blocking.

`--accept` and `Trainforge-Accept:` trailers take `[ENV:]NAMESPACE/NAME=HAZARD[,HAZARD]` with
shell wildcards, so one line accepts a change across a team's jobs. An accept that matches no
hazard of the plan is a warning (stderr, and the comment, where the reviewer looks); a trailer
that cannot be read is a warning naming its commit and the fix, and the plan goes on: a
branch is never stuck on a commit message.
"""

from __future__ import annotations

import json

import pytest
from plan_kit import job_of, new_repo, project, running_job


@pytest.fixture
def scaled(tmp_path):
    """Three jobs of nlp and one of cv in dev and prod, every one scaled (mixed-run everywhere)."""
    repo = new_repo(tmp_path, project=project(dev={}, prod={}))
    for name, namespace in (("a", "nlp"), ("b", "nlp"), ("c", "nlp"), ("d", "cv")):
        doc = running_job(name)
        doc["metadata"]["namespace"] = namespace
        repo.write(f"jobs/{name}.yaml", doc)
    repo.commit()
    for name in "abcd":
        repo.edit(f"jobs/{name}.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    return repo


def _accepted(plan: dict) -> dict[str, list[str]]:
    return {f"{env['name']}:{job['namespace']}/{job['name']}": job["accepted"]
            for env in plan["environments"] for job in env["jobs"]}


@pytest.mark.parametrize(("pattern", "accepted"), [
    pytest.param("prod:nlp/*=mixed-run", {"prod:nlp/a", "prod:nlp/b", "prod:nlp/c"},
                 id="ENV:NS/* accepts a namespace in one environment"),
    pytest.param("nlp/b=mixed-run", {"dev:nlp/b", "prod:nlp/b"}, id="NS/NAME accepts a job in every environment"),
    pytest.param("*/[ad]=mixed-run", {"dev:nlp/a", "prod:nlp/a", "dev:cv/d", "prod:cv/d"},
                 id="wildcards in the namespace and the name"),
    pytest.param("p*:*/*=mixed-run", {"prod:nlp/a", "prod:nlp/b", "prod:nlp/c", "prod:cv/d"},
                 id="a wildcard in the environment"),
])
def test_accept_patterns(scaled, pattern, accepted):
    plan = scaled.plan("--accept", pattern)

    assert {k for k, v in _accepted(plan).items() if v} == accepted
    assert plan["notices"] == []


def test_one_wildcard_accept_lets_fail_on_pass(scaled):
    run = scaled.run("--fail-on", "mixed-run", "--accept", "*/*=mixed-run")

    assert run.exit_code == 0, run.stderr


def test_fail_on_names_each_environment_job_and_hazard_not_accepted(scaled):
    run = scaled.run("--fail-on", "mixed-run", "--accept", "prod:nlp/*=mixed-run")

    assert run.exit_code == 1
    failing = [line for line in run.stderr.splitlines() if "would happen" in line]
    assert failing == [
        f"train-compile: plan: --fail-on: mixed-run would happen to {job} in {env} (jobs/{job[-1]}.yaml:12)"
        for env, job in (("dev", "nlp/a"), ("dev", "nlp/b"), ("dev", "nlp/c"), ("dev", "cv/d"), ("prod", "cv/d"))]


def test_an_accept_that_matches_nothing_is_a_warning(scaled):
    run = scaled.run("--accept", "nlp/bert=mixed-run", "--accept", "staging:nlp/*=mixed-run",
                     "--accept", "nlp/a=kills-run", "--format", "markdown")

    assert run.exit_code == 0
    warnings = [line for line in run.stderr.splitlines() if line.startswith("train-compile: plan: warning: ")]
    assert warnings == [
        "train-compile: plan: warning: --accept 'nlp/bert=mixed-run' matches no hazard of this plan: no job matching"
        " nlp/bert in any environment has mixed-run; check the job's name and environment",
        "train-compile: plan: warning: --accept 'staging:nlp/*=mixed-run' matches no hazard of this plan: no job"
        " matching nlp/* in an environment matching staging has mixed-run; check the job's name and environment",
        "train-compile: plan: warning: --accept 'nlp/a=kills-run' matches no hazard of this plan: no job matching"
        " nlp/a in any environment has kills-run; check the job's name and environment"]
    assert "**Warnings:**" in run.stdout and "- --accept 'nlp/bert=mixed-run' matches no hazard" in run.stdout


def test_a_trailer_with_a_wildcard_accepts_like_an_option(scaled):
    scaled.git("add", "-A")
    scaled.git("commit", "-q", "-m", "scale nlp\n\nTrainforge-Accept: prod:nlp/* mixed-run")

    plan = scaled.plan(base="HEAD~1")

    assert _accepted(plan)["prod:nlp/c"] == ["mixed-run"] and _accepted(plan)["dev:nlp/c"] == []


def test_a_mistyped_trailer_is_a_warning_naming_its_commit_and_the_plan_goes_on(scaled):
    scaled.git("add", "-A")
    scaled.git("commit", "-q", "-m", "scale nlp\n\nTrainforge-Accept: nlp/a mixed-runs")
    bad = scaled.git("rev-parse", "HEAD")[:12]

    run = scaled.run("--fail-on", "sync-refused", "--format", "json", base="HEAD~1")

    assert run.exit_code == 0, run.stderr
    (notice,) = json.loads(run.stdout)["notices"]
    assert notice.startswith(f"the Trainforge-Accept trailer of commit {bad} ('scale nlp') is ignored: accept"
                             " 'nlp/a mixed-runs' names 'mixed-runs', which is no hazard; did you mean 'mixed-run'?")
    assert "add a commit with the trailer written right" in notice and "need not be rewritten" in notice
    assert f"warning: the Trainforge-Accept trailer of commit {bad}" in run.stderr


def test_the_fix_the_warning_gives_works_without_rewriting_history(scaled):
    scaled.git("add", "-A")
    scaled.git("commit", "-q", "-m", "scale\n\nTrainforge-Accept: */* mixed-runs")
    scaled.git("commit", "-q", "--allow-empty", "-m", "accept", "--trailer", "Trainforge-Accept: */* mixed-run")

    run = scaled.run("--fail-on", "mixed-run", "--format", "json", base="HEAD~2")

    assert run.exit_code == 0, run.stderr
    assert len(json.loads(run.stdout)["notices"]) == 1  # the old trailer still warns; it blocks nothing


def test_a_mistyped_accept_option_is_a_usage_error_with_a_did_you_mean(scaled):
    run = scaled.run("--accept", "nlp/a=kills-runs")

    assert run.exit_code == 2
    assert "names 'kills-runs', which is no hazard; did you mean 'kills-run'?" in run.stderr


def test_an_accepted_hazard_leads_after_the_open_ones(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/a.yaml", running_job("a"))
    repo.write("jobs/b.yaml", running_job("b"))
    repo.commit()
    repo.remove("jobs/a.yaml")
    repo.edit("jobs/b.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    first = repo.run("--accept", "nlp/a=kills-run").stdout.splitlines()[1]

    assert first == ("Merging this mixes pods of two specs in the run of nlp/b in default; kills nlp/a in default"
                     " (accepted).")
    assert job_of(repo.plan("--accept", "nlp/a=kills-run"), "a")["accepted"] == ["kills-run"]
