"""`train-compile plan` as a command: formats, exit codes, --fail-on and accepted hazards, and
bad input named, never a traceback (the contract's codes: 1 invalid input in the head or a
hazard --fail-on names, 2 a base git does not have or a source outside the repository; a base
with errors is planned, its errors listed)."""

from __future__ import annotations

import json
import subprocess

import pytest
from plan_kit import GIT_ENV, job_of, new_repo, project, running_job

from compiler_builders import run_cli
from compiler.plan.markdown import marker


@pytest.fixture
def renamed(tmp_path):
    """A repository whose head renames nlp/bert (kills-run, restarts-run) and scales nlp/gpt (mixed-run)."""
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.write("jobs/gpt.yaml", running_job("gpt"))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["metadata"].__setitem__("name", "bert-2"))
    repo.edit("jobs/gpt.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    return repo


def test_json_carries_the_contracts_keys(renamed):
    plan = renamed.plan()

    assert plan["base"] == "HEAD"
    (env,) = plan["environments"]
    assert set(env) >= {"name", "gpus", "jobs"}
    for job in env["jobs"]:
        assert set(job) >= {"namespace", "name", "kind", "change", "renamedFrom", "source", "line", "fields", "gpus",
                            "state", "hazards", "summary"}
        assert job["state"] == "unknown"  # offline
    assert job_of(plan, "bert-2", env="prod")["source"] == "jobs/bert.yaml"


def test_fail_on_a_hazard_that_occurs_exits_1_and_names_it(renamed):
    run = renamed.run("--fail-on", "kills-run,sync-refused")

    assert run.exit_code == 1
    # each environment, job and hazard, at the line a reviewer opens
    assert "--fail-on: kills-run would happen to nlp/bert-2 (from nlp/bert) in prod (jobs/bert.yaml:6)\n" in run.stderr
    assert "restarts-run" not in run.stderr.split("accept an intended one")[0]  # only what --fail-on names
    assert "train-compile plan of jobs against HEAD" in run.stdout  # the plan is printed all the same


def test_fail_on_a_hazard_that_does_not_occur_exits_0(renamed):
    assert renamed.run("--fail-on", "sync-refused,reruns-finished").exit_code == 0


def test_an_accepted_hazard_does_not_fail_and_is_marked(renamed):
    run = renamed.run("--fail-on", "kills-run,restarts-run", "--accept", "prod:nlp/bert-2=kills-run,restarts-run",
                      "--format", "json")

    assert run.exit_code == 0, run.stderr
    job = job_of(json.loads(run.stdout), "bert-2", env="prod")
    assert job["hazards"] == ["kills-run", "restarts-run"] and job["accepted"] == ["kills-run", "restarts-run"]


def test_a_commit_trailer_accepts_a_hazard_too(renamed):
    renamed.git("add", "-A")
    renamed.git("commit", "-q", "-m", "bert: a new run\n\nTrainforge-Accept: nlp/bert-2 kills-run,restarts-run")

    run = renamed.run("--fail-on", "kills-run,restarts-run", base="HEAD~1")

    assert run.exit_code == 0, run.stderr
    assert "kills-run (accepted), restarts-run (accepted)" in run.stdout


def test_an_accept_for_another_job_does_not_hide_a_hazard(renamed):
    assert renamed.run("--fail-on", "mixed-run", "--accept", "nlp/bert-2=mixed-run").exit_code == 1


@pytest.mark.parametrize(("args", "says"), [
    pytest.param(["--fail-on", "kills-runs"], "--fail-on names kills-runs, which is no hazard",
                 id="an unknown hazard word in --fail-on"),
    pytest.param(["--accept", "bert=kills-run"], "cannot read accept 'bert=kills-run'",
                 id="an accept without a namespace"),
    pytest.param(["--accept", "nlp/bert=kill"], "names 'kill', which is no hazard", id="an accept of no hazard"),
    pytest.param(["--env", "staging"], "unknown environment 'staging'", id="an environment the project lacks"),
])
def test_usage_errors_exit_2(renamed, args, says):
    run = renamed.run(*args)

    assert run.exit_code == 2
    assert says in run.stderr


def test_markdown_opens_with_the_marker_and_a_summary_table_with_details_folded(renamed):
    run = renamed.run("--format", "markdown")

    lines = run.stdout.splitlines()
    assert lines[0] == marker(["jobs"]) == "<!-- trainforge-plan: jobs -->"
    assert lines[1] == "### train-compile plan of `jobs` against `HEAD`"
    table = lines.index("| environment | changes | hazards | GPUs | GPU-hours added at most |")
    assert lines[table + 2].startswith("| prod | ~ 1 to update, ± 1 to rename | 1 kills-run, 1 restarts-run,"
                                       " 1 mixed-run | 32 -> 40")
    details = next(i for i, line in enumerate(lines) if line.startswith("<details><summary>prod"))
    assert details > table
    assert "- `spec.nodes` at `jobs/gpt.yaml:" in run.stdout


def test_github_annotations_stand_at_the_head_specs_line_of_each_hazard(renamed):
    run = renamed.run("--format", "github", "--fail-on", "mixed-run")

    lines = sorted(run.stdout.splitlines())
    assert lines[0].startswith("::error file=jobs/gpt.yaml,line=")  # --fail-on names mixed-run
    assert "title=plan prod%3A mixed-run::nlp/gpt: " in lines[0]
    assert lines[1].startswith("::warning file=jobs/bert.yaml,line=6,col=3,title=plan prod%3A kills-run%2C restarts-run")


def test_an_unknown_base_exits_2_naming_it(renamed):
    run = renamed.run(base="release-9")

    assert run.exit_code == 2
    assert "unknown base revision 'release-9' in " in run.stderr


def test_a_shallow_clone_without_the_base_says_to_fetch_it(renamed, tmp_path):
    renamed.commit("second")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{renamed.root}", str(clone)], check=True,
                   env={**GIT_ENV, "PATH": "/usr/bin:/bin"})

    run = run_cli("plan", clone / "jobs", "--base", "HEAD~1")

    assert run.exit_code == 2
    assert "the base 'HEAD~1' is not in this shallow clone" in run.stderr and "fetch-depth: 0" in run.stderr


def test_a_source_outside_a_repository_exits_2(tmp_path):
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "a.yaml").write_text("{}")

    run = run_cli("plan", tmp_path / "loose", "--base", "HEAD")

    assert run.exit_code == 2
    assert "is not inside a git repository" in run.stderr


def test_sources_in_two_repositories_exit_2(renamed, tmp_path):
    other = new_repo(tmp_path / "x")
    other.write("jobs/a.yaml", running_job("a"))
    other.commit()

    run = run_cli("plan", renamed.root / "jobs", other.root / "jobs", "--base", "HEAD")

    assert run.exit_code == 2
    assert "is outside the repository at" in run.stderr


def test_a_typo_in_the_head_is_a_positioned_error_exit_1(renamed):
    renamed.text("jobs/typo.yaml", "apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\n"
                                   "spec: {framework: pytorch, image: a, nodez: 2}\n")

    run = renamed.run()

    assert run.exit_code == 1
    assert "typo.yaml:4:38: error: spec.nodez: unknown field 'nodez'; did you mean 'nodes'?" in run.stderr
    assert "the working tree has errors; nothing was planned" in run.stderr
    assert run.stdout == ""


def test_a_base_with_errors_is_planned_with_its_errors_listed(tmp_path):
    """A pull request that fixes a broken main gets its plan: the base's file with errors is left
    out (its job compared with nothing), the rest of the base compared as usual."""
    repo = new_repo(tmp_path)
    repo.text("jobs/t.yaml", "apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\n"
                             "spec: {framework: pytorch, image: a, nodez: 2}\n")
    repo.write("jobs/keep.yaml", running_job("keep"))
    repo.commit()
    repo.write("jobs/t.yaml", running_job("t"))
    repo.edit("jobs/keep.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    run = repo.run("--format", "json")

    assert run.exit_code == 0, run.stderr
    plan = json.loads(run.stdout)
    (error,) = plan["baseErrors"]
    assert (error["file"], error["line"], error["col"]) == ("jobs/t.yaml", 4, 38)
    assert error["message"].startswith("HEAD:jobs/t.yaml:4:38: error: spec.nodez: unknown field 'nodez'")
    fixed = job_of(plan, "t")
    assert fixed["change"] == "create"
    assert "HEAD's spec had errors, so the job is compared with nothing" in fixed["summary"]
    assert job_of(plan, "keep")["hazards"] == ["mixed-run"]  # the rest of the base is compared as usual


def test_a_base_with_errors_is_annotated_at_its_files_path_not_at_the_revision(tmp_path):
    repo = new_repo(tmp_path)
    repo.text("jobs/t.yaml", "apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata: {name: t}\n"
                             "spec: {framework: pytorch, image: a, nodez: 2}\n")
    repo.commit()
    repo.git("branch", "base-broken")
    repo.write("jobs/t.yaml", running_job("t"))

    run = repo.run("--format", "github", base="base-broken")

    assert run.exit_code == 0, run.stderr
    (line,) = [l for l in run.stdout.splitlines() if "has errors" in l]
    assert line.startswith("::warning file=jobs/t.yaml,title=plan%3A the base base-broken has errors::"
                           "base-broken:jobs/t.yaml:4:38: error: spec.nodez")


def test_a_base_whose_project_file_has_errors_compares_every_job_with_nothing(tmp_path):
    repo = new_repo(tmp_path, project={"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project", "defaultz": {}})
    repo.write("jobs/a.yaml", running_job("a"))
    repo.commit()
    repo.write("jobs/trainforge.yaml", project())

    plan = repo.plan()

    assert [e["file"] for e in plan["baseErrors"]] == ["jobs/trainforge.yaml"]
    assert job_of(plan, "a")["change"] == "create"


def test_live_with_several_environments_needs_env(tmp_path):
    repo = new_repo(tmp_path, project=project(dev={}, prod={}))
    repo.write("jobs/a.yaml", running_job("a"))
    repo.commit()

    run = repo.run("--live")

    assert run.exit_code == 2
    assert "--live reads one cluster and the project has 2 environments (dev, prod); pass --env NAME" in run.stderr


def test_live_without_a_kubeconfig_exits_1_naming_it(renamed, tmp_path):
    run = renamed.run("--live", "--kubeconfig", str(tmp_path / "nope"))

    assert run.exit_code == 1
    assert f"plan --live: no kubeconfig at {tmp_path / 'nope'}" in run.stderr


def test_live_against_a_cluster_that_does_not_answer_exits_1_naming_it(renamed, tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))

    run = renamed.run("--live", "--kubeconfig", str(config))

    assert run.exit_code == 1
    assert run.stderr == ("train-compile: plan --live: cannot reach https://127.0.0.1:1: connection refused; is the "
                          "cluster up? check --kubeconfig/--context\n")
