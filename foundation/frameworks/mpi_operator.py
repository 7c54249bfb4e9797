"""MPIJob `kubeflow.org/v2beta1`: the mpi-operator's kind (the `mpi-operator` target), every fact of it.

The same kind name, replica types and replica-spec field as the Training Operator's v1
MPIJob (`foundation.frameworks.mpi`, whose `plan` and `slotsPerWorker` both share), but
another API with another controller, so its facts are kept apart, here. Read from the
mpi-operator v0.8.0 (pkg/apis/kubeflow/v2beta1, pkg/apis/kubeflow/validation,
pkg/controller): the launcher is a batch/v1 Job `{job}-launcher` whose pod gets a generated
suffix (its hostname stays `{job}-launcher`); the workers are pods `{job}-worker-{i}` it
creates once and never updates; a headless Service `{job}`, a hostfile ConfigMap
`{job}-config` and an SSH key Secret `{job}-ssh` sit beside them. It starts a worker whose
first container has neither command nor args with `/usr/sbin/sshd -De`, and mounts the keys
at `sshAuthMountPath` (default `/root/.ssh`, root's) in every pod, so the launcher's mpirun
reaches the workers over SSH. Its pods carry the job name and `job-role` labels (launcher,
worker) and, on workers, the replica index; there is no replica-type label. It admits only
Never and OnFailure as a replica's restartPolicy (its validation refuses the job otherwise,
with an Event, and never starts it) and copies runPolicy's backoffLimit,
activeDeadlineSeconds and ttlSecondsAfterFinished into the launcher Job when it creates it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from foundation.frameworks import mpi

if TYPE_CHECKING:
    from schemas.trainjob import Mpi

GROUP = "kubeflow.org"
VERSION = "v2beta1"
API_VERSION = f"{GROUP}/{VERSION}"
FRAMEWORK = mpi.FACTS.name  # the one framework whose job this is
KIND = mpi.FACTS.kind
REPLICA_SPECS = mpi.FACTS.replica_specs
LAUNCHER, WORKER = mpi.FACTS.replica_types  # ("Launcher", "Worker")
CONTAINER = mpi.FACTS.container  # the operator reads the first container; the name is ours, as v1's
OPERATOR_NAME = "mpi-operator"  # its pods' training.kubeflow.org/operator-name
OPERATOR_TITLE = "the mpi-operator"
# validation.go validRestartPolicies: a replica's restartPolicy; anything else stops the job
RESTART_POLICIES = ("Never", "OnFailure")
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"
WORKER_COMMAND = ("/usr/sbin/sshd", "-De")  # a worker without command and args runs this (as root)
# what that root sshd needs of the container runtime's default capabilities: its privilege
# separation chroots and changes user, and port 22 is privileged (OpenSSH 9.2 without them:
# 'chroot("/run/sshd"): Operation not permitted' at the first connection; tests/e2e note it)
ROOT_SSHD_CAPABILITIES = ("NET_BIND_SERVICE", "SETGID", "SETUID", "SYS_CHROOT")
# the volumes it adds to the pods it makes (v0.8.0's configVolumeName, sshAuthVolume): the
# launcher's hostfile ConfigMap and everyone's SSH keys, which a template's container may mount
CONFIG_VOLUME, SSH_VOLUME = "mpi-job-config", "ssh-auth"
ADDED_VOLUMES = {LAUNCHER: (CONFIG_VOLUME, SSH_VOLUME), WORKER: (SSH_VOLUME,)}
# the pods' training.kubeflow.org/job-role label -> the replica type
POD_ROLES = {"launcher": LAUNCHER, "worker": WORKER}
# runPolicy.managedBy: the values its validation admits; MultiKueue writes the second
MANAGED_BY = ("kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue")
# cleanPodPolicy when the spec names none: its API comment says "Default to Running", its
# defaulting writes None, and then the workers, which run sshd and never exit, stay Running
# (their resources held) after the job ended (seen on the real one); its examples write Running
CLEAN_PODS_DEFAULT = "Running"
# the job fields the operator copies into the launcher Job once, when it creates it
LAUNCHER_JOB_POLICY = ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished")

# spec.mpi -> the MPIJob's own field
_FIELDS = {
    "implementation": "mpiImplementation",
    "sshAuthMountPath": "sshAuthMountPath",
    "runLauncherAsWorker": "runLauncherAsWorker",
    "launcherCreationPolicy": "launcherCreationPolicy",
}


def job_fields(settings: Optional[Mpi]) -> dict[str, Any]:
    """The MPIJob spec fields `spec.mpi` sets (unset ones are left to the operator's defaults)."""
    if settings is None:
        return {}
    return {field: getattr(settings, own) for own, field in _FIELDS.items() if getattr(settings, own) is not None}


def runs_as_root_sshd(settings: Optional[Mpi]) -> bool:
    """The keys are mounted where only root reads them (the default), so sshd and ssh run as root."""
    path = settings.sshAuthMountPath if settings is not None else None
    return (path or DEFAULT_SSH_AUTH_MOUNT_PATH).rstrip("/") in ("/root", DEFAULT_SSH_AUTH_MOUNT_PATH)


def launcher_name(job: str) -> str:
    """The launcher Job's name, which is also its pod's hostname."""
    return f"{job}-launcher"


def worker_name(job: str, index: int) -> str:
    return f"{job}-worker-{index}"


def object_names(job: str) -> list[str]:
    """The Service, the hostfile ConfigMap and the SSH Secret it makes beside the pods."""
    return [job, f"{job}-config", f"{job}-ssh"]


# --- what the cluster fills in an MPIJob (the importer's round trip compares jobs after it) ---
# the CRD's schema defaults of the job's own fields (v0.8.0's kubeflow.org_mpijobs.yaml)
SPEC_DEFAULTS = {
    "launcherCreationPolicy": "AtStartup",
    "mpiImplementation": "OpenMPI",
    "runLauncherAsWorker": False,
    "slotsPerWorker": 1,
    "sshAuthMountPath": DEFAULT_SSH_AUTH_MOUNT_PATH,
}
SPEC_FIELDS = frozenset({*SPEC_DEFAULTS, REPLICA_SPECS, "runPolicy"})
# SetDefaults_MPIJob: the replicas and restart policy of each replica type (launcher, worker)
REPLICA_DEFAULTS = {LAUNCHER: (1, "OnFailure"), WORKER: (0, "Never")}


def defaulted(job: dict[str, Any]) -> dict[str, Any]:
    """`job` (changed in place) as the API server stores it and the operator reads it: the CRD's
    defaults, `runPolicy.cleanPodPolicy: None` and each replica type's count and restart policy."""
    spec = job.setdefault("spec", {})
    for field, value in SPEC_DEFAULTS.items():
        if spec.get(field) is None:
            spec[field] = value
    run_policy = spec.setdefault("runPolicy", {})
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = "None"
    replicas = spec.get(REPLICA_SPECS)
    for name, (count, restart) in REPLICA_DEFAULTS.items():
        replica = replicas.get(name) if isinstance(replicas, dict) else None
        if isinstance(replica, dict):
            if replica.get("replicas") is None:
                replica["replicas"] = count
            if not replica.get("restartPolicy"):
                replica["restartPolicy"] = restart
    return job


def settings_of(job_spec: dict[str, Any]) -> dict[str, Any]:
    """`spec.mpi` from an MPIJob's own fields: those not at their default (`job_fields` backwards)."""
    return {own: job_spec[field] for own, field in _FIELDS.items()
            if job_spec.get(field) is not None and job_spec[field] != SPEC_DEFAULTS[field]}
