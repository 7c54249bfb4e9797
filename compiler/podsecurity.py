"""The Pod Security Standards, as Kubernetes v1.32's PodSecurity admission applies them.

A namespace labelled `pod-security.kubernetes.io/enforce: baseline` (or `restricted`)
refuses every pod that breaks one of the level's controls, and a Kubeflow job's pods are
created by the operator long after review, so the refusal shows up only in the
operator's events. This module holds the same controls as pure functions over one pod
template (the merged template lowering writes, `podTemplate` included): `findings`
returns each offence with the template path of the offending field, which
`compiler/review/policy.py` turns into a diagnostic at the `podTemplate` line that wrote it.

The controls follow the PSS page and the `k8s.io/pod-security-admission` checks at
version 1.32 (the project's API server): baseline forbids host namespaces, HostProcess,
privileged containers, capabilities beyond the default set, hostPath volumes, host
ports, AppArmor and seccomp `Unconfined`, custom SELinux type/user/role, a non-default
/proc mount and sysctls outside the safe set; restricted adds the volume allowlist,
`allowPrivilegeEscalation: false`, running as non-root, `runAsUser` not 0, a
RuntimeDefault or Localhost seccomp profile and `drop: [ALL]`. Every control visits
containers, initContainers and ephemeralContainers, as admission does. Whether this
copy agrees with the real plugin is not taken on trust: tests/compiler/review/
test_pod_security_admission.py sends the compiled pods to a real kube-apiserver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from schemas.loader import Loc

KUBERNETES_VERSION = "v1.32"  # the PSS version the checks follow and Namespaces pin
LEVELS = ("privileged", "baseline", "restricted")
CONTAINER_KINDS = ("initContainers", "containers", "ephemeralContainers")

DEFAULT_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
SAFE_SYSCTLS = frozenset({  # the v1.32 set (tcp_rmem/tcp_wmem joined in 1.32)
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
})
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
PROFILE_TYPES = frozenset({"RuntimeDefault", "Localhost"})  # seccomp and AppArmor alike
RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
})
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True)
class Finding:
    """One offence: the lowest level that forbids it, the PSS control, the template path of
    the field (or of where a required field belongs), what is wrong and how to fix it."""

    level: str  # baseline | restricted
    control: str  # the control's name on the PSS page
    loc: Loc  # relative to the pod template: ("spec", "containers", 0, "securityContext", ...)
    what: str
    fix: str
    container: str = ""  # the container's name, for container-level controls
    missing: bool = False  # a setting restricted requires is absent (not a value that is wrong)


def as_dict(value: Any) -> dict[str, Any]:
    """`value` if it is a mapping, else an empty one: templates are user data, any shape."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def containers(pod: dict[str, Any]) -> Iterator[tuple[Loc, str, dict[str, Any]]]:
    """(template loc, name, container) for every container of every kind."""
    for kind in CONTAINER_KINDS:
        for i, container in enumerate(as_list(pod.get(kind))):
            if isinstance(container, dict):
                yield ("spec", kind, i), str(container.get("name", "")), container


def _contexts(pod: dict[str, Any]) -> Iterator[tuple[Loc, str, dict[str, Any]]]:
    """The pod's securityContext, then each container's: (loc of the context, container, context)."""
    yield ("spec", "securityContext"), "", as_dict(pod.get("securityContext"))
    for at, name, container in containers(pod):
        yield at + ("securityContext",), name, as_dict(container.get("securityContext"))


# --- baseline -------------------------------------------------------------------------

def _host_process(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, context in _contexts(as_dict(template.get("spec"))):
        if as_dict(context.get("windowsOptions")).get("hostProcess") is True:
            yield Finding("baseline", "HostProcess", at + ("windowsOptions", "hostProcess"),
                          "windowsOptions.hostProcess: true", "remove windowsOptions.hostProcess", name)


def _host_namespaces(template: dict[str, Any]) -> Iterator[Finding]:
    pod = as_dict(template.get("spec"))
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field) is True:
            yield Finding("baseline", "Host Namespaces", ("spec", field), f"{field}: true", f"remove {field}")


def _privileged(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, container in containers(as_dict(template.get("spec"))):
        if as_dict(container.get("securityContext")).get("privileged") is True:
            yield Finding("baseline", "Privileged Containers", at + ("securityContext", "privileged"),
                          "privileged: true", "remove securityContext.privileged", name)


def _capabilities_baseline(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, container in containers(as_dict(template.get("spec"))):
        added = as_list(as_dict(as_dict(container.get("securityContext")).get("capabilities")).get("add"))
        for i, cap in enumerate(added):
            if cap not in DEFAULT_CAPABILITIES:
                yield Finding("baseline", "Capabilities", at + ("securityContext", "capabilities", "add", i),
                              f"adding capability {cap}", "add only capabilities of the runtime's default set"
                              " (e.g. CHOWN, NET_BIND_SERVICE, SETUID)", name)


def _host_path(template: dict[str, Any]) -> Iterator[Finding]:
    for i, volume in enumerate(as_list(as_dict(template.get("spec")).get("volumes"))):
        if isinstance(volume, dict) and volume.get("hostPath") is not None:
            yield Finding("baseline", "HostPath Volumes", ("spec", "volumes", i, "hostPath"),
                          "a hostPath volume", "use a PersistentVolumeClaim (spec.storage) or an emptyDir")


def _host_ports(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, container in containers(as_dict(template.get("spec"))):
        for i, port in enumerate(as_list(container.get("ports"))):
            if isinstance(port, dict) and port.get("hostPort") not in (None, 0):
                yield Finding("baseline", "Host Ports", at + ("ports", i, "hostPort"),
                              f"hostPort {port['hostPort']}", "remove hostPort (reach the pods through a Service)", name)


def _app_armor(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, context in _contexts(as_dict(template.get("spec"))):
        profile = as_dict(context.get("appArmorProfile"))
        if context.get("appArmorProfile") is not None and profile.get("type") not in PROFILE_TYPES:
            yield Finding("baseline", "AppArmor", at + ("appArmorProfile", "type"),
                          f"AppArmor profile {profile.get('type')}", "use type RuntimeDefault or Localhost", name)
    for key, value in as_dict(as_dict(template.get("metadata")).get("annotations")).items():
        if str(key).startswith(APPARMOR_ANNOTATION) and value and value != "runtime/default" \
                and not str(value).startswith("localhost/"):
            yield Finding("baseline", "AppArmor", ("metadata", "annotations", key),
                          f"AppArmor profile {value}", "use runtime/default or localhost/<profile>")


def _se_linux(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, context in _contexts(as_dict(template.get("spec"))):
        options = as_dict(context.get("seLinuxOptions"))
        if options.get("type", "") not in SELINUX_TYPES:
            yield Finding("baseline", "SELinux", at + ("seLinuxOptions", "type"),
                          f"SELinux type {options['type']}",
                          "leave type unset or use container_t, container_init_t, container_kvm_t or"
                          " container_engine_t", name)
        for field in ("user", "role"):
            if options.get(field):
                yield Finding("baseline", "SELinux", at + ("seLinuxOptions", field),
                              f"a custom SELinux {field}", f"remove seLinuxOptions.{field}", name)


def _proc_mount(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, container in containers(as_dict(template.get("spec"))):
        mount = as_dict(container.get("securityContext")).get("procMount")
        if mount is not None and mount != "Default":
            yield Finding("baseline", "/proc Mount Type", at + ("securityContext", "procMount"),
                          f"procMount {mount}", "remove procMount (or set Default)", name)


def _seccomp_baseline(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, context in _contexts(as_dict(template.get("spec"))):
        if context.get("seccompProfile") is not None and as_dict(context["seccompProfile"]).get("type") not in PROFILE_TYPES:
            kind = as_dict(context["seccompProfile"]).get("type")
            yield Finding("baseline", "Seccomp", at + ("seccompProfile", "type"), f"seccomp profile {kind}",
                          "use type RuntimeDefault or Localhost", name)


def _sysctls(template: dict[str, Any]) -> Iterator[Finding]:
    context = as_dict(as_dict(template.get("spec")).get("securityContext"))
    for i, sysctl in enumerate(as_list(context.get("sysctls"))):
        if as_dict(sysctl).get("name") not in SAFE_SYSCTLS:
            yield Finding("baseline", "Sysctls", ("spec", "securityContext", "sysctls", i, "name"),
                          f"sysctl {as_dict(sysctl).get('name')}",
                          "set only namespaced safe sysctls (e.g. net.ipv4.ip_local_port_range)")


# --- restricted -----------------------------------------------------------------------

def _windows(template: dict[str, Any]) -> bool:
    """Three restricted controls do not apply to pods that declare os.name: windows."""
    return as_dict(as_dict(template.get("spec")).get("os")).get("name") == "windows"


def _volume_types(template: dict[str, Any]) -> Iterator[Finding]:
    for i, volume in enumerate(as_list(as_dict(template.get("spec")).get("volumes"))):
        sources = [key for key in as_dict(volume) if key != "name"]
        for source in sources:
            if source not in RESTRICTED_VOLUMES:  # hostPath: baseline forbids it already
                yield Finding("baseline" if source == "hostPath" else "restricted", "Volume Types", ("spec", "volumes", i, source), f"a {source} volume",
                              "use a PersistentVolumeClaim (spec.storage), emptyDir, configMap, secret, projected,"
                              " downwardAPI, csi or ephemeral volume")


def _privilege_escalation(template: dict[str, Any]) -> Iterator[Finding]:
    if _windows(template):
        return
    for at, name, container in containers(as_dict(template.get("spec"))):
        value = as_dict(container.get("securityContext")).get("allowPrivilegeEscalation")
        if value is not False:
            yield Finding("restricted", "Privilege Escalation", at + ("securityContext", "allowPrivilegeEscalation"),
                          "leaving allowPrivilegeEscalation unset" if value is None else f"allowPrivilegeEscalation: {value}",
                          "set securityContext.allowPrivilegeEscalation: false", name, missing=value is None)


def _non_root(template: dict[str, Any]) -> Iterator[Finding]:
    pod = as_dict(template.get("spec"))
    pod_value = as_dict(pod.get("securityContext")).get("runAsNonRoot")
    fix = "set podTemplate.spec.securityContext.runAsNonRoot: true, with an image (or runAsUser) that is not root"
    if pod_value is False:
        yield Finding("restricted", "Running as Non-root", ("spec", "securityContext", "runAsNonRoot"),
                      "runAsNonRoot: false", fix)
    unset = False
    for at, name, container in containers(pod):
        own = as_dict(container.get("securityContext")).get("runAsNonRoot")
        if own is False:
            yield Finding("restricted", "Running as Non-root", at + ("securityContext", "runAsNonRoot"),
                          "runAsNonRoot: false", "set runAsNonRoot: true (or remove it and set it for the pod)", name)
        unset = unset or own is None
    if unset and pod_value is None:
        yield Finding("restricted", "Running as Non-root", ("spec", "securityContext", "runAsNonRoot"),
                      "pods that may run as root", fix, missing=True)


def _run_as_user(template: dict[str, Any]) -> Iterator[Finding]:
    for at, name, context in _contexts(as_dict(template.get("spec"))):
        if context.get("runAsUser") == 0 and not isinstance(context.get("runAsUser"), bool):
            yield Finding("restricted", "Running as Non-root user", at + ("runAsUser",), "runAsUser: 0",
                          "run as a non-zero user id", name)


def _seccomp_restricted(template: dict[str, Any]) -> Iterator[Finding]:
    if _windows(template):
        return
    yield from _seccomp_baseline(template)  # explicit bad values, as at baseline
    pod = as_dict(template.get("spec"))
    if as_dict(pod.get("securityContext")).get("seccompProfile") is not None:
        return  # set at pod level: the containers inherit it (a bad value is reported above)
    if any(as_dict(c.get("securityContext")).get("seccompProfile") is None for _, _, c in containers(pod)):
        yield Finding("restricted", "Seccomp", ("spec", "securityContext", "seccompProfile"),
                      "pods without a seccomp profile",
                      "set podTemplate.spec.securityContext.seccompProfile: {type: RuntimeDefault}", missing=True)


def _capabilities_restricted(template: dict[str, Any]) -> Iterator[Finding]:
    if _windows(template):
        return
    for at, name, container in containers(as_dict(template.get("spec"))):
        capabilities = as_dict(as_dict(container.get("securityContext")).get("capabilities"))
        if "ALL" not in as_list(capabilities.get("drop")):
            yield Finding("restricted", "Capabilities", at + ("securityContext", "capabilities", "drop"),
                          "keeping the default capabilities (no drop: [ALL])",
                          "set securityContext.capabilities.drop: [ALL]", name, missing="drop" not in capabilities)
        for i, cap in enumerate(as_list(capabilities.get("add"))):
            if cap != "NET_BIND_SERVICE":
                yield Finding("restricted" if cap in DEFAULT_CAPABILITIES else "baseline", "Capabilities", at + ("securityContext", "capabilities", "add", i),
                              f"adding capability {cap}", "add no capability but NET_BIND_SERVICE", name)


Check = Callable[[dict[str, Any]], Iterator[Finding]]
BASELINE: tuple[Check, ...] = (
    _host_process, _host_namespaces, _privileged, _capabilities_baseline, _host_path, _host_ports, _app_armor,
    _se_linux, _proc_mount, _seccomp_baseline, _sysctls,
)
# restricted replaces three baseline checks by stricter ones, as admission does
RESTRICTED: tuple[Check, ...] = tuple(
    c for c in BASELINE if c not in (_capabilities_baseline, _host_path, _seccomp_baseline)
) + (_volume_types, _privilege_escalation, _non_root, _run_as_user, _seccomp_restricted, _capabilities_restricted)
CHECKS: dict[str, tuple[Check, ...]] = {"privileged": (), "baseline": BASELINE, "restricted": RESTRICTED}


def findings(template: dict[str, Any], level: str) -> list[Finding]:
    """Every offence of one pod template against `level`."""
    return [f for check in CHECKS[level] for f in check(template)]


def harden(template: dict[str, Any]) -> dict[str, Any]:
    """`policy.podSecurityDefaults`: what restricted requires and the compiler can set without
    changing what the program may do: a RuntimeDefault seccomp profile for the pod,
    `allowPrivilegeEscalation: false` and `capabilities.drop: [ALL]` on every container and
    init container, each only where the template leaves it unset (an explicit value stays
    and is checked). Not runAsNonRoot: only the image knows whether it runs as root, and a
    root image with runAsNonRoot: true fails in the kubelet, after review. `template` is
    lowering's own copy and is changed in place."""
    pod = template.setdefault("spec", {})
    context = pod.setdefault("securityContext", {})
    context.setdefault("seccompProfile", {"type": "RuntimeDefault"})
    for kind in ("initContainers", "containers"):
        for container in as_list(pod.get(kind)):
            if not isinstance(container, dict):
                continue
            own = container.setdefault("securityContext", {})
            adds = as_list(as_dict(own.get("capabilities")).get("add"))
            # the API server refuses allowPrivilegeEscalation: false beside privileged or CAP_SYS_ADMIN
            if own.get("privileged") is not True and not {"SYS_ADMIN", "CAP_SYS_ADMIN"} & set(map(str, adds)):
                own.setdefault("allowPrivilegeEscalation", False)
            capabilities = own.setdefault("capabilities", {})
            if isinstance(capabilities, dict):
                capabilities.setdefault("drop", ["ALL"])
    return template

