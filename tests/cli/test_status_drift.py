"""`status` against git: drift put down to whoever made it (another field manager, or git
not synced yet), edits the cluster took that will not run (a finished job, a change held for
the next run: test_status_held.py), specs with no live job and live jobs whose spec is gone,
and the exit code a script reads for each."""

from __future__ import annotations

from typing import Any

from status_kit import apply, cli, fields_of, project, spec, train_controller, write

from testworld import stages


def drift_of(outcome: Any, name: str) -> list[tuple[str, Any, Any, str]]:
    entry = next(j for j in outcome.json["jobs"] if j["name"] == name)
    return [(d["path"], d["git"], d["cluster"], d["why"]) for d in entry["drift"]]




def test_a_field_another_manager_changed_is_drift_in_the_cluster_naming_that_manager(pod_world, pod_namespace,
                                                                                   tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "labelled.yaml", spec("labelled", extra={}) | {"metadata": {"name": "labelled",
                                                                           "labels": {"team": "nlp"}}})
    apply(pod_world, jobs)
    assert cli(pod_world, "status", jobs).code == 0
    pod_world.kubectl("label", "pytorchjob", "labelled", "-n", pod_namespace, "team=vision", "--overwrite")
    outcome = cli(pod_world, "status", jobs, "--format", "json")
    assert drift_of(outcome, "labelled") == [("metadata.labels.team", "nlp", "vision", "changed-in-cluster")]
    [entry] = next(j for j in outcome.json["jobs"] if j["name"] == "labelled")["drift"]
    assert entry["message"].startswith("changed in the cluster by kubectl-label (Update) at ")
    assert outcome.code == 4


def test_an_edit_not_synced_yet_is_drift_and_once_synced_it_is_held_for_the_next_run(pod_world, pod_namespace,
                                                                                      tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "bert.yaml", spec("bert", nodes=2, pod={stages.RUN_SECONDS: "forever"}))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2m").code == 0
        assert cli(pod_world, "status", jobs).code == 0
        write(jobs, "bert.yaml", spec("bert", nodes=2, image="example.com/train:2", pod={stages.RUN_SECONDS: "forever"}))
        image = "spec.pytorchReplicaSpecs.{}.template.spec.containers[0].image"
        outcome = cli(pod_world, "status", jobs, "--format", "json")
        assert drift_of(outcome, "bert") == [
            (image.format(rt), "example.com/train:2", "example.com/train:1", "not-synced") for rt in ("Master", "Worker")]
        assert fields_of(outcome, "bert") == [("spec.image", "example.com/train:2", "example.com/train:1", None,
                                              "not-synced")]
        assert outcome.code == 4
        apply(pod_world, jobs)  # the engine syncs: the job asks for :2, its run keeps :1 (train-controller's record)
        outcome = cli(pod_world, "status", jobs, "--format", "json")
        assert drift_of(outcome, "bert") == [
            (image.format(rt), "example.com/train:2", "example.com/train:2", "held") for rt in ("Master", "Worker")]
        assert fields_of(outcome, "bert") == [("spec.image", "example.com/train:2", "example.com/train:2",
                                              "example.com/train:1", "held")]
        assert outcome.code == 4


def test_an_edit_of_a_finished_job_will_not_run(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "done.yaml", spec("done", pod={stages.RUN_SECONDS: "1"}))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Succeeded", "--timeout", "2m").code == 0
        write(jobs, "done.yaml", spec("done", pod={stages.RUN_SECONDS: "1"}, extra={"args": ["--epochs", "9"]}))
        outcome = cli(pod_world, "status", jobs, "--format", "json")
        [(path, git, cluster, why)] = drift_of(outcome, "done")
        assert (path, git, cluster, why) == (
            "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].args", ["--epochs", "9"], None, "not-synced")
        [entry] = next(j for j in outcome.json["jobs"] if j["name"] == "done")["drift"]
        assert entry["message"].endswith("; the job is Succeeded, so it will not run")
        apply(pod_world, jobs)
        outcome = cli(pod_world, "status", jobs, "--format", "json")
        assert [d[3] for d in drift_of(outcome, "done")] == ["will-not-run"]
        [entry] = next(j for j in outcome.json["jobs"] if j["name"] == "done")["drift"]
        assert " after it finished (Succeeded) at " in entry["message"]
        assert entry["message"].endswith(": the edit will not run; delete the job to run it again")


def test_a_spec_without_a_live_job_and_live_jobs_whose_spec_is_gone(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "a.yaml", spec("a"))
    write(jobs, "b.yaml", spec("b"))
    apply(pod_world, jobs)
    assert cli(pod_world, "status", jobs).code == 0
    write(jobs, "a.yaml", spec("a2"))  # renamed in git, not synced
    (jobs / "b.yaml").unlink()  # removed from git
    outcome = cli(pod_world, "status", jobs, "--format", "json")
    assert [(j["name"], j["state"]) for j in outcome.json["jobs"]] == [("a2", "absent")]
    assert [(o["name"], o["source"], o["reason"]) for o in outcome.json["orphans"]] == [
        ("a", "jobs/a.yaml", "jobs/a.yaml no longer defines it"),
        ("b", "jobs/b.yaml", "jobs/b.yaml is no longer in git")]
    assert outcome.json["summary"] == {"jobs": 1, "running": 0, "absent": 1, "failed": 0, "stuck": 0, "drift": 0,
                                       "orphans": 2}
    assert outcome.code == 4
    text = cli(pod_world, "status", jobs)
    assert text.stdout.splitlines()[-3:] == [
        "live jobs whose spec is gone:",
        f"  {pod_namespace}/a  PyTorchJob  Created for " + text.stdout.splitlines()[-2].split(" for ")[1],
        f"  {pod_namespace}/b  PyTorchJob  Created for " + text.stdout.splitlines()[-1].split(" for ")[1]]


def test_a_live_job_outside_the_sources_given_is_not_an_orphan(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "a.yaml", spec("a"))
    write(jobs, "b.yaml", spec("b"))
    apply(pod_world, jobs)
    outcome = cli(pod_world, "status", jobs / "a.yaml", "--format", "json")
    assert outcome.json["orphans"] == [] and outcome.code == 0
