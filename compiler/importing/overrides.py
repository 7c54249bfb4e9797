"""Per-role settings: what one replica type's pods have that the job's fields do not give them.

The job's fields come from its main role (`lifting.spec_fields`); every other role whose pods
differ gets a `roles.<role>` entry with what differs, as the spec's per-role fields say it
(`compiler/targets/roles.py` reads them the same way round): its image, command and args
(`[]`: the image's entrypoint where the job's command would reach it), env (merged over the
job's), restart policy, resources (replacing the job's per-node ones, /dev/shm included), an MPI
job's container name, and
placement (each replacing the job's; `{}`/`[]` for none where the job has some); an extra
role's replica count; and tensorflow's `chief: {replicas: 0}`. What still differs goes into
the role's own `podTemplate`, found by comparing (`run.patch_spec`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.importing.pods import Roles, env, role_resources
from compiler.importing.sameness import plain, same

if TYPE_CHECKING:
    from compiler.importing.kinds import JobKind

Obj = dict[str, Any]
PLACEMENT = {"nodeSelector": dict, "tolerations": list, "affinity": dict}


def entries(kind: "JobKind", roles: Roles, spec: Obj, gpu: str, replicas: dict[str, Obj]) -> Obj:
    """spec.roles for `spec` (the job's fields): one entry per role whose pods differ."""
    out: Obj = {}
    for plan in roles.plans():
        entry: Obj = {}
        count = roles.shape.roles.get(plan.role, {}).get("replicas")
        if count is not None and count != 1:
            entry["replicas"] = count
        container = roles.container(plan.replica_type)
        facts = kind.adapter.facts
        if not facts.container_by_name and container.get("name") != facts.container:
            entry["container"] = container.get("name")  # an MPI job's container, named by its author
        if container.get("image") != spec.get("image"):
            entry["image"] = container.get("image")
        for field in ("command", "args"):
            given = spec.get(field) if plan.inherit_command else None
            have = container.get(field)
            if not same(have or None, given or None):
                entry[field] = list(have or [])
        own_env = {k: v for k, v in env(container).items() if not same(v, (spec.get("env") or {}).get(k))}
        if own_env:
            entry["env"] = own_env
        restart = replicas[plan.replica_type].get("restartPolicy")
        if restart != ((spec.get("policy") or {}).get("restart") or kind.default_restart(plan.replica_type)):
            entry["restart"] = restart
        resources = role_resources(roles, plan.replica_type, gpu)
        if not same(resources, spec.get("resources", {}) if plan.accelerated else {}):
            entry["resources"] = resources
        placement = _placement(roles.pod(plan.replica_type), spec.get("scheduling") or {})
        if placement:
            entry["scheduling"] = placement
        if entry or plan.role in roles.shape.roles:
            out[plan.role] = entry
    for role, asked in roles.shape.roles.items():  # a main role left out (tensorflow: no Chief)
        if asked.get("replicas") == 0:
            out[role] = {"replicas": 0}
    return out


def _placement(pod: Obj, job: Obj) -> Obj:
    out: Obj = {}
    for field, empty in PLACEMENT.items():
        have, given = pod.get(field), job.get(field)
        if not same(have or None, given or None):
            out[field] = plain(have) if have else empty()
    return out
