"""The first-class spec fields of a `kubeflow.org/v1` job: what lowering would write, read backwards.

`compiler/targets/lowering.py` and the overlays write each spec field to a known place of
the job (the image to the framework container of every role, `resources.memory` to its
requests and limits, `storage` to a PVC volume mounted in every role's container...). This
module reads a manifest from those places, in its canonical form (`sameness.canonical`:
defaults filled, so an unset restart policy reads as the kind's), and writes a field only
where the manifest says the same thing everywhere that field would reach: a volume mounted
in one role only stays out of `storage`. Whatever is left (a second container, hostNetwork,
a worker-only nodeSelector, limits apart from requests) is found by compiling the spec and
comparing (`compiler/importing/residual.py`), so a field read too eagerly here costs a longer
`podTemplate`, never a different job.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Optional

from compiler.importing.sameness import Amount, plain, same
from compiler.importing.shapes import Shape
from compiler.targets.lowering import SHM_PATH, SHM_VOLUME
from schemas.types import SHARED_MEMORY_CHOICES
from foundation.frameworks.base import Adapter, ReplicaPlan
from schemas.trainjob import API_VERSION
from schemas.types import DNS1035, ENV_NAME
from schemas.upstream import QUEUE_LABEL

Obj = dict[str, Any]
DEFAULT_GPU = "nvidia.com/gpu"
SHM_UNSIZED, SHM_HOST = SHARED_MEMORY_CHOICES  # sharedMemory: unsized | host
_DIGITS = re.compile(r"^[1-9][0-9]*$")


@dataclass(frozen=True)
class Roles:
    """The canonical manifest's pod templates by replica type, in plan order."""

    adapter: Adapter
    shape: Shape
    templates: dict[str, Obj]  # replica type -> canonical pod template

    def plans(self) -> tuple[ReplicaPlan, ...]:
        return self.shape.plans

    def main(self) -> ReplicaPlan:
        """The role whose pods run the program on the nodes (its container gives image and resources)."""
        return next((p for p in self.plans() if p.accelerated), self.plans()[0])

    def commanding(self) -> ReplicaPlan:
        """The role whose container gives spec.command and args: the main one when it runs the
        spec's command, else the first that does (an MPI launcher, whose workers run none)."""
        main = self.main()
        return main if main.inherit_command else next((p for p in self.plans() if p.inherit_command), main)

    def pod(self, replica_type: str) -> Obj:
        return self.templates[replica_type].get("spec") or {}

    def container(self, replica_type: str) -> Obj:
        """The framework container of a role (by the kind's name, else the first)."""
        containers = self.pod(replica_type).get("containers") or [{}]
        name = self.adapter.facts.container
        return next((c for c in containers if c.get("name") == name), containers[0])

    def alike(self, read: Any, plans: Optional[tuple[ReplicaPlan, ...]] = None) -> Any:
        """`read(replica type)` when it is the same for every role in `plans` (all by default), else None."""
        values = [read(p.replica_type) for p in (plans if plans is not None else self.plans())]
        first = values[0] if values else None
        return first if all(same(v, first) for v in values[1:]) else None


def gpu_asked(containers: list[Obj]) -> Optional[str]:
    """The GPU's resource name the job asks for: the first `*/gpu` limit of its containers."""
    for container in containers:
        for key in ((container.get("resources") or {}).get("limits") or {}):
            if str(key).endswith("/gpu"):
                return str(key)
    return None


def gpu_resource(containers: list[Obj]) -> str:
    return gpu_asked(containers) or DEFAULT_GPU


def resources(container: Obj, gpu: str) -> Obj:
    """spec.resources from a container (its requests already filled from its limits, as the API
    server does): the GPUs, cpu and memory requests, the limits where they differ from what those
    imply (no CPU limit, the memory request as the memory limit), and every other resource whose
    request is its limit as a device."""
    own = container.get("resources") or {}
    requests, limits = own.get("requests") or {}, own.get("limits") or {}
    out: Obj = {}
    count = limits.get(gpu)
    if count is not None and same(requests.get(gpu), count) and _DIGITS.match(str(plain(count))):
        out["gpu"] = int(str(plain(count)))
    for key in ("cpu", "memory"):
        if key in requests:
            out[key] = plain(requests[key])
    differ: Obj = {}
    if "cpu" in limits:
        differ["cpu"] = plain(limits["cpu"])
    if "memory" in requests and "memory" not in limits:
        differ["memory"] = None
    elif "memory" in limits and not same(limits["memory"], requests.get("memory")):
        differ["memory"] = plain(limits["memory"])
    if differ:
        out["limits"] = differ
    devices = {key: plain(value) for key, value in limits.items()
               if key not in ("cpu", "memory", gpu) and same(requests.get(key), value) and _device(key)}
    if devices:
        out["devices"] = devices
    return out


@functools.lru_cache(maxsize=256)
def _device(name: str) -> bool:
    """A resource `devices` takes (schemas.types.DeviceName: extended, hugepages, ephemeral-storage)."""
    from pydantic import TypeAdapter, ValidationError

    from schemas.types import DeviceName

    try:
        TypeAdapter(DeviceName).validate_python(name)
    except ValidationError:
        return False
    return True


def shared_memory(roles: Roles) -> Optional[str]:
    """resources.sharedMemory: the `dshm` volume every node role mounts at /dev/shm: a sized or
    unsized memory emptyDir, or the node's own /dev/shm (`host`)."""
    def read(rtype: str) -> Any:
        volume = next((v for v in roles.pod(rtype).get("volumes") or [] if v.get("name") == SHM_VOLUME), {})
        mounted = [m for m in roles.container(rtype).get("volumeMounts") or [] if m.get("name") == SHM_VOLUME]
        if mounted != [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]:
            return None
        empty, host = volume.get("emptyDir"), volume.get("hostPath")
        if set(volume) == {"name", "emptyDir"} and isinstance(empty, dict) and empty.get("medium") == "Memory" \
                and set(empty) <= {"medium", "sizeLimit"}:
            return plain(empty["sizeLimit"]) if "sizeLimit" in empty else SHM_UNSIZED
        if set(volume) == {"name", "hostPath"} and isinstance(host, dict) and host.get("path") == SHM_PATH \
                and not host.get("type"):
            return SHM_HOST
        return None

    nodes = tuple(p for p in roles.plans() if p.accelerated)
    return roles.alike(read, nodes) if nodes else None


def env(container: Obj) -> Obj:
    """spec.env: the container's variables up to the first one the spec cannot say (the rest,
    in order, stays in podTemplate, which appends after spec.env)."""
    out: Obj = {}
    for item in container.get("env") or []:
        name, source = item.get("name"), item.get("valueFrom")
        if not isinstance(name, str) or not ENV_NAME.match(name) or name in out:
            break
        if source is None and isinstance(item.get("value", ""), str):
            out[name] = item.get("value", "")
        elif source is not None and len(source) == 1 and _ref(source) is not None:
            out[name] = _ref(source)
        else:
            break
    return out


def _ref(source: Obj) -> Optional[Obj]:
    for field, spelled in (("secretKeyRef", "secret"), ("configMapKeyRef", "configMap")):
        ref = source.get(field)
        if isinstance(ref, dict) and set(ref) == {"name", "key"} and ref["name"] and ref["key"]:
            return {spelled: ref["name"], "key": ref["key"]}
    return None


def storage(roles: Roles) -> list[Obj]:
    """spec.storage: each claim every role has and mounts in its framework container alike."""
    out: list[Obj] = []
    main = roles.main().replica_type
    for volume in roles.pod(main).get("volumes") or []:
        claim = volume.get("persistentVolumeClaim")
        name = volume.get("name")
        if not isinstance(claim, dict) or set(volume) != {"name", "persistentVolumeClaim"} \
                or not DNS1035.match(str(name)) or name == SHM_VOLUME:
            continue

        def read(rtype: str, name: Any = name) -> Any:
            own = next((v for v in roles.pod(rtype).get("volumes") or [] if v.get("name") == name), None)
            mounts = [m for m in roles.container(rtype).get("volumeMounts") or [] if m.get("name") == name]
            return (own, mounts)

        found = roles.alike(read)
        if found is None or len(found[1]) != 1:
            continue
        mount = found[1][0]
        read_only = bool(claim.get("readOnly"))
        if set(mount) - {"name", "mountPath", "readOnly"} or bool(mount.get("readOnly")) != read_only \
                or set(claim) - {"claimName", "readOnly"}:
            continue
        entry: Obj = {"name": name, "mountPath": mount["mountPath"], "claim": claim["claimName"]}
        if read_only:
            entry["readOnly"] = True
        out.append(entry)
    return out


def scheduling(job: Obj, roles: Optional[Roles]) -> Obj:
    """spec.scheduling: the Kueue queue label, and (v1 kinds: `roles`) the PriorityClass and
    the placement every role has alike."""
    out: Obj = {}
    queue = ((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
    if queue:
        out["queue"] = queue
    if roles is None:
        return out
    policy = ((job.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy") or {}
    priority = policy.get("priorityClass")
    if priority and roles.alike(lambda t: roles.pod(t).get("priorityClassName")) == priority:
        out["priority"] = priority
    for field in ("nodeSelector", "tolerations"):
        value = roles.alike(lambda t, field=field: roles.pod(t).get(field))
        if value:
            out[field] = plain(value)
    gang = _gang(policy, roles)
    if gang is not None:
        out["gang"] = gang
    return out


def _gang(policy: Obj, roles: Roles) -> Any:
    """scheduling.gang: a schedulingPolicy with minAvailable and every pod on one gang scheduler
    (`true` for volcano, the environment default's default; the object with a timeout or for
    coscheduling). minAvailable and minResources are the compiler's to compute: a manifest whose
    figures differ is found by the comparison."""
    from overlays.scheduling import SCHEDULERS

    if policy.get("minAvailable") is None:
        return None
    name = roles.alike(lambda t: roles.pod(t).get("schedulerName"))
    scheduler = next((s for s in SCHEDULERS.values() if s.scheduler_name == name), None)
    if scheduler is None:
        return None
    timeout = policy.get("scheduleTimeoutSeconds")
    if scheduler.volcano and timeout is None:
        return True
    return dict(scheduler=scheduler.name, **({"timeoutSeconds": timeout} if isinstance(timeout, int) else {}))


def policy(kind_default: str, job: Obj, roles: Roles, replicas: dict[str, Obj]) -> Obj:
    out: Obj = {}
    restart = {str(r.get("restartPolicy")) for r in replicas.values()}
    if len(restart) == 1 and restart != {kind_default}:
        out["restart"] = restart.pop()
    run = (job.get("spec") or {}).get("runPolicy") or {}
    for field, spelled in (("backoffLimit", "backoffLimit"), ("activeDeadlineSeconds", "activeDeadline"),
                           ("ttlSecondsAfterFinished", "ttlAfterFinished")):
        if isinstance(run.get(field), int):
            out[spelled] = run[field]
    if run.get("cleanPodPolicy") not in (None, "None"):
        out["cleanPods"] = run["cleanPodPolicy"]
    if run.get("suspend") is True:
        out["suspend"] = True
    return out


def service_account(roles: Roles) -> Optional[Obj]:
    name = roles.alike(lambda t: roles.pod(t).get("serviceAccountName"))
    return {"name": name} if isinstance(name, str) and DNS1035.match(name) else None


def metadata(raw: Obj, canon: Obj, lifted_queue: bool) -> Obj:
    meta = canon.get("metadata") or {}
    out: Obj = {"name": meta.get("name")}
    if (raw.get("metadata") or {}).get("namespace"):
        out["namespace"] = meta["namespace"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if not (lifted_queue and k == QUEUE_LABEL)}
    if labels:
        out["labels"] = labels
    if meta.get("annotations"):
        out["annotations"] = dict(meta["annotations"])
    return out


def spec_fields(adapter: Adapter, canon: Obj, roles: Roles, gpu: str, replicas: dict[str, Obj]) -> Obj:
    """Every first-class field of the TrainJob spec (roles' own resources and commands included)."""
    main, commanding = roles.main().replica_type, roles.commanding().replica_type
    container, runner = roles.container(main), roles.container(commanding)
    spec: Obj = {"framework": adapter.name, "image": container.get("image")}
    for field in ("command", "args"):
        if runner.get(field):
            spec[field] = list(runner[field])
    if container.get("workingDir") and roles.alike(lambda t: roles.container(t).get("workingDir")):
        spec["workingDir"] = container["workingDir"]
    lifted_env = env(container)
    if lifted_env:
        spec["env"] = lifted_env
    if roles.shape.nodes != 1:
        spec["nodes"] = roles.shape.nodes
    spec_resources = resources(container, gpu)
    shm = shared_memory(roles)
    if shm:
        spec_resources["sharedMemory"] = shm
    if spec_resources:
        spec["resources"] = spec_resources
    own_roles = _roles(roles, gpu)
    if own_roles:
        spec["roles"] = own_roles
    spec.update(roles.shape.extra)
    return spec


def _roles(roles: Roles, gpu: str) -> Obj:
    """spec.roles: each extra role's replicas, its own resources and command if they differ."""
    out: Obj = {}
    runner = roles.commanding()
    spec_runner = roles.container(runner.replica_type)
    for role, rtype in roles.shape.role_types.items():
        plan = roles.shape.plan(rtype)
        replicas = roles.shape.roles.get(role, {}).get("replicas", 1)
        item: Obj = {"replicas": replicas} if replicas != 1 else {}
        container = roles.container(rtype)
        own = resources(container, gpu)
        if own and not plan.accelerated:
            item["resources"] = own
        if plan.inherit_command and rtype != runner.replica_type:
            for field in ("command", "args"):
                if container.get(field) and not same(container.get(field), spec_runner.get(field)):
                    item[field] = list(container[field])
        if item or role in roles.shape.roles:
            out[role] = item
    return out


def lift(raw: Obj, canon: Obj, adapter: Adapter, shape: Shape, templates: dict[str, Obj],
         replicas: dict[str, Obj]) -> Obj:
    """The TrainJob document of a canonical v1 job whose replicas have `shape`."""
    roles = Roles(adapter, shape, templates)
    gpu = gpu_resource([roles.container(p.replica_type) for p in shape.plans])
    spec = spec_fields(adapter, canon, roles, gpu, replicas)
    spec.update(_job_fields(adapter, canon, spec))
    volumes = storage(roles)
    if volumes:
        spec["storage"] = volumes
    sched = scheduling(canon, roles)
    if sched:
        spec["scheduling"] = sched
    pol = policy(adapter.facts.default_restart, canon, roles, replicas)
    if pol:
        spec["policy"] = pol
    account = service_account(roles)
    if account:
        spec["serviceAccount"] = account
    return {"apiVersion": API_VERSION, "kind": "TrainJob",
            "metadata": metadata(raw, canon, lifted_queue="queue" in sched), "spec": spec}


def _job_fields(adapter: Adapter, canon: Obj, spec: Obj) -> Obj:
    """processesPerNode, from the kind's own field for it (nprocPerNode, slotsPerWorker): the
    field whose value `processesPerNode` changes, read back when it is not what `auto` writes."""
    if not adapter.facts.processes_per_node:
        return {}
    auto, two = (adapter.job_fields(_probe(spec, ppn)) for ppn in ("auto", 2))
    job_spec = canon.get("spec") or {}
    for field, value in auto.items():
        if same(value, two.get(field)):
            continue
        have = job_spec.get(field)
        text = str(plain(have)) if have is not None and not isinstance(have, bool) else ""
        if not same(have, value) and _DIGITS.match(text):
            return {"processesPerNode": int(text)}
    return {}


def _probe(spec: Obj, processes: Any) -> Any:
    from compiler.importing.shapes import probe

    fields = {k: v for k, v in spec.items() if k in ("framework", "nodes", "resources", "elastic", "roles", "mpi")}
    return probe({**fields, "processesPerNode": processes})
