"""What one replica type's pods run: the job's spec with its `roles.<role>` entry over it.

A role entry (`schemas.trainjob.Role`) may set, for one replica type only, what the spec sets
for all: image, command, args, env, restart policy, resources, placement and a pod template
patch. Lowering, the target API and review ask here, one function per setting, so the
precedence is said once (placement is the scheduling overlay's, which sits below this layer): the role's value where it gives one, else the job's. Two
settings differ: `env` is merged by name (the role's value wins, the job's order first), and
`podTemplate` is a second strategic-merge patch applied after the job's.

Which entry belongs to a replica type is the adapter's fact: each `ReplicaPlan` carries its
role name (`worker` for Worker; paddle's parameter servers are the `Master` replica type under
the role `ps`). An extra role's own resources, command and args come in its plan already
(`foundation.frameworks.base.role_plan`); for a main role the job's are the default.
"""

from __future__ import annotations

from typing import Any, Optional

from foundation.frameworks.base import ReplicaPlan
from schemas.loader import Loc
from schemas.trainjob import EnvValue, Resources, Role, TrainJobSpec


def entry(spec: TrainJobSpec, plan: ReplicaPlan) -> Optional[Role]:
    """The role entry of the plan's replica type, if the spec has one."""
    return spec.roles.get(plan.role)


def image(spec: TrainJobSpec, plan: ReplicaPlan) -> Optional[str]:
    own = entry(spec, plan)
    return own.image if own is not None and own.image is not None else spec.image


def container(spec: TrainJobSpec, plan: ReplicaPlan, default: str) -> str:
    """The program container's name: the role's own (mpi), else the framework's."""
    own = entry(spec, plan)
    return own.container if own is not None and own.container is not None else default


def command(spec: TrainJobSpec, plan: ReplicaPlan) -> Optional[list[str]]:
    own = entry(spec, plan)
    if own is not None and own.command is not None:
        return own.command
    return plan.command if plan.command is not None else (spec.command if plan.inherit_command else None)


def args(spec: TrainJobSpec, plan: ReplicaPlan) -> Optional[list[str]]:
    own = entry(spec, plan)
    if own is not None and own.args is not None:
        return own.args
    return plan.args if plan.args is not None else (spec.args if plan.inherit_command else None)


def env(spec: TrainJobSpec, plan: ReplicaPlan) -> dict[str, EnvValue]:
    own = entry(spec, plan)
    if own is None or not own.env:
        return spec.env
    return {**spec.env, **own.env}


def restart(spec: TrainJobSpec, plan: ReplicaPlan) -> Optional[str]:
    own = entry(spec, plan)
    return own.restart if own is not None and own.restart is not None else spec.policy.restart


def resources(spec: TrainJobSpec, plan: ReplicaPlan) -> Optional[Resources]:
    """The role's own resources, else the job's per-node resources for a role `nodes` counts
    (an extra or one-pod role has none of the job's: no GPUs unless its entry asks)."""
    own = entry(spec, plan)
    if own is not None and own.resources is not None:
        return own.resources
    return spec.resources if plan.accelerated else plan.resources


def resources_loc(spec: TrainJobSpec, plan: ReplicaPlan) -> Loc:
    """Where in the spec `resources(spec, plan)` was written."""
    own = entry(spec, plan)
    return ("roles", plan.role, "resources") if own is not None and own.resources is not None else ("resources",)


def pod_patches(spec: TrainJobSpec, role: Optional[str]) -> list[tuple[Loc, dict[str, Any]]]:
    """(spec loc, patch) of the pod template patches the role's pods get, in merge order: the
    job's podTemplate, then the role's. Empty patches are left out."""
    out: list[tuple[Loc, dict[str, Any]]] = []
    if spec.podTemplate:
        out.append((("podTemplate",), spec.podTemplate))
    own = spec.roles.get(role) if role is not None else None
    if own is not None and own.podTemplate:
        out.append((("roles", role, "podTemplate"), own.podTemplate))
    return out


def all_pod_patches(spec: TrainJobSpec) -> list[tuple[Loc, dict[str, Any]]]:
    """Every pod template patch of the spec (the job's, then each role's), for field-level review."""
    out = pod_patches(spec, None)
    out += [(("roles", name, "podTemplate"), role.podTemplate) for name, role in spec.roles.items() if role.podTemplate]
    return out
