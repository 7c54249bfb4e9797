"""The mpi-operator target: what an MPI spec becomes in the mpi-operator's `kubeflow.org/v2beta1` MPIJob.

Semantic facts first (the launcher and worker shapes the mpi-operator expects, `spec.mpi`,
slots, the run policy, gang scheduling left to the operator), each compiled job validated
and prune-checked against the v0.8.0 CRD; then the positioned errors, with exact texts, for
what the target cannot carry. Jobs compile through the real pipeline from a project whose
`prod` environment targets mpi-operator (and `dev` stays on kubeflow-v1).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from testworld.paths import MPI_OPERATOR_CRD

from compiler_builders import compile_docs, job_doc, job_errors, job_text, project_doc, pruned_fields, run_cli


def project(*, dev: bool = False, **prod: Any) -> dict[str, Any]:
    """prod on mpi-operator with `prod` settings, and (`dev`) a dev environment on kubeflow-v1."""
    return project_doc(environments={**({"dev": {}} if dev else {}), "prod": {"target": "mpi-operator", **prod}})


@functools.cache
def crd_schema() -> dict[str, Any]:
    crd = yaml.load(MPI_OPERATOR_CRD.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    (version,) = [v for v in crd["spec"]["versions"] if v["served"]]
    assert version["name"] == "v2beta1"
    return version["schema"]["openAPIV3Schema"]


def prod_job(folder: Path, doc: dict[str, Any], **prod: Any) -> dict[str, Any]:
    """The rendered MPIJob of `doc` in prod, checked against the CRD; fails on any error."""
    result = compile_docs(folder, doc, project=project(**prod))
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    (bundle,) = result.bundles["prod"]
    job = bundle.rendered_job()
    jsonschema.validate(job, crd_schema(), cls=jsonschema.Draft7Validator)
    assert list(pruned_fields(job, crd_schema())) == []
    return job


def replica(job: dict[str, Any], rtype: str) -> dict[str, Any]:
    return job["spec"]["mpiReplicaSpecs"][rtype]


def container(job: dict[str, Any], rtype: str) -> dict[str, Any]:
    (only,) = replica(job, rtype)["template"]["spec"]["containers"]
    return only


# --- what the MPIJob says ----------------------------------------------------------------


def test_the_same_file_is_a_v1_mpijob_in_dev_and_a_v2beta1_mpijob_in_prod(tmp_path):
    result = compile_docs(tmp_path, job_doc("mpi", nodes=2), project=project(dev=True))

    assert [b.job["apiVersion"] for b in result.bundles["dev"]] == ["kubeflow.org/v1"]
    assert [(b.job["apiVersion"], b.kind) for b in result.bundles["prod"]] == [("kubeflow.org/v2beta1", "MPIJob")]


def test_the_launcher_runs_the_program_and_the_workers_get_no_command_so_the_operator_starts_sshd(tmp_path):
    job = prod_job(tmp_path, job_doc("mpi", nodes=3, command=["mpirun", "-n", "3", "/app/pi"],
                                     resources={"gpu": 2, "cpu": "4", "memory": "8Gi"}))

    assert replica(job, "Launcher")["replicas"] == 1 and replica(job, "Worker")["replicas"] == 3
    assert container(job, "Launcher")["command"] == ["mpirun", "-n", "3", "/app/pi"]
    assert "command" not in container(job, "Worker") and "args" not in container(job, "Worker")
    assert "resources" not in container(job, "Launcher")  # no GPUs for the launcher
    assert container(job, "Worker")["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert job["spec"]["slotsPerWorker"] == 2  # processesPerNode auto: the GPUs per node


def test_spec_mpi_becomes_the_mpijobs_own_fields_and_nothing_is_written_unset(tmp_path):
    plain = prod_job(tmp_path / "plain", job_doc("mpi"))
    assert set(plain["spec"]) == {"slotsPerWorker", "mpiReplicaSpecs", "runPolicy"}  # the operator's defaults apply
    # but for cleanPodPolicy: the operator's None leaves the sshd workers running after the job
    assert plain["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}
    kept = prod_job(tmp_path / "kept", job_doc("mpi", policy={"cleanPods": "None"}))
    assert kept["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}

    job = prod_job(tmp_path / "set", job_doc("mpi", processesPerNode=4, mpi={
        "implementation": "MPICH", "sshAuthMountPath": "/home/mpiuser/.ssh",
        "launcherCreationPolicy": "WaitForWorkersReady", "runLauncherAsWorker": False}))
    assert {k: v for k, v in job["spec"].items() if k not in ("mpiReplicaSpecs", "runPolicy")} == {
        "mpiImplementation": "MPICH", "sshAuthMountPath": "/home/mpiuser/.ssh",
        "launcherCreationPolicy": "WaitForWorkersReady", "runLauncherAsWorker": False, "slotsPerWorker": 4}


def test_with_run_launcher_as_worker_the_launcher_is_one_of_the_nodes(tmp_path):
    job = prod_job(tmp_path / "three", job_doc("mpi", nodes=3, command=["mpirun", "hostname"],
                                               resources={"gpu": 1}, mpi={"runLauncherAsWorker": True}))
    assert replica(job, "Worker")["replicas"] == 2
    assert container(job, "Launcher")["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container(job, "Launcher")["command"] == ["mpirun", "hostname"]

    one = prod_job(tmp_path / "one", job_doc("mpi", nodes=1, mpi={"runLauncherAsWorker": True}))
    # the operator refuses Worker replicas 0 ("must be greater than or equal to 1"): no Worker at all
    assert list(one["spec"]["mpiReplicaSpecs"]) == ["Launcher"]


def test_the_run_policy_and_restart_policy_are_written_as_the_operator_reads_them(tmp_path):
    job = prod_job(tmp_path, job_doc("mpi", policy={
        "restart": "OnFailure", "backoffLimit": 3, "activeDeadline": "2h", "cleanPods": "All", "suspend": True}))

    assert job["spec"]["runPolicy"] == {"backoffLimit": 3, "activeDeadlineSeconds": 7200, "cleanPodPolicy": "All",
                                        "suspend": True}
    assert {replica(job, rt)["restartPolicy"] for rt in ("Launcher", "Worker")} == {"OnFailure"}


def test_gang_scheduling_writes_the_scheduling_policy_and_leaves_the_podgroup_to_the_operator(tmp_path):
    result = compile_docs(tmp_path, job_doc("mpi", nodes=2, resources={"cpu": "2"},
                                            scheduling={"gang": {"scheduler": "volcano", "timeoutSeconds": 60},
                                                        "priority": "high"}), project=project(dev=True))
    (bundle,) = result.bundles["prod"]
    job = bundle.rendered_job()

    assert job["spec"]["runPolicy"]["schedulingPolicy"] == {
        "minAvailable": 3, "minResources": {"cpu": "4"}, "priorityClass": "high", "scheduleTimeoutSeconds": 60}
    objects = [o for c in bundle.components for o in c.resources]
    assert [o["kind"] for o in objects if o["kind"] == "PodGroup"] == []  # the operator refuses one it does not own
    worker = replica(job, "Worker")["template"]
    assert "schedulerName" not in worker["spec"] and "annotations" not in worker.get("metadata", {})
    # dev (kubeflow-v1) keeps its PodGroup in git
    assert "PodGroup" in [o["kind"] for b in result.bundles["dev"] for c in b.components for o in c.resources]


def test_a_queued_job_carries_the_queue_label_and_a_shm_volume_fits_the_crd(tmp_path):
    job = prod_job(tmp_path, job_doc("mpi", resources={"gpu": 1, "sharedMemory": "1Gi"},
                                     scheduling={"queue": "hpc"}))

    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "hpc"
    assert replica(job, "Worker")["template"]["spec"]["volumes"][0]["emptyDir"]["medium"] == "Memory"


# --- what it cannot carry ------------------------------------------------------------------


def errors_of(tmp_path: Path, spec: str, *, framework: str = "mpi", **prod: Any) -> list[str]:
    return job_errors(tmp_path, project(**prod), spec, framework=framework)


RESTRICTED_READY = "podTemplate: {spec: {securityContext: {runAsNonRoot: true, runAsUser: 1000}}}\n"
BAD = [
    pytest.param(
        "", "pytorch", {},
        ["6:3: spec.framework: environment 'prod' targets mpi-operator, whose kubeflow.org/v2beta1 MPIJob runs"
         " framework mpi only, not pytorch; pytorch compiles for target kubeflow-v1, trainer-v2: set"
         " environments.prod.target to it in trainforge.yaml"],
        id="a pytorch job in an mpi-operator environment is refused at its framework"),
    pytest.param(
        "policy: {restart: ExitCode}\n", "mpi", {},
        ["8:12: spec.policy.restart: the mpi-operator admits only Never and OnFailure as a replica's restartPolicy: it"
         " refuses an MPIJob with ExitCode (a ValidationError Event) and never starts it; write OnFailure (a failed"
         " container restarts in its pod) or Never, or remove restart (the launcher OnFailure, the workers Never)"],
        id="restart ExitCode, which the operator's validation refuses, is an error"),
    pytest.param(
        "policy: {restartScope: job, backoffLimit: 2}\n", "mpi", {},
        ["8:12: spec.policy.restartScope: the mpi-operator restarts only the launcher (its Job retries the launcher"
         " pod up to backoffLimit) and never makes a failed worker again, so it cannot restart the whole job; remove"
         " it, or unset it for this environment with environments.prod.policy.restartScope: null; backoffLimit"
         " counts the launcher's retries"],
        id="whole-job restarts are an error"),
    pytest.param(
        "roles:\n  worker: {restart: ExitCode}\n", "mpi", {},
        ["9:14: spec.roles.worker.restart: the mpi-operator admits only Never and OnFailure as a replica's"
         " restartPolicy: it refuses an MPIJob with ExitCode (a ValidationError Event) and never starts it; write"
         " OnFailure (a failed container restarts in its pod) or Never, or remove restart (the launcher OnFailure,"
         " the workers Never)"],
        id="a role's own restart ExitCode is an error at the role"),
    pytest.param(
        RESTRICTED_READY, "mpi", {"policy": {"podSecurity": "restricted", "podSecurityDefaults": True}},
        ["6:3: spec.framework: under policy.podSecurity: restricted the pods run as a non-root user, and the"
         " mpi-operator mounts the SSH keys at /root/.ssh (root's, mode 0600), which that user cannot read: mpirun"
         " could not reach the workers; set mpi.sshAuthMountPath to that user's ~/.ssh (e.g. /home/mpiuser/.ssh, as"
         " the mpi-operator's base images have) and start the workers' sshd as that user on a port above 1024 (roles.worker.command,"
         " e.g. [/usr/sbin/sshd, -De, -f, /home/mpiuser/.sshd_config]); or ask for policy.podSecurity: baseline"],
        id="root's SSH keys under restricted are an error at the framework when mpi does not say where"),
    pytest.param(
        "mpi: {sshAuthMountPath: /root/.ssh/}\n" + RESTRICTED_READY, "mpi",
        {"policy": {"podSecurity": "restricted", "podSecurityDefaults": True}},
        ["8:9: spec.mpi.sshAuthMountPath: under policy.podSecurity: restricted the pods run as a non-root user, and"
         " the mpi-operator mounts the SSH keys at /root/.ssh (root's, mode 0600), which that user cannot read:"
         " mpirun could not reach the workers; set mpi.sshAuthMountPath to that user's ~/.ssh (e.g."
         " /home/mpiuser/.ssh, as the mpi-operator's base images have) and start the workers' sshd as that user on a"
         " port above 1024 (roles.worker.command, e.g. [/usr/sbin/sshd, -De, -f, /home/mpiuser/.sshd_config]); or ask for"
         " policy.podSecurity: baseline"],
        id="root's SSH key path written under restricted is an error at the path"),


    pytest.param(
        "", "mpi", {"policy": {"podSecurityDefaults": True}},
        ["6:3: spec.framework: the workers' sshd runs as root (the SSH keys at /root/.ssh) and needs NET_BIND_SERVICE,"
         " SETGID, SETUID, SYS_CHROOT (privilege separation, port 22), which the workers' container drops (drop: [ALL]"
         " is what policy.podSecurityDefaults writes where a container sets no capabilities); set mpi.sshAuthMountPath"
         " to that user's ~/.ssh (e.g. /home/mpiuser/.ssh, as the mpi-operator's base images have) and start the"
         " workers' sshd as that user on a port above 1024 (roles.worker.command, e.g. [/usr/sbin/sshd, -De, -f,"
         " /home/mpiuser/.sshd_config]); or keep those capabilities (podTemplate capabilities.add, which baseline"
         " allows), or set policy.podSecurityDefaults: false for this environment"],
        id="root's sshd without the default capabilities (podSecurityDefaults at baseline) is an error"),
    pytest.param(
        "podTemplate: {spec: {securityContext: {runAsUser: 1000}}}\n", "mpi", {},
        ["6:3: spec.framework: the pods run as a non-root user (podTemplate's runAsNonRoot or runAsUser), and the"
         " mpi-operator mounts the SSH keys at /root/.ssh (root's, mode 0600), which that user cannot read: mpirun"
         " could not reach the workers; set mpi.sshAuthMountPath to that user's ~/.ssh (e.g. /home/mpiuser/.ssh, as"
         " the mpi-operator's base images have) and start the workers' sshd as that user on a port above 1024 (roles.worker.command,"
         " e.g. [/usr/sbin/sshd, -De, -f, /home/mpiuser/.sshd_config]); or let the workers run as root"],
        id="a non-root user with root's SSH keys is an error at baseline too"),
]
OK = [
    pytest.param("podTemplate: {spec: {containers: [{name: mpi, securityContext: {capabilities: {drop: [ALL], add:"
                 " [NET_BIND_SERVICE, SETGID, SETUID, SYS_CHROOT]}}}]}}\n", {"policy": {"podSecurityDefaults": True}},
                 id="root's sshd with its capabilities added back is fine"),
    pytest.param("mpi: {sshAuthMountPath: /home/mpiuser/.ssh}\n", {"policy": {"podSecurityDefaults": True}},
                 id="a user's own key path under podSecurityDefaults is fine"),
    pytest.param("mpi: {runLauncherAsWorker: true}\n", {"policy": {"podSecurityDefaults": True}},
                 id="a launcher alone (one node, runLauncherAsWorker) runs no sshd"),
]


@pytest.mark.parametrize(("spec", "prod"), OK)
def test_what_sshd_can_run_with_is_not_refused(tmp_path, spec, prod):
    assert errors_of(tmp_path, spec, **prod) == []


@pytest.mark.parametrize(("spec", "framework", "prod", "expected"), BAD)
def test_what_the_mpi_operator_cannot_carry_is_a_positioned_error_with_a_fix(tmp_path, spec, framework, prod,
                                                                              expected):
    assert errors_of(tmp_path, spec, framework=framework, **prod) == expected


def test_spec_mpi_outside_the_mpi_operator_target_is_an_error_that_names_it(tmp_path):
    (tmp_path / "trainforge.yaml").write_text(yaml.safe_dump(project_doc(environments={"dev": {}})))
    (tmp_path / "job.yaml").write_text(job_text("mpi: {implementation: Intel}\n", framework="mpi"))
    (tmp_path / "torch.yaml").write_text(job_text("mpi: {implementation: Intel}\n", name="torch"))

    run = run_cli("validate", tmp_path)

    assert [line.split(": error: ", 1)[1] for line in run.errors()] == [
        "spec.mpi: mpi sets the mpi-operator target's job, and environment 'dev' targets kubeflow-v1; set"
        " environments.dev.target: mpi-operator in trainforge.yaml, or remove mpi (or unset it for this environment"
        " with environments.dev.mpi: null)",
        "spec.mpi: mpi sets the mpi-operator target's job, which runs framework mpi only, not pytorch; remove mpi",
    ]
    assert run.exit_code == 1


def test_an_environments_controller_under_the_mpi_operator_is_an_error(tmp_path):
    (tmp_path / "trainforge.yaml").write_text(
        "apiVersion: trainforge.dev/v1alpha1\nkind: Project\nenvironments:\n  prod:\n    target: mpi-operator\n"
        "    controller: train-controller\n")
    (tmp_path / "job.yaml").write_text(job_text(framework="mpi"))

    run = run_cli("validate", tmp_path)

    assert [line.split(": error: ", 1) for line in run.errors()] == [[
        f"{tmp_path / 'trainforge.yaml'}:6:5",
        "environments.prod.controller: controller: train-controller says who makes the pods of kubeflow-v1 jobs;"
        " environment 'prod' lowers to target mpi-operator, whose pods the mpi-operator makes; remove controller"
        " from environment 'prod', or set its target: kubeflow-v1"]]


@pytest.mark.parametrize(("nodes", "refused"), [(10, False), (11, True)], ids=[
    "ten workers of a 54-character job fit", "the eleventh worker's hostname is one character too long"])
def test_the_worker_hostname_the_operator_validates_is_held_to_63_characters(tmp_path, nodes, refused):
    name = "n" * 54
    (tmp_path / "trainforge.yaml").write_text(yaml.safe_dump(project()))
    (tmp_path / "job.yaml").write_text(job_text(f"nodes: {nodes}\n", name=name, framework="mpi"))

    run = run_cli("validate", tmp_path)

    errors = [e.split(": error: ", 1)[1] for e in run.errors()]
    assert errors == ([f"metadata.name: generated name '{name}-worker-10' is 64 characters; Kubernetes allows 63;"
                       " shorten the job name to at most 53 characters"] if refused else []), errors
