"""The launcher's "kubectl-delivery" wiring of a kind with a launcher (semantics §7): a capability
of the reconciler, MPIJob's pod pass.

Such a kind does not use per-index services or the generic pod pass: the launcher reaches the
workers through `kubectl exec`, so the controller keeps a ServiceAccount, Role and RoleBinding
for the launcher, a ConfigMap with `hostfile`, `kubexec.sh` and `discover_hosts.sh` (rewritten
as workers turn Running), the worker pods (`sleep 365d` unless the template has a command) and
the launcher pod with the operator's init container and Open MPI / Intel MPI environment. Once
the launcher has finished, nothing more is created. These helper objects additionally carry the
operator-name label so our label-filtered informers see them (upstream only sets `app: {job}`).

Every name comes from the kind's adapter (foundation/frameworks/mpi.py): the replica-spec field,
the launcher's replica type and the suffixes of the names derived from the job's
(`Adapter.launcher`), the type it drives, its init container (`Adapter.operator_init`) and
where the ConfigMap is mounted (`CONFIG_MOUNT`, which the launcher's environment names too).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import Launcher
from foundation.frameworks.operator import pod_restart_policy
from foundation.frameworks.mpi import CONFIG_MOUNT, is_gpu_launcher
from controller.jobs import conditions as cond
from controller.jobs import desired, journal
from controller.jobs.diff import of_type
from controller.jobs import status as st
from controller.jobs.kinds import Kind
from foundation.cluster import errors
from foundation import jsondata
from controller.runtime.informer import Informer
from foundation.cluster.kube import (
    CONFIGMAPS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    Resource,
)
from controller.runtime.writes import EXISTED, Writes
from foundation.frameworks.operator import MASTER_ROLE
from schemas import upstream

if TYPE_CHECKING:
    from controller.jobs.addons import Gang

KUBECTL_MOUNT = "/opt/kube"
CONFIG_VOLUME, KUBECTL_VOLUME = "mpi-job-config", "mpi-job-kubectl"


def _launcher(kind: Kind) -> Launcher:
    launcher = kind.adapter.launcher
    assert launcher is not None, f"{kind.name} has no launcher"
    return launcher


def _specs(job: dict[str, Any], kind: Kind) -> dict[str, Any]:
    return job["spec"][kind.facts.replica_specs]


def _slots(job: dict[str, Any]) -> int:
    slots = job["spec"].get("slotsPerWorker")
    return 1 if slots is None else int(slots)


def _worker_replicas(job: dict[str, Any], kind: Kind) -> int:
    worker = _specs(job, kind).get(_launcher(kind).workers)
    return int(worker.get("replicas") or 0) if isinstance(worker, dict) else 0


def _worker_name(job: dict[str, Any], kind: Kind, index: int) -> str:
    return desired.child_name(job["metadata"]["name"], _launcher(kind).workers, index=index)


def launcher_name(job: dict[str, Any], kind: Kind) -> str:
    """The launcher pod's name, and its default ServiceAccount's, Role's and RoleBinding's."""
    return f"{job['metadata']['name']}-{_launcher(kind).pod_suffix}"


def config_name(job: dict[str, Any], kind: Kind) -> str:
    return f"{job['metadata']['name']}-{_launcher(kind).config_suffix}"


def service_account_name(job: dict[str, Any], kind: Kind) -> str:
    template = _specs(job, kind)[_launcher(kind).replica_type].get("template") or {}
    return (template.get("spec") or {}).get("serviceAccountName") or launcher_name(job, kind)


def _meta(job: dict[str, Any], kind: Kind, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": job["metadata"]["namespace"],
        "labels": {"app": job["metadata"]["name"], upstream.OPERATOR_LABEL: kind.facts.operator_name},
        "ownerReferences": [desired.owner_reference(job, kind)],
    }


def config_data(job: dict[str, Any], kind: Kind, running_workers: list[str]) -> dict[str, str]:
    slots, gpu, launcher = _slots(job), is_gpu_launcher(job), launcher_name(job, kind)
    kubexec = f"#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n{KUBECTL_MOUNT}/kubectl exec ${{POD_NAME}}"
    if job["spec"].get("mainContainer"):
        kubexec += f" --container {job['spec']['mainContainer']}"
    kubexec += ' -- /bin/sh -c "$*"'
    hostfile = f"{launcher} slots={slots}\n" if gpu else ""
    hostfile += "".join(f"{_worker_name(job, kind, i)} slots={slots}\n" for i in range(_worker_replicas(job, kind)))
    discover = "#!/bin/sh"
    if gpu:
        discover += f"\necho {launcher}:{slots}\n"
    for pod_name in sorted(running_workers):
        discover += f"\necho {pod_name}:{slots}"
    return {"hostfile": hostfile, "kubexec.sh": kubexec, "discover_hosts.sh": discover}


def role_rules(job: dict[str, Any], kind: Kind) -> list[dict[str, Any]]:
    names = [_worker_name(job, kind, i) for i in range(_worker_replicas(job, kind))]
    exec_rule: dict[str, Any] = {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"]}
    if names:
        exec_rule["resourceNames"] = names
    return [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}, exec_rule]


def _pod(job: dict[str, Any], kind: Kind, replica_type: str, name: str, labels: dict[str, str]) -> dict[str, Any]:
    replica = _specs(job, kind)[replica_type]
    template = jsondata.copy(replica.get("template") or {})
    meta, spec = template.get("metadata") or {}, template.get("spec") or {}
    spec["restartPolicy"] = pod_restart_policy(replica)
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": job["metadata"]["namespace"],
        "labels": {**(meta.get("labels") or {}), **labels},
        "ownerReferences": [desired.owner_reference(job, kind)],
    }
    if meta.get("annotations"):
        metadata["annotations"] = meta["annotations"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _config_volume(job: dict[str, Any], kind: Kind, items: list[tuple[str, int]]) -> dict[str, Any]:
    return {"name": CONFIG_VOLUME, "configMap": {"name": config_name(job, kind), "items": [
        {"key": key, "path": key, "mode": mode} for key, mode in items]}}


def worker_pod(job: dict[str, Any], kind: Kind, *, index: int) -> dict[str, Any]:
    workers = _launcher(kind).workers
    pod = _pod(job, kind, workers, _worker_name(job, kind, index),
               desired.replica_labels(job, kind, replica_type=workers, index=index))
    spec = pod["spec"]
    container = spec["containers"][0]
    if not container.get("command"):
        container["command"], container["args"] = ["sleep"], ["365d"]
    container["volumeMounts"] = [*(container.get("volumeMounts") or []), {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT}]
    spec["volumes"] = [*(spec.get("volumes") or []), _config_volume(job, kind, [("kubexec.sh", 0o555)])]
    return pod


def launcher_pod(job: dict[str, Any], kind: Kind, *, options: desired.Options = desired.Options()) -> dict[str, Any]:
    """The launcher pod; the operator's init container that delivers kubectl is secured as
    `options` say (desired.secured: restricted, unless --upstream-init-containers)."""
    launcher, init = _launcher(kind), kind.adapter.operator_init
    assert init is not None and init.replica_type == launcher.replica_type, f"{kind.name}: no launcher init container"
    name = launcher_name(job, kind)
    labels = {**desired.base_labels(job, kind), upstream.TYPE_LABEL: launcher.replica_type.lower(),
              upstream.ROLE_LABEL: MASTER_ROLE}
    pod = _pod(job, kind, launcher.replica_type, name, labels)
    spec = pod["spec"]
    if not spec.get("serviceAccountName"):
        spec["serviceAccountName"] = name
    resources = {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    spec["initContainers"] = [*(spec.get("initContainers") or []), *desired.secured([{
        "name": init.name,
        "image": options.mpi_kubectl_delivery_image,
        "imagePullPolicy": "IfNotPresent",
        "env": [{"name": "TARGET_DIR", "value": KUBECTL_MOUNT}, {"name": "NAMESPACE", "value": job["metadata"]["namespace"]}],
        "volumeMounts": [{"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT}, {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT}],
        "resources": {"limits": dict(resources), "requests": dict(resources)},
    }], options)]
    container = spec["containers"][0]
    container["env"] = [*(container.get("env") or []), *kind.adapter.rendezvous_env(job, launcher.replica_type, 0)]
    container["volumeMounts"] = [*(container.get("volumeMounts") or []),
                                 {"name": KUBECTL_VOLUME, "mountPath": KUBECTL_MOUNT},
                                 {"name": CONFIG_VOLUME, "mountPath": CONFIG_MOUNT}]
    spec["volumes"] = [*(spec.get("volumes") or []), {"name": KUBECTL_VOLUME, "emptyDir": {}},
                       _config_volume(job, kind, [("kubexec.sh", 0o555), ("hostfile", 0o444), ("discover_hosts.sh", 0o555)])]
    return pod


class MPI:
    """The launcher capability plugged into the Reconciler (caches for its helper objects)."""

    def __init__(self, *, configmaps: Informer, serviceaccounts: Informer, roles: Informer, rolebindings: Informer) -> None:
        self.caches: dict[str, Informer] = {
            "configmaps": configmaps, "serviceaccounts": serviceaccounts, "roles": roles, "rolebindings": rolebindings,
        }
        self._foreign_sa: set[tuple[str, str]] = set()  # user-provided SAs we saw exist (AlreadyExists)

    def informers(self) -> list[Informer]:
        return list(self.caches.values())

    def reconcile(self, writes: Writes, ctx: st.Ctx, pods: list[dict[str, Any]], *, options: desired.Options,
                  gang: Gang | None) -> None:
        job, kind, launcher = ctx.job, ctx.kind, _launcher(ctx.kind)
        ns, name = ctx.namespace, launcher_name(ctx.job, ctx.kind)
        ctx.status.setdefault("startTime", cond.timestamp(ctx.now))
        pod = next((p for p in pods if p["metadata"]["name"] == name), None)
        phase = (pod.get("status") or {}).get("phase") if pod else None
        workers: list[dict[str, Any]] = []
        if phase not in ("Succeeded", "Failed"):
            self._ensure_service_account(writes, ctx)
            running = [p["metadata"]["name"] for p in of_type(pods, launcher.workers)
                       if (p.get("status") or {}).get("phase") == "Running"]
            self._ensure(writes, ctx, res=CONFIGMAPS, name=config_name(job, kind),
                         content={"data": config_data(job, kind, running)}, field="data")
            self._ensure(writes, ctx, res=ROLES, name=name, content={"rules": role_rules(job, kind)}, field="rules")
            binding = {
                "subjects": [{"kind": "ServiceAccount", "name": service_account_name(job, kind), "namespace": ns}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            }
            self._ensure(writes, ctx, res=ROLEBINDINGS, name=name, content=binding, field=None)
            workers = self._workers(writes, ctx, pods, gang=gang)
            if pod is None:
                created = launcher_pod(job, kind, options=options)
                if gang is not None:
                    gang.decorate(ctx, created, launcher.replica_type)
                writes.create(ctx, PODS, created)
        # upstream's MPIJob pass counts its pods by phase alone
        statuses = ctx.status.setdefault("replicaStatuses", {})
        statuses[launcher.replica_type] = st.compact(st.count([pod], phase_only=True)) if pod else {}
        statuses[launcher.workers] = st.compact(st.count(workers, phase_only=True))
        ctx.pods = {launcher.replica_type: [pod] if pod else [], launcher.workers: workers}

    def _workers(self, writes: Writes, ctx: st.Ctx, pods: list[dict[str, Any]], *,
                 gang: Gang | None) -> list[dict[str, Any]]:
        workers = _launcher(ctx.kind).workers
        wanted = _worker_replicas(ctx.job, ctx.kind)
        by_index: dict[int, dict[str, Any]] = {}
        existing = of_type(pods, workers)
        for pod in existing:
            try:
                index = int((pod["metadata"].get("labels") or {}).get(upstream.INDEX_LABEL, ""))
            except ValueError:
                continue
            if index >= wanted:
                if len(existing) > wanted and not pod["metadata"].get("deletionTimestamp"):
                    writes.delete(ctx, PODS, pod)
                    journal.scaled_down(ctx.key, pod["metadata"]["name"], workers, wanted)
            else:
                by_index[index] = pod
        for index in range(wanted):
            if index not in by_index:
                pod = worker_pod(ctx.job, ctx.kind, index=index)
                if gang is not None:
                    gang.decorate(ctx, pod, workers)
                writes.create(ctx, PODS, pod)
        return [by_index[i] for i in sorted(by_index)]

    def _ensure_service_account(self, writes: Writes, ctx: st.Ctx) -> None:
        name = service_account_name(ctx.job, ctx.kind)
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
                               f'Resource "{name}" of {res.kind} already exists and is not managed by {ctx.kind.name}'))
            raise errors.Conflict("reconcile", res.kind, ctx.namespace, name,
                                  f"exists and is not controlled by this {ctx.kind.name}")
        if field is not None and _normalize(current.get(field)) != _normalize(content[field]):
            writes.update(res, {**current, field: content[field]})


def _normalize(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_normalize(v) for v in value]
    return value
