"""What the mpi-operator's MPIJob (`kubeflow.org/v2beta1`) cannot carry, as positioned diagnostics.

The mpi-operator has no webhook: the API server stores whatever the CRD's schema allows, and
the operator's own validation then refuses the job with a `ValidationError` Event and never
starts it (a replica's restartPolicy other than Never or OnFailure). It restarts nothing but
the launcher (its batch Job retries the launcher pod up to `backoffLimit`; a failed worker
pod is never made again), so whole-job restarts have no home there. It runs only MPI. And
the workers' sshd, as the operator starts it (`sshd -De`, as root, with the keys at root's
`/root/.ssh`, mode 0600), needs root and the container runtime's default capabilities: a
non-root user (what `policy.podSecurity: restricted` demands, or a podTemplate's
runAsNonRoot/runAsUser) cannot read the keys, and root without SYS_CHROOT, SETUID, SETGID
(privilege separation) or NET_BIND_SERVICE (port 22), which `drop: [ALL]` removes, exits at
the first connection. Both were seen with OpenSSH 9.2; both are refused here at the key path,
with the way the mpi-operator's own images run sshd as a user on a port above 1024
(docs/pod-security.md), which meets restricted.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from compiler.diagnostics import Diagnostic
from compiler.podsecurity import as_dict, as_list
from compiler.reading.resolve import Target
from compiler.targets import roles
from compiler.targets.diagnose import error, unset
from compiler.targets.lowering import pod_template
from foundation.frameworks import adapter
from foundation.frameworks import mpi_operator as facts
from schemas.loader import Loc

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
    """The restart policy of each replica type (its role's, else the job's) the operator admits."""
    spec = target.spec
    seen: set[Loc] = set()
    for plan in adapter(spec.framework).plan(spec):
        restart = roles.restart(spec, plan)
        own = roles.entry(spec, plan)
        loc: Loc = ("roles", plan.role, "restart") if own is not None and own.restart is not None else ("policy", "restart")
        if restart is None or restart in facts.RESTART_POLICIES or loc in seen:
            continue
        seen.add(loc)
        yield error(
            target, loc,
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


def _worker_template(target: Target) -> Optional[dict[str, Any]]:
    """The workers' pod template as lowering writes it (podTemplate merged, podSecurityDefaults
    applied); None without workers (the launcher alone, with runLauncherAsWorker on one node)."""
    spec = target.spec
    fw = adapter(spec.framework)
    plan = next((p for p in fw.plan(spec) if p.replica_type == facts.WORKER and p.replicas > 0), None)
    return pod_template(spec, plan, fw.facts, target, shared=True) if plan is not None else None


def _main_context(template: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the pod's securityContext, the first container's): the operator runs sshd in the first."""
    pod = as_dict(template.get("spec"))
    main = as_dict((as_list(pod.get("containers")) or [{}])[0])
    return as_dict(pod.get("securityContext")), as_dict(main.get("securityContext"))


def _non_root(template: dict[str, Any]) -> bool:
    pod, own = _main_context(template)
    user = own.get("runAsUser", pod.get("runAsUser"))
    return own.get("runAsNonRoot", pod.get("runAsNonRoot")) is True or (
        isinstance(user, int) and not isinstance(user, bool) and user != 0)


def _dropped(template: dict[str, Any]) -> list[str]:
    """The capabilities root's sshd needs that the workers' main container goes without."""
    capabilities = as_dict(_main_context(template)[1].get("capabilities"))
    drop = {str(c).upper().removeprefix("CAP_") for c in as_list(capabilities.get("drop"))}
    add = {str(c).upper().removeprefix("CAP_") for c in as_list(capabilities.get("add"))}
    return [c for c in facts.ROOT_SSHD_CAPABILITIES if ("ALL" in drop or c in drop) and c not in add]


SSH_AS_USER = ("set mpi.sshAuthMountPath to that user's ~/.ssh (e.g. /home/mpiuser/.ssh, as the mpi-operator's base"
               " images have) and start the workers' sshd as that user on a port above 1024 (roles.worker.command,"
               " e.g. [/usr/sbin/sshd, -De, -f, /home/mpiuser/.sshd_config])")


def _ssh_user(target: Target) -> Iterator[Diagnostic]:
    """The workers' sshd as the mpi-operator starts it runs as root with root's keys: a non-root
    user cannot read those keys, and root without the default capabilities cannot run sshd."""
    if not facts.runs_as_root_sshd(target.spec.mpi):
        return
    written = target.spec.mpi is not None and target.spec.mpi.sshAuthMountPath is not None
    at = ("mpi", "sshAuthMountPath") if written else ("framework",)
    restricted = target.policy.pod_security() == "restricted"
    worker = _worker_template(target)
    if worker is None:
        return
    keys = (f"{facts.OPERATOR_TITLE} mounts the SSH keys at {facts.DEFAULT_SSH_AUTH_MOUNT_PATH} (root's, mode 0600),"
            " which that user cannot read: mpirun could not reach the workers")
    if restricted:
        yield error(target, at, f"under policy.podSecurity: restricted the pods run as a non-root user, and {keys}",
                    f"{SSH_AS_USER}; or ask for policy.podSecurity: baseline")
    elif _non_root(worker):
        yield error(target, at, f"the pods run as a non-root user (podTemplate's runAsNonRoot or runAsUser), and {keys}",
                    f"{SSH_AS_USER}; or let the workers run as root")
    elif _dropped(worker):
        yield error(
            target, at,
            f"the workers' sshd runs as root (the SSH keys at {facts.DEFAULT_SSH_AUTH_MOUNT_PATH}) and needs"
            f" {', '.join(_dropped(worker))} (privilege separation, port 22), which the workers' container drops"
            " (drop: [ALL] is what policy.podSecurityDefaults writes where a container sets no capabilities)",
            f"{SSH_AS_USER}; or keep those capabilities (podTemplate capabilities.add, which baseline allows), or set"
            " policy.podSecurityDefaults: false for this environment",
        )


def check(target: Target) -> Iterator[Diagnostic]:
    if target.spec.framework != facts.FRAMEWORK:
        yield from _framework(target)
        return
    for rule in (_restart, _restart_scope, _ssh_user):
        yield from rule(target)
