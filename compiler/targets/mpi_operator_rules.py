"""What the mpi-operator's MPIJob (`kubeflow.org/v2beta1`) cannot carry, as positioned diagnostics.

The mpi-operator has no webhook: the API server stores whatever the CRD's schema allows, and
the operator's own validation then refuses the job with a `ValidationError` Event and never
starts it (a replica's restartPolicy other than Never or OnFailure). It restarts nothing but
the launcher (its batch Job retries the launcher pod up to `backoffLimit`; a failed worker
pod is never made again), so whole-job restarts have no home there. It runs only MPI. With
`mpi.runLauncherAsWorker` the launcher is one of the nodes, so a launcher role of its own
would contradict it. And SSH needs a user that can read the keys: under `policy.podSecurity:
restricted` the pods run as non-root, and the default key path is root's (`/root/.ssh`,
mode 0600), which that user cannot read; that is refused here, with the way the
mpi-operator's own images run sshd as a user (docs/mpi-operator.md).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic
from compiler.reading.resolve import Target
from compiler.targets.diagnose import error, unset
from foundation.frameworks import adapter
from foundation.frameworks import mpi_operator as facts

NAME = "mpi-operator"


def _framework(target: Target) -> Iterator[Diagnostic]:
    from compiler.targets import supporting  # the table imports this module's target

    framework = target.spec.framework
    yield error(
        target, ("framework",),
        f"environment '{target.env_name}' targets {NAME}, whose kubeflow.org/v2beta1 {facts.KIND} runs framework"
        f" {facts.FRAMEWORK} only, not {framework}",
        f"{framework} compiles for target {', '.join(supporting(framework))}: set"
        f" environments.{target.env_name}.target to it in trainforge.yaml",
    )


def _restart(target: Target) -> Iterator[Diagnostic]:
    restart = target.spec.policy.restart
    if restart is not None and restart not in facts.RESTART_POLICIES:
        yield error(
            target, ("policy", "restart"),
            f"{facts.OPERATOR_TITLE} admits only {' and '.join(facts.RESTART_POLICIES)} as a replica's restartPolicy:"
            f" it refuses an {facts.KIND} with {restart} (a ValidationError Event) and never starts it",
            "write OnFailure (a failed container restarts in its pod) or Never, or remove restart (the launcher"
            " OnFailure, the workers Never)",
        )


def _restart_scope(target: Target) -> Iterator[Diagnostic]:
    if target.spec.policy.restartScope == "job":
        yield error(
            target, ("policy", "restartScope"),
            f"{facts.OPERATOR_TITLE} restarts only the launcher (its Job retries the launcher pod up to backoffLimit)"
            " and never makes a failed worker again, so it cannot restart the whole job",
            f"{unset(target, ('policy', 'restartScope'))}; backoffLimit counts the launcher's retries",
        )


def _launcher_role(target: Target) -> Iterator[Diagnostic]:
    settings, launcher = target.spec.mpi, adapter(target.spec.framework).launcher
    if settings is not None and settings.runLauncherAsWorker and launcher is not None \
            and launcher.role in target.spec.roles:
        yield error(
            target, ("roles", launcher.role),
            f"with mpi.runLauncherAsWorker {launcher.title} is one of the nodes: it runs on their resources",
            f"{unset(target, ('roles', launcher.role))}, or set mpi.runLauncherAsWorker: false",
        )


def _ssh_user(target: Target) -> Iterator[Diagnostic]:
    if target.policy.pod_security() != "restricted" or not facts.runs_as_root_sshd(target.spec.mpi):
        return
    written = target.spec.mpi is not None and target.spec.mpi.sshAuthMountPath is not None
    yield error(
        target, ("mpi", "sshAuthMountPath") if written else ("framework",),
        f"under policy.podSecurity: restricted the pods run as a non-root user, and {facts.OPERATOR_TITLE} mounts"
        f" the SSH keys at {facts.DEFAULT_SSH_AUTH_MOUNT_PATH} (root's, mode 0600), which that user cannot read:"
        " mpirun could not reach the workers",
        "set mpi.sshAuthMountPath to that user's ~/.ssh (e.g. /home/mpiuser/.ssh, as the mpi-operator's base"
        " images have) and start the workers' sshd as that user on a port above 1024 (their command, e.g."
        " /usr/sbin/sshd -De -f /home/mpiuser/.sshd_config); or ask for policy.podSecurity: baseline",
    )


def check(target: Target) -> Iterator[Diagnostic]:
    if target.spec.framework != facts.FRAMEWORK:
        yield from _framework(target)
        return
    for rule in (_restart, _restart_scope, _launcher_role, _ssh_user):
        yield from rule(target)
