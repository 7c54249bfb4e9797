"""A Kueue queue on a kind Kueue does not manage is refused at review, with the way out.

Kueue v0.17 manages the kubeflow.org/v1 PyTorchJob, TFJob, XGBoostJob, PaddleJob and
JAXJob, but its MPIJob integration is the mpi-operator's kubeflow.org/v2beta1 MPIJob and
it has no MXJob integration: a queue label on a kubeflow.org/v1 MPIJob or MXJob is
ignored and the job runs at once, outside the queue's quota (tests/e2e/test_kueue_e2e.py
shows it with real Kueue). So the kubeflow-v1 target refuses such a queue at its field,
whether the job writes it or the environment's default fills it in, and names what does
work: the targets whose jobs Kueue manages (trainer-v2's TrainJobs; for MPI also the
mpi-operator target's v2beta1 MPIJob, which compiles a queued job with its queue label),
or no queue (`queue: null` opts a job out of an environment's default).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from foundation.frameworks import ADAPTERS
from compiler_builders import compile_docs, job_doc, job_text, project_doc, run_cli, write_docs

MANAGED = sorted(name for name, fw in ADAPTERS.items() if fw.facts.kueue_unmanaged is None)


def errors(folder, doc: dict[str, Any], **environment: Any) -> list[str]:
    project = project_doc(environments={"env": environment}) if environment else None
    result = compile_docs(folder, doc, project=project)
    return [d.text() for d in result.diagnostics if d.severity == "error"]


def test_kueue_manages_the_v1_kinds_it_has_an_integration_for():
    # the kinds of Kueue v0.17's kubeflow.org/v1 integrations (pkg/controller/jobs/kubeflow/jobs)
    assert MANAGED == ["jax", "paddle", "pytorch", "tensorflow", "xgboost"]


def test_a_queued_v1_mpi_job_is_refused_at_the_queue_with_the_targets_kueue_manages_as_the_fix(tmp_path):
    spec = tmp_path / "mpi.yaml"
    spec.write_text(job_text("""\
        nodes: 2
        resources: {gpu: 1}
        scheduling:
          queue: team-queue
        """, framework="mpi"))

    run = run_cli("build", spec, "-o", tmp_path / "out")

    assert run.exit_code == 1
    assert not (tmp_path / "out").exists()
    (error,) = run.errors()
    assert error.startswith(f"{spec}:11:12: error: spec.scheduling.queue: queue 'team-queue' would be ignored: "
                            "Kueue manages only the mpi-operator's kubeflow.org/v2beta1 MPIJob, so this "
                            "kubeflow.org/v1 MPIJob gets no Workload"), error
    assert error.endswith("; set environments.default.target: trainer-v2 or mpi-operator in trainforge.yaml (Kueue"
                          " manages their jobs), or remove scheduling.queue"), error


def test_a_queued_mpi_job_compiles_under_the_mpi_operator_target_with_its_queue_label(tmp_path):
    out = tmp_path / "out"
    write_docs(tmp_path / "src" / "trainforge.yaml", project_doc(defaults={"target": "mpi-operator"}))
    write_docs(tmp_path / "src" / "mpi.yaml", job_doc("mpi", nodes=2, scheduling={"queue": "team-queue"}))

    run = run_cli("build", tmp_path / "src", "-o", out)

    assert run.exit_code == 0, run.stderr
    job = yaml.safe_load((out / "default" / "default" / "demo" / "mpijob.yaml").read_text())
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    rendered = run_cli("render", tmp_path / "src")
    (mpijob,) = [d for d in yaml.safe_load_all(rendered.stdout) if d["kind"] == "MPIJob"]
    assert mpijob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "team-queue"


def test_an_mxnet_job_has_no_trainer_v2_way_out(tmp_path):
    (error,) = errors(tmp_path, job_doc("mxnet", scheduling={"queue": "team-queue"}))
    assert "Kueue v0.17 has no MXJob integration" in error and "MXJob gets no Workload" in error
    assert "trainer-v2" not in error and error.endswith("; remove scheduling.queue"), error


def test_an_environment_default_queue_is_refused_too_and_queue_null_opts_out(tmp_path):
    (error,) = errors(tmp_path / "default", job_doc("mpi"), scheduling={"queue": "env-queue"})
    assert "queue 'env-queue' (the default of environment 'env' in trainforge.yaml) would be ignored" in error
    assert error.endswith("or write scheduling.queue: null for environment 'env' to run it unqueued"), error

    opted_out = job_doc("mpi", scheduling={"queue": None})
    result = compile_docs(tmp_path / "null", opted_out, project=project_doc(
        environments={"env": {"scheduling": {"queue": "env-queue"}}}))
    assert not [d for d in result.diagnostics if d.severity == "error"]
    (job,) = [b.rendered_job() for b in result.bundles["env"]]
    assert "kueue.x-k8s.io/queue-name" not in (job["metadata"].get("labels") or {})


def test_queue_null_leaves_other_jobs_on_the_default_queue(tmp_path):
    result = compile_docs(tmp_path, job_doc("pytorch"), project=project_doc(
        environments={"env": {"scheduling": {"queue": "env-queue"}}}))
    (job,) = [b.rendered_job() for b in result.bundles["env"]]
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "env-queue"


@pytest.mark.parametrize("framework", MANAGED)
def test_a_queue_on_a_kind_kueue_manages_is_fine(tmp_path, framework):
    assert errors(tmp_path, job_doc(framework, scheduling={"queue": "team-queue"})) == []


def test_under_trainer_v2_a_queued_mpi_job_is_a_trainjob_kueue_manages(tmp_path):
    found = errors(tmp_path, job_doc("mpi", nodes=2, scheduling={"queue": "team-queue"}), target="trainer-v2")
    assert not [e for e in found if "queue" in e], found
