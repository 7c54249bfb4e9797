"""The storage overlay: the job's volumes, mounted into every role's framework container.

`claim` mounts an existing PersistentVolumeClaim; `size` creates one named
`{job}-{volume}` (the name `rules.generated_names` checks for length) with the given
`storageClass` and `accessMode` (default ReadWriteOnce) and mounts it; `configMap`, `secret`,
`hostPath` and `emptyDir` write Kubernetes' own volume source of that name. `readOnly` is
written twice on a claim on purpose: on the mount, and on the claim's volume source, so the
kubelet attaches the volume read-only instead of only hiding it from one container (the other
sources have no such field: their mount says it).

Every replica type gets the volumes, not only the accelerated ones: parameter servers,
evaluators and the MPI launcher read the same data and checkpoints as the workers. The
volumes go into the framework's own container (by name, as lowering wrote it), never
into sidecars a `podTemplate` may add.
"""

from __future__ import annotations

from overlays import container_index, merge_ops
from schemas.bundle import Bundle, Component, JsonObject
from schemas.trainjob import Volume

NAME = "storage"
DEFAULT_ACCESS_MODE = "ReadWriteOnce"


def claim_name(bundle: Bundle, volume: Volume) -> str:
    return volume.claim if volume.claim is not None else f"{bundle.target.name}-{volume.name}"


def _claim(bundle: Bundle, volume: Volume) -> JsonObject:
    target = bundle.target
    meta: JsonObject = {"name": claim_name(bundle, volume), "namespace": target.namespace}
    if target.labels:
        meta["labels"] = dict(sorted(target.labels.items()))
    spec: JsonObject = {
        "accessModes": [volume.accessMode or DEFAULT_ACCESS_MODE],
        "resources": {"requests": {"storage": volume.size}},
    }
    if volume.storageClass:
        spec["storageClassName"] = volume.storageClass
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


def _volume(bundle: Bundle, volume: Volume) -> JsonObject:
    """The pod's volume of one source; only a claim's source takes readOnly (the others' mounts do)."""
    if volume.configMap is not None:
        return {"name": volume.name, "configMap": {"name": volume.configMap}}
    if volume.secret is not None:
        return {"name": volume.name, "secret": {"secretName": volume.secret}}
    if volume.hostPath is not None:
        return {"name": volume.name, "hostPath": {"path": volume.hostPath}}
    if volume.emptyDir is not None:
        return {"name": volume.name, "emptyDir": volume.emptyDir.model_dump(exclude_none=True)}
    source: JsonObject = {"claimName": claim_name(bundle, volume)}
    if volume.readOnly:
        source["readOnly"] = True
    return {"name": volume.name, "persistentVolumeClaim": source}


def _mount(volume: Volume) -> JsonObject:
    mount: JsonObject = {"name": volume.name, "mountPath": volume.mountPath}
    if volume.readOnly:
        mount["readOnly"] = True
    return mount


def apply(bundle: Bundle) -> Bundle:
    volumes = bundle.target.spec.storage
    claims = tuple(_claim(bundle, v) for v in volumes if v.size is not None)
    patches: list[JsonObject] = []
    if volumes:
        pod_volumes = [_volume(bundle, v) for v in volumes]
        mounts = [_mount(v) for v in volumes]
        container = bundle.program_container
        for _, spec_path in bundle.pod_templates():
            index = container_index(bundle.job, spec_path, container)
            patches += merge_ops(bundle.job, spec_path, {"volumes": pod_volumes})
            patches += merge_ops(bundle.job, f"{spec_path}/containers/{index}", {"volumeMounts": mounts})
    return bundle.with_component(Component(NAME, claims, tuple(patches)))
