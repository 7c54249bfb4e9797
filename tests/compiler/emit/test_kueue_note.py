"""Kueue v0.19 beside v0.17: the one line under `build`'s table that names the integrations queued jobs need.

From v0.19 Kueue's shipped configuration no longer enables the kubeflow.org/v1 kinds
(`integrations.frameworks` keeps the mpi-operator's MPIJob and Trainer's TrainJob), so a
build that queues a PyTorchJob says, once, which entries to add; a build whose queued jobs
Kueue v0.19 manages as shipped says nothing. And nothing trainforge
writes names the `kueue.x-k8s.io/v1beta1` API that Kueue v0.20 stops serving.
"""

from __future__ import annotations

import pytest

from compiler_builders import REPO, example_sets, job_doc, project_doc, run_cli, write_docs


def kueue_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  Kueue: ")]


def test_queued_v1_jobs_of_two_kinds_get_one_line_under_the_build_table_naming_both(tmp_path):
    write_docs(tmp_path / "src" / "a.yaml", job_doc("pytorch", name="bert", scheduling={"queue": "nlp"}))
    write_docs(tmp_path / "src" / "b.yaml", job_doc("tensorflow", name="rec", scheduling={"queue": "nlp"}),
               job_doc("pytorch", name="gpt", scheduling={"queue": "nlp"}))

    run = run_cli("build", tmp_path / "src", "-o", tmp_path / "out")

    assert run.exit_code == 0, run.stderr
    assert run.stderr.splitlines()[-1] == (
        '  Kueue: queued kubeflow.org/v1 PyTorchJob, kubeflow.org/v1 TFJob jobs need "kubeflow.org/pytorchjob",'
        ' "kubeflow.org/tfjob" in its integrations.frameworks: v0.17\'s shipped configuration has them, v0.19\'s no'
        " longer does, and without them they run at once, outside the queue's quota (docs/gitops.md, Kueue per"
        " version)")
    assert run.notices() == [] and len(kueue_lines(run.stderr)) == 1  # a line, not a diagnostic per job


def test_an_environments_default_queue_counts_and_validate_says_nothing(tmp_path):
    write_docs(tmp_path / "src" / "trainforge.yaml", project_doc(environments={"dev": {"scheduling": {"queue": "dev"}}}))
    write_docs(tmp_path / "src" / "job.yaml", job_doc("xgboost", name="fraud"))

    build = run_cli("build", tmp_path / "src", "-o", tmp_path / "out")
    validate = run_cli("validate", tmp_path / "src")

    (line,) = kueue_lines(build.stderr)
    assert '"kubeflow.org/xgboostjob"' in line
    assert kueue_lines(validate.stderr) == []


@pytest.mark.parametrize(("target", "framework", "queue"), [
    pytest.param("mpi-operator", "mpi", "hpc", id="the mpi-operator's MPIJob is in v0.19's default list"),
    pytest.param("trainer-v2", "pytorch", "nlp", id="a TrainJob is in v0.19's default list"),
    pytest.param("kubeflow-v1", "pytorch", None, id="a job without a queue is none of Kueue's business"),
])
def test_no_line_where_kueue_v019_manages_the_queued_jobs_as_shipped(tmp_path, target, framework, queue):
    write_docs(tmp_path / "src" / "trainforge.yaml", project_doc(defaults={"target": target}))
    write_docs(tmp_path / "src" / "job.yaml", job_doc(framework, scheduling={"queue": queue} if queue else {}))

    run = run_cli("build", tmp_path / "src", "-o", tmp_path / "out")

    assert run.exit_code == 0 and kueue_lines(run.stderr) == [], run.stderr


def test_nothing_trainforge_writes_names_kueue_v1beta1(tmp_path):
    """Kueue v0.20 stops serving kueue.x-k8s.io/v1beta1: no compiled tree, engine object or doc uses it."""
    written = []
    for i, (_, paths) in enumerate(example_sets()):
        out = tmp_path / f"out{i}"
        assert run_cli("build", *paths, "-o", out).exit_code == 0
        written += [p.read_text() for p in out.rglob("*.yaml")]
        for engine in (("argocd", "--repo-url", "https://git.example/r.git", "--path", "deploy"),
                       ("flux", "--path", "deploy")):
            engine_out = tmp_path / f"{engine[0]}{i}"
            run = run_cli(engine[0], *paths, *engine[1:], "-o", engine_out)
            assert run.exit_code == 0, run.stderr
            written += [p.read_text() for p in engine_out.rglob("*.yaml")]
    written += [p.read_text() for p in (REPO / "docs").glob("*.md")]

    assert len(written) > 50
    assert not [text for text in written if "kueue.x-k8s.io/v1beta1" in text]
