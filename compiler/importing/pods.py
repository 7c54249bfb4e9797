"""Reading one job's pods: what a spec field would have written into a pod template, read back.

`compiler/targets/lowering.py` and the overlays write each spec field to a known place of a
pod template (the image to the framework container, `resources.memory` to its requests and
limits, `storage` to a claim volume mounted in it...). The functions here read those places
of a manifest's templates, in their canonical form (`sameness.canonical`: Kubernetes' pod
defaults filled, requests from limits), for `lifting` (the job's fields) and `overrides`
(one role's). `Roles` holds the templates by replica type with the adapter's plan of them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Optional

from compiler.importing.sameness import plain, same
from compiler.importing.shapes import Shape
from compiler.targets.lowering import SHM_PATH, SHM_VOLUME
from foundation.frameworks.base import Adapter, ReplicaPlan
from schemas.types import DNS1035, ENV_NAME, SHARED_MEMORY_CHOICES

Obj = dict[str, Any]
DEFAULT_GPU = "nvidia.com/gpu"
SHM_UNSIZED, SHM_HOST = SHARED_MEMORY_CHOICES  # sharedMemory: unsized | host
DIGITS = re.compile(r"^[1-9][0-9]*$")


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
    if count is not None and same(requests.get(gpu), count) and DIGITS.match(str(plain(count))):
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


def role_shared_memory(roles: Roles, replica_type: str) -> Optional[str]:
    """A role's /dev/shm as resources.sharedMemory: the `dshm` volume its framework container
    mounts at /dev/shm, a sized or unsized memory emptyDir, or the node's own (`host`)."""
    volume = next((v for v in roles.pod(replica_type).get("volumes") or [] if v.get("name") == SHM_VOLUME), {})
    mounted = [m for m in roles.container(replica_type).get("volumeMounts") or [] if m.get("name") == SHM_VOLUME]
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


def shared_memory(roles: Roles) -> Optional[str]:
    """resources.sharedMemory: the /dev/shm every node role has alike."""
    nodes = tuple(p for p in roles.plans() if p.accelerated)
    return roles.alike(lambda t: role_shared_memory(roles, t), nodes) if nodes else None


def role_resources(roles: Roles, replica_type: str, gpu: str) -> Obj:
    """All a role's resources as the spec says them, its /dev/shm included."""
    out = resources(roles.container(replica_type), gpu)
    shm = role_shared_memory(roles, replica_type)
    if shm:
        out["sharedMemory"] = shm
    return out


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
