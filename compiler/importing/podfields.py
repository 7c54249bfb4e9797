"""Reading the spec's pod fields back: pull policy, framework port, pod labels and annotations, volumes.

Lowering writes `imagePullPolicy` to every role's framework container, `port` to its port of the
framework's name, `podLabels`/`podAnnotations` to every pod template's metadata and each
`storage` entry to a volume of every pod mounted in that container (`compiler/targets/lowering.py`,
`overlays/storage.py`). These functions read a manifest's canonical templates (`pods.Roles`) at
those places and give a field only where every role says the same, and only a value that is not
the API server's default (the canonical form filled the defaults in: a pull policy that is the
image's default, a ConfigMap's file mode 0644, are what the manifest left out). As everywhere in
lifting, a field read too eagerly costs a longer `podTemplate` in `residual`, never another job.
"""

from __future__ import annotations

from typing import Any, Optional

from compiler.importing.pods import Roles
from compiler.importing.sameness import plain
from compiler.targets.lowering import SHM_VOLUME
from foundation import poddefaults
from schemas.types import DNS1035

Obj = dict[str, Any]
MOUNT_KEYS = {"name", "mountPath", "readOnly"}


def pull_policy(roles: Roles) -> Optional[str]:
    """spec.imagePullPolicy: every role's container alike, and not what its image implies."""
    policy = roles.alike(lambda t: roles.container(t).get("imagePullPolicy"))
    implied = {poddefaults.image_pull_policy(roles.container(p.replica_type).get("image")) for p in roles.plans()}
    return policy if isinstance(policy, str) and implied != {policy} else None


def security_context(roles: Roles) -> Optional[Obj]:
    """spec.securityContext: every role's container alike."""
    context = roles.alike(lambda t: roles.container(t).get("securityContext"))
    return plain(context) if isinstance(context, dict) and context else None


def port(roles: Roles) -> Optional[int]:
    """spec.port: the framework port every role's container has, when not the operator's default."""
    facts = roles.adapter.facts
    if facts.port_name is None:
        return None

    def read(rtype: str) -> Any:
        ports = roles.container(rtype).get("ports") or []
        return [p for p in ports if isinstance(p, dict) and p.get("name") == facts.port_name]

    found = roles.alike(read)
    if not found or len(found) != 1 or not isinstance(found[0].get("containerPort"), int):
        return None
    number = found[0]["containerPort"]
    return number if number != facts.port else None


def pod_metadata(roles: Roles, job_labels: Obj) -> Obj:
    """spec.podLabels and podAnnotations: what every pod template's metadata has alike, labels
    the job's metadata does not already give the pods."""
    out: Obj = {}
    for part, field in (("labels", "podLabels"), ("annotations", "podAnnotations")):
        values = [(roles.templates[p.replica_type].get("metadata") or {}).get(part) or {} for p in roles.plans()]
        common = {k: v for k, v in values[0].items()
                  if isinstance(v, str) and all(other.get(k) == v for other in values[1:])}
        if part == "labels":
            common = {k: v for k, v in common.items() if k not in job_labels}
        if common:
            out[field] = common
    return out


def volume(pod_volume: Obj, mount: Obj) -> Optional[Obj]:
    """The spec.storage entry of one pod volume and its mount (of a source `overlays/storage.py`
    writes), or None."""
    shown = poddefaults.strip({"spec": {"volumes": [plain(pod_volume)]}})["spec"]["volumes"][0]
    name = shown.get("name")
    sources = set(shown) - {"name"}
    if not DNS1035.match(str(name)) or name == SHM_VOLUME or len(sources) != 1 or set(mount) - MOUNT_KEYS:
        return None
    entry: Obj = {"name": name, "mountPath": mount["mountPath"]}
    read_only = bool(mount.get("readOnly"))
    kind = sources.pop()
    source = shown[kind] if isinstance(shown[kind], dict) else {}
    if kind == "persistentVolumeClaim":
        if set(source) - {"claimName", "readOnly"} or bool(source.get("readOnly")) != read_only:
            return None
        entry["claim"] = source["claimName"]
    elif kind == "configMap" and set(source) == {"name"}:
        entry["configMap"] = source["name"]
    elif kind == "secret" and set(source) == {"secretName"}:
        entry["secret"] = source["secretName"]
    elif kind == "hostPath" and set(source) == {"path"}:
        entry["hostPath"] = source["path"]
    elif kind == "emptyDir" and not set(source) - {"medium", "sizeLimit"} and source.get("medium") in (None, "Memory"):
        entry["emptyDir"] = source
    else:
        return None
    if read_only:
        entry["readOnly"] = True
    return entry


def storage(roles: Roles) -> list[Obj]:
    """spec.storage: each volume every role has and mounts in its framework container alike
    (`volume` reads its source)."""
    out: list[Obj] = []
    main = roles.main().replica_type
    for pod_volume in roles.pod(main).get("volumes") or []:
        name = pod_volume.get("name")

        def read(rtype: str, name: Any = name) -> Any:
            own = next((v for v in roles.pod(rtype).get("volumes") or [] if v.get("name") == name), None)
            mounts = [m for m in roles.container(rtype).get("volumeMounts") or [] if m.get("name") == name]
            return (own, mounts)

        found = roles.alike(read)
        if found is None or len(found[1]) != 1:
            continue
        entry = volume(pod_volume, found[1][0])
        if entry is not None:
            out.append(entry)
    return out
