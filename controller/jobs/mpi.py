"""MPIJob's v1 "kubectl-delivery" wiring (semantics §7): a capability of the reconciler.

MPIJob does not use per-index services or the generic pod pass: the launcher reaches
workers through `kubectl exec`, so the controller keeps a ServiceAccount, Role and
RoleBinding for the launcher, a ConfigMap with `hostfile`, `kubexec.sh` and
`discover_hosts.sh` (rewritten as workers turn Running), the worker pods (`sleep 365d`
unless the template has a command) and the launcher pod with its `kubectl-delivery`
init container and Open MPI / Intel MPI environment. Once the launcher has finished,
nothing more is created. These helper objects additionally carry the operator-name
label so our label-filtered informers see them (upstream only sets `app: {job}`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.frameworks.mpi import is_gpu_launcher
from controller.jobs import conditions as cond
from controller.jobs import desired
from controller.jobs import status as st
from controller.runtime import errors, jsondata
from controller.runtime.informer import Informer
from controller.runtime.kube import (
    CONFIGMAPS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    Resource,
)
from controller.runtime.writes import EXISTED, Writes
from schemas import upstream

if TYPE_CHECKING:
    from controller.jobs.addons import Gang

CONFIG_MOUNT, KUBECTL_MOUNT = "/etc/mpi", "/opt/kube"
CONFIG_VOLUME, KUBECTL_VOLUME = "mpi-job-config", "mpi-job-kubectl"


def _slots(job: dict[str, Any]) -> int:
    slots = job["spec"].get("slotsPerWorker")
    return 1 if slots is None else int(slots)


def _worker_replicas(job: dict[str, Any]) -> int:
    worker = job["spec"]["mpiReplicaSpecs"].get("Worker")
    return int(worker.get("replicas") or 0) if isinstance(worker, dict) else 0


def _launcher_template(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["mpiReplicaSpecs"]["Launcher"].get("template") or {}


def service_account_name(job: dict[str, Any]) -> str:
    return (_launcher_template(job).get("spec") or {}).get("serviceAccountName") or f"{job['metadata']['name']}-launcher"


def _meta(job: dict[str, Any], kind: Any, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": job["metadata"]["namespace"],
        "labels": {"app": job["metadata"]["name"], upstream.OPERATOR_LABEL: kind.facts.operator_name},
        "ownerReferences": [desired.owner_reference(job, kind)],
    }


def config_data(job: dict[str, Any], running_workers: list[str]) -> dict[str, str]:
    name, slots, gpu = job["metadata"]["name"], _slots(job), is_gpu_launcher(job)
    kubexec = f"#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n{KUBECTL_MOUNT}/kubectl exec ${{POD_NAME}}"
    if job["spec"].get("mainContainer"):
        kubexec += f" --container {job['spec']['mainContainer']}"
    kubexec += ' -- /bin/sh -c "$*"'
    hostfile = f"{name}-launcher slots={slots}\n" if gpu else ""
    hostfile += "".join(f"{name}-worker-{i} slots={slots}\n" for i in range(_worker_replicas(job)))
    discover = "#!/bin/sh"
    if gpu:
        discover += f"\necho {name}-launcher:{slots}\n"
    for pod_name in sorted(running_workers):
        discover += f"\necho {pod_name}:{slots}"
    return {"hostfile": hostfile, "kubexec.sh": kubexec, "discover_hosts.sh": discover}


def role_rules(job: dict[str, Any]) -> list[dict[str, Any]]:
    names = [f"{job['metadata']['name']}-worker-{i}" for i in range(_worker_replicas(job))]
    exec_rule: dict[str, Any] = {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}
    if names:
        exec_rule["resourceNames"] = names
    return [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}, exec_rule]


def _pod(job: dict[str, Any], kind: Any, replica_type: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    replica = job["spec"]["mpiReplicaSpecs"][replica_type]
    template = jsondata.copy(replica.get("template") or {})
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    spec["restartPolicy"] = desired.pod_restart_policy(replica)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": job["metadata"]["namespace"],
        "labels": {**(meta.get("labels") or {}), **labels},
        "ownerReferences": [desired.owner_reference(job, kind)],
    }
    if meta.get("annotations"):
        metadata["annotations"] = meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def worker_pod(job: dict[str, Any], kind: Any, *, index: int) -> dict[str, Any]:
    labels = {**desired.base_labels(job, kind), upstream.TYPE_LABEL: "worker", upstream.INDEX_LABEL: str(index)}
    pod = _pod(job, kind, "Worker", f"{job['metadata']['name']}-worker-{index}", labels)
    spec = pod["spec"]
    container = spec["containers"][0]
    if not container.get("command"):
        container["command"], container["args"] = ["sleep"], ["365d"]
    container["volumeMounts"] = [*(container.get("volumeMounts") or []), {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT}]
    spec["volumes"] = [*(spec.get("volumes") or []), {
        "name": CONFIG_VOLUME,
        "configMap": {"name": f"{job['metadata']['name']}-config",
                      "items": [{"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555}]},
    }]
    return pod


def launcher_pod(job: dict[str, Any], kind: Any, *, options: desired.Options = desired.Options()) -> dict[str, Any]:
    """The launcher pod; its `kubectl-delivery` init container is secured as `options` say
    (desired.secured: restricted, unless --upstream-init-containers)."""
    name = job["metadata"]["name"]
    labels = {**desired.base_labels(job, kind), upstream.TYPE_LABEL: "launcher", upstream.ROLE_LABEL: "master"}
    pod = _pod(job, kind, "Launcher", f"{name}-launcher", labels)
    spec = pod["spec"]
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = f"{name}-launcher"
    resources = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    spec["initContainers"] = [*(spec.get("initContainers") or []), *desired.secured([{
        "name": "kubectl-delivery",
        "image": options.mpi_kubectl_delivery_image,
        "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "TARGET_DIR", "value": KUBECTL_MOUNT}, {"name": "NAMESPACE", "value": job["metadata"]["namespace"]}],
        "volumeMounts": [{"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT}, {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT}],
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }], options)]
    container = spec["containers"][0]
    container["env"] = [*(container.get("env") or []), *kind.adapter.rendezvous_env(job, "Launcher", 0)]
    container["volumeMounts"] = [*(container.get("volumeMounts") or []),
                                 {"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT},
                                 {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT}]
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": KUBECTL_VOLUME, "emptyDir": {}}, {
        "name": CONFIG_VOLUME,
        "configMap": {"name": f"{name}-config", "items": [
            {"key": "kubexec.sh", "path": "kubexec.sh", "mode": 0o555},
            {"key": "hostfile", "path": "hostfile", "mode": 0o444},
            {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555},
        ]},
    }]
    return pod


class MPI:
    """The MPIJob capability plugged into the Reconciler (caches for its helper objects)."""

    def __init__(self, *, configmaps: Informer, serviceaccounts: Informer, roles: Informer, rolebindings: Informer) -> None:
        self.caches: dict[str, Informer] = {
            "configmaps": configmaps, "serviceaccounts": serviceaccounts, "roles": roles, "rolebindings": rolebindings,
        }
        self._foreign_sa: set[tuple[str, str]] = set()  # user-provided SAs we saw exist (AlreadyExists)

    def informers(self) -> list[Informer]:
        return list(self.caches.values())

    def reconcile(self, writes: Writes, ctx: st.Ctx, pods: list[dict[str, Any]], *, options: desired.Options,
                  gang: Gang | None) -> None:
        job, kind = ctx.job, ctx.kind
        ns, name = ctx.namespace, ctx.name
        ctx.status.setdefault("startTime", cond.timestamp(ctx.now))
        launcher = next((p for p in pods if p["metadata"]["name"] == f"{name}-launcher"), None)
        launcher_phase = (launcher.get("status") or {}).get("phase") if launcher else None
        workers: list[dict[str, Any]] = []
        if launcher_phase not in ("Succeeded", "Failed"):
            self._ensure_service_account(writes, ctx)
            running = [p["metadata"]["name"] for p in diff_workers(pods) if (p.get("status") or {}).get("phase") == "Running"]
            self._ensure(writes, ctx, res=CONFIGMAPS, name=f"{name}-config", content={"data": config_data(job, running)},
                         field="data")
            self._ensure(writes, ctx, res=ROLES, name=f"{name}-launcher", content={"rules": role_rules(job)}, field="rules")
            binding = {
                "subjects": [{"kind": "ServiceAccount", "name": service_account_name(job), "namespace": ns}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{name}-launcher"},
            }
            self._ensure(writes, ctx, res=ROLEBINDINGS, name=f"{name}-launcher", content=binding, field=None)
            workers = self._workers(writes, ctx, pods, gang=gang)
            if launcher is None:
                pod = launcher_pod(job, kind, options=options)
                if gang is not None:
                    gang.decorate(ctx, pod, "Launcher")
                writes.create(ctx, PODS, pod)
        statuses = ctx.status.setdefault("replicaStatuses", {})
        statuses["Launcher"] = st.compact({
            "active": int(launcher_phase == "Running"),
            "succeeded": int(launcher_phase == "Succeeded"),
            "failed": int(launcher_phase == "Failed"),
        }) if launcher else {}
        statuses["Worker"] = st.compact(_worker_counts(workers))
        ctx.pods = {"Launcher": [launcher] if launcher else [], "Worker": workers}

    def _workers(self, writes: Writes, ctx: st.Ctx, pods: list[dict[str, Any]], *,
                 gang: Gang | None) -> list[dict[str, Any]]:
        wanted = _worker_replicas(ctx.job)
        by_index: dict[int, dict[str, Any]] = {}
        existing = diff_workers(pods)
        for pod in existing:
            try:
                index = int((pod["metadata"].get("labels") or {}).get(upstream.INDEX_LABEL, ""))
            except ValueError:
                continue
            if index >= wanted:
                if len(existing) > wanted and not pod["metadata"].get("deletionTimestamp"):
                    writes.delete(ctx, PODS, pod)
            else:
                by_index[index] = pod
        for index in range(wanted):
            if index not in by_index:
                pod = worker_pod(ctx.job, ctx.kind, index=index)
                if gang is not None:
                    gang.decorate(ctx, pod, "Worker")
                writes.create(ctx, PODS, pod)
        return [by_index[i] for i in sorted(by_index)]

    def _ensure_service_account(self, writes: Writes, ctx: st.Ctx) -> None:
        name = service_account_name(ctx.job)
        if self.caches["serviceaccounts"].get(ctx.namespace, name) is not None or (ctx.namespace, name) in self._foreign_sa:
            return
        body = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(ctx.job, ctx.kind, name)}
        if writes.create(ctx, SERVICEACCOUNTS, body, announce=False) == EXISTED:
            self._foreign_sa.add((ctx.namespace, name))  # the user's own: not in our (labelled) cache

    def _ensure(self, writes: Writes, ctx: st.Ctx, *, res: Resource, name: str, content: dict[str, Any],
                field: str | None) -> None:
        current = self.caches[res.plural].get(ctx.namespace, name)
        if current is None:
            body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": _meta(ctx.job, ctx.kind, name), **content}
            writes.create(ctx, res, body, announce=False)
            return
        ref = next((o for o in current["metadata"].get("ownerReferences") or [] if o.get("controller")), None)
        if ref is None or ref.get("uid") != ctx.job["metadata"]["uid"]:
            ctx.events.append(("Warning", "ErrResourceExists",
                               f'Resource "{name}" of {res.kind} already exists and is not managed by MPIJob'))
            raise errors.Conflict("reconcile", res.kind, ctx.namespace, name, "exists and is not controlled by this MPIJob")
        if field is not None and _normalize(current.get(field)) != _normalize(content[field]):
            writes.update(res, {**current, field: content[field]})


def diff_workers(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if (p["metadata"].get("labels") or {}).get(upstream.TYPE_LABEL) == "worker"]


def _worker_counts(workers: list[dict[str, Any]]) -> dict[str, int]:
    out = {"active": 0, "succeeded": 0, "failed": 0}
    for pod in workers:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Running":
            out["active"] += 1
        elif phase == "Succeeded":
            out["succeeded"] += 1
        elif phase == "Failed":
            out["failed"] += 1
    return out


def _normalize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value
