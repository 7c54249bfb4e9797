"""The compiler's Pod Security levels against the real PodSecurity admission plugin.

The API server is the oracle, not a copy of its rules: every case below is compiled at
each level (privileged, baseline, restricted), and every pod the operator would make from
the compiled job (train-controller's own pod builder: the template plus the operator's
init containers, rendezvous env and restart policy) goes to the project's kube-apiserver
v1.32 as a server-side dry-run create, into a namespace labelled with that level. The
compiler must refuse the spec exactly when the server refuses one of its pods, under each
project `controller`: `training-operator` is judged on the pods upstream's operator makes
(our builder with --upstream-init-containers: init containers without a securityContext),
`train-controller` on the pods train-controller makes by default.

Each case runs twice: as written (policy.podSecurityDefaults off), and over a
restricted-ready base (runAsNonRoot: true for the pod, podSecurityDefaults on), so a
restricted control is tested with everything else in order. Ephemeral containers cannot
be part of a pod create (the server refuses them with 422, and the compiler refuses them
in a pod template for that reason); their case is checked the only way the server
allows: the pod is created for real, then the containers go through the
`ephemeralcontainers` subresource as a dry-run.

One known divergence is pinned, not hidden: `procMount` needs the ProcMountType feature
gate, off by default in v1.32, so this server drops the field and admits the pod where a
cluster with the gate on refuses it; the compiler follows the Pod Security Standards and
refuses it, and the test asserts the server really dropped the value.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

import pytest
from compiler_builders import example_sets, job_doc, project_doc, write_docs

from compiler.emit.render import rendered_objects
from compiler.pipeline import compile_sources
from controller.jobs import desired, mpi
from controller.jobs.kinds import KINDS

pytestmark = pytest.mark.controlplane

LEVELS = ("privileged", "baseline", "restricted")
READY = {"spec": {"securityContext": {"runAsNonRoot": True}}}  # the one setting the compiler never writes
BUSYBOX = "busybox:1.36"
# the project's `controller` -> the pod builder's options that make that controller's pods
CONTROLLERS = {"training-operator": desired.Options(upstream_init_containers=True),
               "train-controller": desired.Options()}


@dataclass(frozen=True)
class Case:
    pod: dict[str, Any]  # the podTemplate
    framework: str = "pytorch"
    spec: dict[str, Any] = field(default_factory=dict)  # other spec fields
    gated: Optional[tuple[str, ...]] = None  # a container field the v1.32 server drops (feature gate off)


def containers(*items: dict[str, Any], kind: str = "containers", pod: Optional[dict] = None) -> dict[str, Any]:
    return {"spec": {**(pod or {}), kind: list(items)}}


def main(**security: Any) -> dict[str, Any]:
    """The framework container (pytorch) with a securityContext."""
    return containers({"name": "pytorch", "securityContext": security})


def init(**security: Any) -> dict[str, Any]:
    return containers({"name": "warm", "image": BUSYBOX, "command": ["true"], "securityContext": security},
                      kind="initContainers")


def ephemeral(**security: Any) -> dict[str, Any]:
    return containers({"name": "debug", "image": BUSYBOX, "securityContext": security}, kind="ephemeralContainers")


def pod_level(**security: Any) -> dict[str, Any]:
    return {"spec": {"securityContext": security}}


def volume(**source: Any) -> dict[str, Any]:
    return {"spec": {"volumes": [{"name": "extra", **source}],
                     "containers": [{"name": "pytorch", "volumeMounts": [{"name": "extra", "mountPath": "/extra"}]}]}}


def annotations(**values: str) -> dict[str, Any]:
    return {"metadata": {"annotations": values}}


APPARMOR = "container.apparmor.security.beta.kubernetes.io/pytorch"
CASES: dict[str, Case] = {
    # --- baseline: HostProcess
    "a pod-level windows HostProcess is refused": Case(
        {"spec": {"hostNetwork": True, "securityContext": {"windowsOptions": {"hostProcess": True}}}}),
    "a container-level windows HostProcess is refused": Case(
        {"spec": {"hostNetwork": True, "containers": [{"name": "pytorch", "securityContext": {
            "windowsOptions": {"hostProcess": True}}}]}}),
    "hostProcess false is allowed": Case(pod_level(windowsOptions={"hostProcess": False})),
    # --- host namespaces
    "hostNetwork true is refused": Case({"spec": {"hostNetwork": True}}),
    "hostNetwork false is allowed": Case({"spec": {"hostNetwork": False}}),
    "hostPID true is refused": Case({"spec": {"hostPID": True}}),
    "hostIPC true is refused": Case({"spec": {"hostIPC": True}}),
    # --- privileged containers, every kind
    "a privileged framework container is refused": Case(main(privileged=True)),
    "a privileged init container is refused": Case(init(privileged=True)),
    "a privileged ephemeral container is refused": Case(ephemeral(privileged=True)),
    "privileged false is allowed": Case(main(privileged=False)),
    # --- capabilities
    "adding SYS_ADMIN is refused": Case(main(capabilities={"add": ["SYS_ADMIN"]})),
    "adding NET_RAW (outside the default set) is refused": Case(main(capabilities={"add": ["NET_RAW"]})),
    "adding ALL is refused": Case(init(capabilities={"add": ["ALL"]})),
    "adding a lower-case default capability is refused": Case(main(capabilities={"add": ["chown"]})),
    "adding CHOWN is baseline but not restricted": Case(main(capabilities={"add": ["CHOWN"]})),
    "adding CHOWN to an ephemeral container is baseline only": Case(ephemeral(capabilities={"add": ["CHOWN"]})),
    "dropping ALL and adding NET_BIND_SERVICE is restricted": Case(
        main(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})),
    "dropping only NET_RAW keeps restricted unmet": Case(main(capabilities={"drop": ["NET_RAW"]})),
    "dropping lower-case all is not dropping ALL": Case(main(capabilities={"drop": ["all"]})),
    "an init container dropping ALL meets restricted": Case(init(capabilities={"drop": ["ALL"]})),
    # --- volumes
    "a hostPath volume is refused": Case(volume(hostPath={"path": "/var/run"})),
    "an nfs volume is baseline but not restricted": Case(volume(nfs={"server": "nfs.example", "path": "/x"})),
    "a configMap volume is restricted": Case(volume(configMap={"name": "settings"})),
    "a secret volume is restricted": Case(volume(secret={"secretName": "token"})),
    "a projected volume is restricted": Case(volume(projected={"sources": [{"configMap": {"name": "settings"}}]})),
    "a downwardAPI volume is restricted": Case(
        volume(downwardAPI={"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]})),
    "a csi volume is restricted": Case(volume(csi={"driver": "csi.example.com"})),
    "an ephemeral volume is restricted": Case(volume(ephemeral={"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}})),
    "an emptyDir volume is restricted": Case(volume(emptyDir={})),
    "a spec.storage claim is restricted": Case({}, spec={"storage": [{"name": "data", "mountPath": "/data",
                                                                       "claim": "imagenet"}]}),
    "sharedMemory host is refused: lowering writes the node's /dev/shm as a hostPath": Case(
        {}, spec={"resources": {"sharedMemory": "host"}}),
    "sharedMemory unsized is a memory emptyDir, restricted": Case({}, spec={"resources": {"sharedMemory": "unsized"}}),
    "devices, hugepages beside memory and limits apart pass the server's resource validation": Case(
        {}, spec={"resources": {"cpu": "1", "memory": "1Gi", "limits": {"cpu": "2", "memory": "2Gi"},
                                "devices": {"vpc.amazonaws.com/efa": 1, "hugepages-2Mi": "4Mi",
                                            "ephemeral-storage": "1Gi"}}}),
    "a worker-only hostNetwork in the role's podTemplate is refused": Case(
        {}, spec={"nodes": 2, "roles": {"worker": {"podTemplate": {"spec": {"hostNetwork": True}}}}}),
    "a launcher-only privileged container is refused": Case(
        {}, framework="mpi", spec={"roles": {"launcher": {"podTemplate": containers(
            {"name": "mpi", "securityContext": {"privileged": True}})}}}),
    "affinity per job and per role is allowed": Case({}, spec={"nodes": 2, "scheduling": {"affinity": {
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}},
        "roles": {"worker": {"scheduling": {"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}}}}}),
    # --- host ports
    "a hostPort is refused": Case(containers({"name": "pytorch", "ports": [{"containerPort": 8080, "hostPort": 8080}]})),
    "a hostPort on an init container is refused": Case(containers(
        {"name": "warm", "image": BUSYBOX, "ports": [{"containerPort": 9000, "hostPort": 9000}]}, kind="initContainers")),
    "a containerPort without hostPort is allowed": Case(containers({"name": "pytorch", "ports": [{"containerPort": 8080}]})),
    # --- AppArmor
    "an unconfined AppArmor annotation is refused": Case(annotations(**{APPARMOR: "unconfined"})),
    "a runtime/default AppArmor annotation is allowed": Case(annotations(**{APPARMOR: "runtime/default"})),
    "a localhost AppArmor annotation is allowed": Case(annotations(**{APPARMOR: "localhost/train"})),
    "an Unconfined AppArmor profile on the pod is refused": Case(pod_level(appArmorProfile={"type": "Unconfined"})),
    "an Unconfined AppArmor profile on an init container is refused": Case(init(appArmorProfile={"type": "Unconfined"})),
    "a RuntimeDefault AppArmor profile is allowed": Case(main(appArmorProfile={"type": "RuntimeDefault"})),
    "a Localhost AppArmor profile is allowed": Case(
        main(appArmorProfile={"type": "Localhost", "localhostProfile": "train"})),
    # --- SELinux
    "a custom SELinux type on the pod is refused": Case(pod_level(seLinuxOptions={"type": "spc_t"})),
    "a custom SELinux type on a container is refused": Case(main(seLinuxOptions={"type": "unconfined_t"})),
    "SELinux type container_t is allowed": Case(main(seLinuxOptions={"type": "container_t"})),
    "SELinux type container_engine_t is allowed in v1.32": Case(pod_level(seLinuxOptions={"type": "container_engine_t"})),
    "an SELinux user is refused": Case(init(seLinuxOptions={"user": "system_u"})),
    "an SELinux role is refused": Case(main(seLinuxOptions={"role": "system_r"})),
    "an SELinux level alone is allowed": Case(pod_level(seLinuxOptions={"level": "s0:c123,c456"})),
    # --- /proc mount
    "an Unmasked procMount is refused by the standard": Case(main(procMount="Unmasked"), gated=("procMount",)),
    "a Default procMount is allowed": Case(main(procMount="Default")),
    # --- seccomp
    "an Unconfined seccomp profile on the pod is refused": Case(pod_level(seccompProfile={"type": "Unconfined"})),
    "an Unconfined seccomp profile on a container is refused": Case(main(seccompProfile={"type": "Unconfined"})),
    "an Unconfined seccomp profile on an init container is refused": Case(init(seccompProfile={"type": "Unconfined"})),
    "a Localhost seccomp profile is allowed": Case(
        pod_level(seccompProfile={"type": "Localhost", "localhostProfile": "profiles/train.json"})),
    "a RuntimeDefault profile on every container instead of the pod is restricted": Case(
        main(seccompProfile={"type": "RuntimeDefault"})),
    "a pod-level RuntimeDefault overridden by an Unconfined container is refused": Case({"spec": {
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "pytorch", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]}}),
    # --- sysctls
    "an unsafe sysctl is refused": Case(pod_level(sysctls=[{"name": "kernel.msgmax", "value": "65536"}])),
    "a safe sysctl is allowed": Case(pod_level(sysctls=[{"name": "net.ipv4.ip_local_port_range", "value": "1024 65000"}])),
    "net.ipv4.tcp_rmem is safe from v1.32": Case(pod_level(sysctls=[{"name": "net.ipv4.tcp_rmem",
                                                                     "value": "4096 87380 6291456"}])),
    # --- restricted: privilege escalation
    "allowPrivilegeEscalation true is refused under restricted": Case(main(allowPrivilegeEscalation=True)),
    "allowPrivilegeEscalation true on an init container is refused under restricted": Case(
        init(allowPrivilegeEscalation=True)),
    "an ephemeral container without allowPrivilegeEscalation false is refused under restricted": Case(ephemeral()),
    "a hardened ephemeral container meets restricted": Case(
        ephemeral(allowPrivilegeEscalation=False, capabilities={"drop": ["ALL"]})),
    # --- restricted: non-root
    "runAsNonRoot false on the pod is refused under restricted": Case(pod_level(runAsNonRoot=False)),
    "runAsNonRoot false on a container is refused under restricted": Case(main(runAsNonRoot=False)),
    "runAsNonRoot true on each container instead of the pod is restricted": Case(main(runAsNonRoot=True)),
    "runAsUser 0 on the pod is refused under restricted": Case(pod_level(runAsUser=0)),
    "runAsUser 0 on an init container is refused under restricted": Case(init(runAsUser=0)),
    "a non-zero runAsUser is allowed": Case(pod_level(runAsUser=1000, runAsGroup=1000)),
    # --- routes: an environment override and a sidecar
    "a privileged sidecar added through an environment override is refused": Case(
        {}, spec={"environments": {"default": {"podTemplate": containers(
            {"name": "sidecar", "image": BUSYBOX, "securityContext": {"privileged": True}})}}}),
    "a plain sidecar container is restricted-ready only with the defaults": Case(
        containers({"name": "sidecar", "image": BUSYBOX})),
    # --- strategic-merge directives: the pods are what the merge leaves
    "a privileged sidecar an environment deletes with $patch: delete is gone": Case(
        containers({"name": "sidecar", "image": BUSYBOX, "securityContext": {"privileged": True}}),
        spec={"environments": {"default": {"podTemplate": containers({"name": "sidecar", "$patch": "delete"})}}}),
    "a pod securityContext an environment replaces with $patch: replace is judged as replaced": Case(
        pod_level(seLinuxOptions={"type": "spc_t"}, runAsNonRoot=True),
        spec={"environments": {"default": {"podTemplate": pod_level(**{"$patch": "replace", "runAsUser": 1000})}}}),
    # --- every framework's roles
    "a plain pytorch job on one node": Case({}),
    "a two-node pytorch job (the operator adds init-pytorch to Worker pods)": Case({}, spec={"nodes": 2}),
    "an elastic pytorch job (Worker pods only)": Case({}, spec={"nodes": 2, "elastic": {"minNodes": 1, "maxNodes": 3}}),
    "a tensorflow job with ps and evaluator": Case({}, "tensorflow", {"nodes": 2, "roles": {"ps": {"replicas": 1},
                                                                                          "evaluator": {}}}),
    "an mpi job (the operator adds kubectl-delivery to the launcher)": Case({}, "mpi", {"nodes": 2}),
    "an xgboost job": Case({}, "xgboost", {"nodes": 2}),
    "a paddle job in parameter-server mode": Case({}, "paddle", {"nodes": 2, "roles": {"ps": {"replicas": 1}}}),
    "a jax job": Case({}, "jax", {"nodes": 2}),
    "an mxnet job with servers": Case({}, "mxnet", {"nodes": 2, "roles": {"server": {"replicas": 1}}}),
    "a privileged tensorflow job is refused on every role": Case(containers(
        {"name": "tensorflow", "securityContext": {"privileged": True}}), "tensorflow", {"roles": {"ps": {}}}),
}


# --- the compiler's side ------------------------------------------------------------------

def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base[k], v) if k in base else v for k, v in over.items()}}
    if isinstance(base, list) and isinstance(over, list) and all(isinstance(i, dict) and "name" in i for i in base + over):
        names = {i["name"]: i for i in base}
        return [_merge(names[i["name"]], i) if i["name"] in names else i for i in over] + \
            [i for i in base if i["name"] not in {o["name"] for o in over}]
    return over


def _job(case: Case, ready: bool) -> dict[str, Any]:
    pod = _merge(READY, case.pod) if ready else case.pod
    spec = dict(case.spec)
    if pod:
        spec["podTemplate"] = pod
    return job_doc(case.framework, name="oracle", **spec)


def _compile(folder, job: dict[str, Any], level: str, defaults: bool, controller: str = "training-operator"):
    write_docs(folder / "job.yaml", job)
    write_docs(folder / "trainforge.yaml", project_doc(policy={"podSecurity": level, "podSecurityDefaults": defaults},
                                                       defaults={"controller": controller}))
    return compile_sources([folder])


def compiler_refuses(folder, job: dict[str, Any], level: str, defaults: bool,
                     controller: str = "training-operator") -> tuple[bool, list[str]]:
    result = _compile(folder, job, level, defaults, controller)
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    ours = [e for e in errors if "pod security level" in e]
    others = [e for e in errors if e not in ours and "ephemeralContainers" not in e]
    assert not others, f"the case breaks another rule, not only pod security: {others}"
    return bool(ours), ours


def compiled_job(folder, job: dict[str, Any], defaults: bool) -> dict[str, Any]:
    """The kubeflow.org job as compiled; at level privileged nothing is refused, and the
    templates do not depend on the level (podSecurityDefaults applies at every level).
    The compiler refuses ephemeral containers in any template (no pod may be created with
    them), so those are compiled without and added back as the strategic merge would
    (lowering writes none of its own, so the merged list is the podTemplate's)."""
    job = copy.deepcopy(job)
    ephemerals = (job["spec"].get("podTemplate") or {}).get("spec", {}).pop("ephemeralContainers", None)
    result = _compile(folder, job, "privileged", defaults)
    by_kind = [o for o in rendered_objects(result, "default") if o["apiVersion"] == "kubeflow.org/v1"]
    assert len(by_kind) == 1, [d.text() for d in result.diagnostics]
    if ephemerals:
        for replica in by_kind[0]["spec"][KINDS[by_kind[0]["kind"]].facts.replica_specs].values():
            replica["template"]["spec"]["ephemeralContainers"] = copy.deepcopy(ephemerals)
    return by_kind[0]


def operator_pods(job: dict[str, Any], options: desired.Options = CONTROLLERS["training-operator"]) -> list[dict[str, Any]]:
    """Index 0 of every replica type, as train-controller (upstream's pod builder) makes it
    with `options` (by default as upstream's operator does)."""
    job = copy.deepcopy(job)
    job["metadata"]["uid"] = str(uuid.uuid4())
    kind = KINDS[job["kind"]]
    pods = []
    for replica_type, replica in job["spec"][kind.facts.replica_specs].items():
        if replica.get("replicas", 1) < 1:
            continue
        if kind.name == "MPIJob":
            pod = mpi.launcher_pod(job, kind, options=options) \
                if replica_type == "Launcher" else mpi.worker_pod(job, kind, index=0)
        else:
            pod = desired.pod(job, kind, replica_type=replica_type, index=0, options=options)
        pod["metadata"].pop("ownerReferences", None)  # the job is not created; its pods only dry-run
        pods.append(pod)
    assert pods
    return pods


# --- the server's side --------------------------------------------------------------------

@pytest.fixture(scope="module")
def level_namespaces(control_plane) -> dict[str, str]:
    """One namespace per level, labelled as the compiled Namespace objects are."""
    from compiler.emit.namespaces import namespace_object

    out = {}
    for level in LEVELS:
        name = f"pss-{level}-{uuid.uuid4().hex[:6]}"
        status, body = control_plane.request("POST", "/api/v1/namespaces", namespace_object(name, level))
        assert status == 201, body
        out[level] = name
    return out


def _refused(status: int, body: Any, what: str) -> bool:
    if status == 403 and "violates PodSecurity" in str(body):
        return True
    assert status in (200, 201), f"{what}: the server refused for another reason ({status}): {body}"
    return False


def server_refuses(control_plane, namespace: str, pod: dict[str, Any]) -> tuple[bool, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["namespace"] = namespace
    ephemerals = pod["spec"].pop("ephemeralContainers", None)
    base = f"/api/v1/namespaces/{namespace}/pods"
    status, body = control_plane.request("POST", f"{base}?dryRun=All", pod)
    if _refused(status, body, "pod create") or not ephemerals:
        return status == 403, body
    # ephemeral containers exist only on a running pod: create it, then dry-run the subresource
    pod["metadata"]["name"] = f"{pod['metadata']['name']}-{uuid.uuid4().hex[:6]}"
    status, created = control_plane.request("POST", base, pod)
    assert status == 201, created
    try:
        created["spec"]["ephemeralContainers"] = ephemerals
        status, body = control_plane.request(
            "PUT", f"{base}/{pod['metadata']['name']}/ephemeralcontainers?dryRun=All", created)
        return _refused(status, body, "ephemeralcontainers update"), body
    finally:
        control_plane.request("DELETE", f"{base}/{pod['metadata']['name']}?gracePeriodSeconds=0")


def _container_value(pod: dict[str, Any], path: tuple[str, ...]) -> list[Any]:
    return [_dig(c.get("securityContext") or {}, path) for k in ("initContainers", "containers")
            for c in pod["spec"].get(k) or []]


def _dig(data: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data


@pytest.mark.parametrize("case_id", list(CASES))
def test_the_compiler_refuses_exactly_what_pod_security_admission_refuses(
        case_id, control_plane, level_namespaces, tmp_path):
    case = CASES[case_id]
    disagreements = []
    for ready, (controller, options) in ((r, c) for r in (False, True) for c in CONTROLLERS.items()):
        job = _job(case, ready)
        pods = operator_pods(compiled_job(tmp_path, job, defaults=ready), options)
        for level in LEVELS:
            refused, why = compiler_refuses(tmp_path, job, level, defaults=ready, controller=controller)
            answers = [server_refuses(control_plane, level_namespaces[level], pod) for pod in pods]
            server = any(no for no, _ in answers)
            if case.gated and refused and not server:
                # the v1.32 server drops the gated field (its feature gate is off) instead of refusing
                kept = [v for _, body in answers for v in _container_value(body, case.gated) if v not in (None, "Default")]
                assert not kept, f"{case.gated} was kept by the server yet admitted: {kept}"
                continue
            if refused != server:
                messages = [str(body.get("message") if isinstance(body, dict) else body)[:300]
                            for no, body in answers if no]
                disagreements.append(f"{level} ({'restricted-ready' if ready else 'as written'}, {controller}): compiler"
                                     f" {'refuses' if refused else 'accepts'} {why}, server {messages or 'admits'}")
    assert not disagreements, "\n".join(disagreements)


def test_the_table_covers_every_level_outcome():
    """The table is worth running: it has cases the server admits and refuses at each level
    (checked by the oracle above), every container kind, and every framework."""
    assert len(CASES) >= 70
    kinds = {k for c in CASES.values() for k in ("containers", "initContainers", "ephemeralContainers")
             if k in (c.pod.get("spec") or {})}
    assert kinds == {"containers", "initContainers", "ephemeralContainers"}
    assert {c.framework for c in CASES.values()} == {"pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax",
                                                     "mxnet"}


def test_every_spec_the_default_policy_accepts_is_admitted_in_a_baseline_namespace(control_plane, level_namespaces):
    admitted = 0
    for name, paths in example_sets():
        result = compile_sources(paths)
        assert result.ok, [d.text() for d in result.diagnostics]
        for env in result.environments:
            for obj in rendered_objects(result, env):
                makers = {"kubeflow.org/v1": operator_pods, "kubeflow.org/v2beta1": mpi_operator_pods}
                if obj["apiVersion"] not in makers:
                    continue
                for pod in makers[obj["apiVersion"]](obj):
                    pod["spec"].pop("priorityClassName", None)  # admission checks the class exists; not ours
                    refused, body = server_refuses(control_plane, level_namespaces["baseline"], pod)
                    assert not refused, f"{name} {env} {pod['metadata']['name']}: {body}"
                    admitted += 1
    assert admitted >= 20


# --- the mpi-operator target: the pods the mpi-operator makes --------------------------------

def mpi_operator_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The launcher's pod and worker 0 as the mpi-operator v0.8.0 makes them from a v2beta1 MPIJob
    (pkg/controller: newLauncherPodTemplate, newWorker, setupSSHOnPod): the template, its hostname
    and subdomain, the role variable, the SSH key Secret volume on both, the hostfile ConfigMap
    volume on the launcher, `/usr/sbin/sshd -De` for a worker without command, the replica's
    restartPolicy. It adds no init container and no securityContext, so PSA judges the template."""
    from foundation.frameworks import mpi_operator as facts

    name, spec = job["metadata"]["name"], job["spec"]
    ssh_path = spec.get("sshAuthMountPath", facts.DEFAULT_SSH_AUTH_MOUNT_PATH)
    pods = []
    for rtype, replica in spec[facts.REPLICA_SPECS].items():
        template = copy.deepcopy(replica["template"])
        pod_spec = template["spec"]
        role = next(r for r, t in facts.POD_ROLES.items() if t == rtype)
        main = pod_spec["containers"][0]
        if role == "worker" and not main.get("command") and not main.get("args"):
            main["command"] = list(facts.WORKER_COMMAND)
        main.setdefault("env", []).append({"name": "K_MPI_JOB_ROLE", "value": role})
        volumes = [{"name": "ssh-auth", "secret": {"secretName": f"{name}-ssh"}}]
        main.setdefault("volumeMounts", []).append({"name": "ssh-auth", "mountPath": ssh_path})
        if role == "launcher":
            volumes.append({"name": "mpi-job-config", "configMap": {"name": f"{name}-config"}})
            main["volumeMounts"].append({"name": "mpi-job-config", "mountPath": "/etc/mpi"})
        pod_spec["volumes"] = [*(pod_spec.get("volumes") or []), *volumes]
        pod_spec.update(hostname=f"{name}-{role}", subdomain=name,
                        restartPolicy=replica.get("restartPolicy", "Never" if role == "worker" else "OnFailure"))
        pod_spec.pop("priorityClassName", None)
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": f"{name}-{role}-{uuid.uuid4().hex[:5]}", **(template.get("metadata") or {})},
                     "spec": pod_spec})
    return pods


NON_ROOT = {"spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000}}}
MPI_OPERATOR_CASES = {
    # the mpi-operator's default: root's keys, the workers' sshd -De as root (its privilege separation
    # needs SETUID, SETGID and SYS_CHROOT, port 22 NET_BIND_SERVICE: the default capabilities)
    "the default MPI job (root sshd) needs baseline": ({}, {}, "baseline"),
    # the mpi-operator's own pi example: user 1000, keys in its home, sshd on port 2222 with a config of its own
    "a non-root MPI job with its own key path meets restricted with the defaults": (
        NON_ROOT, {"mpi": {"sshAuthMountPath": "/home/mpiuser/.ssh"}}, "restricted"),
    "an MPI job with hostNetwork is privileged": ({"spec": {"hostNetwork": True}}, {}, "privileged"),
}


@pytest.mark.parametrize("case_id", list(MPI_OPERATOR_CASES))
def test_the_mpi_operator_targets_pods_are_judged_as_pod_security_admission_judges_them(
        case_id, control_plane, level_namespaces, tmp_path):
    """At each level the compiler refuses the job exactly when the API server's PodSecurity
    refuses a pod the mpi-operator makes from it, and the lowest level that takes it is the one
    named; restricted also needs the SSH keys out of root's home (a rule PSA cannot see:
    mpi_operator_rules), which the restricted case sets."""
    pod, spec, lowest = MPI_OPERATOR_CASES[case_id]
    job = job_doc("mpi", name="oracle", nodes=2, command=["mpirun", "hostname"],
                  **({"podTemplate": pod} if pod else {}), **spec)
    defaults = lowest == "restricted"
    write_docs(tmp_path / "job.yaml", job)
    write_docs(tmp_path / "trainforge.yaml", project_doc(policy={"podSecurity": "privileged", "podSecurityDefaults": defaults},
                                                       defaults={"target": "mpi-operator"}))
    result = compile_sources([tmp_path])
    (compiled,) = [o for o in rendered_objects(result, "default") if o["kind"] == "MPIJob"]
    assert compiled["apiVersion"] == "kubeflow.org/v2beta1"
    pods = mpi_operator_pods(compiled)
    assert {p["spec"]["hostname"] for p in pods} == {"oracle-launcher", "oracle-worker"}
    admitted_at = []
    for level in LEVELS:
        write_docs(tmp_path / "trainforge.yaml", project_doc(policy={"podSecurity": level, "podSecurityDefaults": defaults},
                                                           defaults={"target": "mpi-operator"}))
        errors = [d.text() for d in compile_sources([tmp_path]).diagnostics if d.severity == "error"]
        server = any(server_refuses(control_plane, level_namespaces[level], p)[0] for p in pods)
        assert bool(errors) == server, f"{level}: compiler {errors or 'accepts'}, server {'refuses' if server else 'admits'}"
        if not server:
            admitted_at.append(level)
    assert admitted_at == list(LEVELS[:LEVELS.index(lowest) + 1])


def test_root_keys_under_restricted_are_refused_by_the_compiler_though_admission_admits_the_pods(
        control_plane, level_namespaces, tmp_path):
    """The one divergence, on purpose: hardened and non-root, the pods pass restricted admission,
    but the mpi-operator mounts the keys at /root/.ssh (0600, root's), which the non-root user
    cannot read, so mpirun never reaches a worker; the compiler says so at review."""
    job = job_doc("mpi", name="oracle", nodes=2, podTemplate=NON_ROOT)
    write_docs(tmp_path / "job.yaml", job)
    write_docs(tmp_path / "trainforge.yaml", project_doc(policy={"podSecurity": "restricted", "podSecurityDefaults": True},
                                                       defaults={"target": "mpi-operator"}))
    result = compile_sources([tmp_path])
    (error,) = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert "mounts the SSH keys at /root/.ssh (root's, mode 0600), which that user cannot read" in error

    # the same pods with the keys in a user's home compile; the operator's default path changes no pod field PSA reads
    write_docs(tmp_path / "job.yaml", job_doc("mpi", name="oracle", nodes=2, podTemplate=NON_ROOT,
                                              mpi={"sshAuthMountPath": "/home/mpiuser/.ssh"}))
    (compiled,) = [o for o in rendered_objects(compile_sources([tmp_path]), "default") if o["kind"] == "MPIJob"]
    del compiled["spec"]["sshAuthMountPath"]
    pods = mpi_operator_pods(compiled)
    assert {m["mountPath"] for p in pods for m in p["spec"]["containers"][0]["volumeMounts"]} >= {"/root/.ssh"}
    assert not any(server_refuses(control_plane, level_namespaces["restricted"], p)[0] for p in pods)
