"""`policy.ttlAfterFinished` in a tree a GitOps engine keeps syncing (issue 40 item 3).

Under kubeflow-v1 the operator deletes the finished job after its TTL and the engine's
next sync creates it again from git, so it runs again. The compiler says so at the
`ttlAfterFinished` line, with the fix, in every output format; a warning by default, an
error under the project policy `policy.ttlAfterFinished: error` (inherited by an
environment's own policy) or with `--strict`. The exact texts are pinned here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from compiler_builders import EXAMPLES, job_text, run_cli

WHAT = ("spec.policy.ttlAfterFinished: the finished job is deleted after its TTL and the GitOps engine creates it"
        " again from git, so it runs again: Flux at its next reconciliation (every interval), Argo CD at the next"
        " commit (within seconds with self-heal)")
FIX = ("remove ttlAfterFinished (cleanPods: All frees the pods and keeps the finished job; removing the spec from"
       " git deletes the job)")
TTL_JOB = job_text("policy: {backoffLimit: 3, ttlAfterFinished: 7d}\n")  # ttlAfterFinished at 8:29


def project(policy: str = "", environments: str = "") -> str:
    return ("apiVersion: trainforge.dev/v1alpha1\nkind: Project\n"
            + (f"policy: {policy}\n" if policy else "") + (f"environments:\n{environments}" if environments else ""))


def warnings_of(run) -> list[str]:
    return [line for line in run.stderr.splitlines() if ": warning: " in line]


def test_a_ttl_is_a_warning_at_its_line_and_the_job_still_compiles(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(TTL_JOB)

    run = run_cli("build", "job.yaml", "-o", "out")

    assert run.exit_code == 0, run.stderr
    assert warnings_of(run) == [f"job.yaml:8:29: warning: {WHAT}; {FIX}"]
    assert "ttlSecondsAfterFinished: 604800" in (tmp_path / "out/default/default/demo/pytorchjob.yaml").read_text()


def test_every_format_carries_the_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(TTL_JOB)
    what = WHAT.removeprefix("spec.policy.ttlAfterFinished: ")

    as_json = json.loads(run_cli("validate", "job.yaml", "--format", "json").stdout)
    github = run_cli("validate", "job.yaml", "--format", "github").stdout
    sarif = json.loads(run_cli("validate", "job.yaml", "--format", "sarif").stdout)

    assert as_json == [{"file": "job.yaml", "line": 8, "col": 29, "path": "spec.policy.ttlAfterFinished",
                        "message": what, "fix": FIX, "severity": "warning"}]
    assert github == ("::warning file=job.yaml,line=8,col=29,title=spec.policy.ttlAfterFinished::"
                      f"{what}; {FIX}\n")
    (result,) = sarif["runs"][0]["results"]
    assert result["level"] == "warning" and result["message"]["text"] == f"{WHAT}; {FIX}"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (8, 29)


@pytest.mark.parametrize("command", ["validate", "build", "check", "render"])
def test_strict_makes_the_warning_an_error_and_writes_nothing(tmp_path, monkeypatch, command):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(TTL_JOB)
    out = ["-o", "out"] if command in ("build", "check") else []

    run = run_cli(command, "job.yaml", *out, "--strict")

    assert run.exit_code == 1
    assert run.errors() == [f"job.yaml:8:29: error: {WHAT}; {FIX}"]
    assert not (tmp_path / "out").exists() and "apiVersion" not in run.stdout


def test_strict_leaves_a_job_without_warnings_alone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(job_text("policy: {cleanPods: All}\n"))

    run = run_cli("validate", "job.yaml", "--strict")

    assert run.exit_code == 0 and not warnings_of(run) and not run.errors(), run.stderr


def test_the_project_policy_makes_it_an_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(TTL_JOB)
    Path("trainforge.yaml").write_text(project("{ttlAfterFinished: error}"))

    run = run_cli("validate", ".")

    assert run.exit_code == 1
    assert run.errors() == [f"job.yaml:8:29: error: {WHAT}; {FIX}"]


def test_an_environments_own_policy_inherits_the_projects_severity_unless_it_sets_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(TTL_JOB)
    Path("trainforge.yaml").write_text(project("{ttlAfterFinished: error}", environments=(
        "  strict: {policy: {maxGpusPerJob: 8}}\n  lenient: {policy: {ttlAfterFinished: warning}}\n")))

    run = run_cli("validate", ".")

    assert run.exit_code == 1
    assert run.errors() == [f"job.yaml:8:29: error: {WHAT}; {FIX}"]  # strict (the lenient one: a warning)
    assert warnings_of(run) == [f"job.yaml:8:29: warning: {WHAT}; {FIX}"]


def test_an_environment_override_is_reported_where_it_sets_the_ttl(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(job_text("environments:\n  dev: {policy: {ttlAfterFinished: 1h}}\n"))
    Path("trainforge.yaml").write_text(project(environments="  dev: {}\n  prod: {}\n"))

    run = run_cli("validate", ".")

    assert warnings_of(run) == [f"job.yaml:9:20: warning: {WHAT.replace('spec.', 'spec.environments.dev.')}; {FIX}"]


def test_a_ttl_under_trainer_v2_stays_an_error_of_its_own(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("job.yaml").write_text(TTL_JOB.replace("backoffLimit: 3, ", ""))
    Path("trainforge.yaml").write_text(project(environments="  prod: {target: trainer-v2}\n"))

    run = run_cli("validate", ".")

    assert not warnings_of(run)
    (error,) = run.errors()
    assert error.startswith("job.yaml:8:12: error: spec.policy.ttlAfterFinished: a Trainer v2 TrainJob cannot set"
                            " ttlAfterFinished: TTL is the runtime's JobSet ttlSecondsAfterFinished;"), error


def test_no_shipped_example_sets_a_ttl_and_none_warns():
    run = run_cli("validate", *sorted(EXAMPLES.glob("*.yaml")))
    projects = [run_cli("validate", folder) for folder in sorted(EXAMPLES.iterdir()) if folder.is_dir()]

    for done in (run, *projects):
        assert done.exit_code == 0 and not warnings_of(done), done.stderr
    specs = [doc for p in EXAMPLES.rglob("*.yaml") for doc in yaml.safe_load_all(p.read_text()) if doc]
    policies = [doc["spec"].get("policy") or {} for doc in specs if doc.get("kind") == "TrainJob"]
    policies += [(env or {}).get("policy") or {} for doc in specs if doc.get("kind") == "TrainJob"
                 for env in (doc["spec"].get("environments") or {}).values()]  # env: null leaves the environment
    assert len(policies) > 20 and not [p for p in policies if "ttlAfterFinished" in p]
