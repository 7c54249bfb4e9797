"""Cross-field rules: what one field cannot know about another.

The models check each field alone; these rules need the framework table, the whole
spec or the environment (roles a framework accepts, elastic only where its adapter says, GPU
types the environment knows, names that stay within 63 characters once the operator
appends `-worker-12`). Each rule is a small function `(target) -> diagnostics`
registered in `RULES`, so adding one is one function and one line.
"""

from __future__ import annotations

from typing import Callable, Iterator

from compiler import strategic
from compiler.diagnostics import Diagnostic
from foundation.frameworks import ADAPTERS, adapter
from foundation.frameworks.base import Facts
from compiler.reading.resolve import Target
from compiler.review import admission_review, podcheck, podrules, podschema, policy, resources
from compiler.targets import api, roles
from compiler.targets.lowering import SHM_PATH, SHM_VOLUME
from schemas.loader import Loc
from schemas.marks import RESTART_SCOPE
from schemas.trainjob import FRAMEWORKS

NAME_LIMIT = 63
POD_TEMPLATE_KEYS = ("metadata", "spec")


def _roles(target: Target) -> Iterator[Diagnostic]:
    fw = adapter(target.spec.framework)
    facts = fw.facts
    for role, entry in target.spec.roles.items():
        if role not in facts.roles:
            yield target.view.error(
                ("roles", role),
                f"{facts.name} has no role '{role}'",
                f"roles of {facts.name}: {', '.join(facts.roles)}",
                prefer_key=True,
            )
        elif entry.replicas is not None and role not in facts.allowed_roles:
            yield from _role_replicas(target, role, entry.replicas)
        elif role in facts.main_roles and role not in _possible_roles(target):
            yield target.view.error(
                ("roles", role), f"this {facts.kind} has no {role} pods, so these settings would apply to none",
                f"remove roles.{role}, or set them under roles.{_possible_roles(target)[0]}", prefer_key=True)
        if entry.container is not None and facts.container_by_name and entry.container != facts.container:
            yield target.view.error(
                ("roles", role, "container"),
                f"the operator of {facts.kind} finds the program container by its name, {facts.container}",
                "remove container (only an MPI job's operator runs its first container whatever its name)")


def _role_replicas(target: Target, role: str, replicas: int) -> Iterator[Diagnostic]:
    fw = adapter(target.spec.framework)
    facts = fw.facts
    if role in facts.removable_roles and replicas == 0:
        return
    if role in facts.fixed_roles and replicas == 1:
        return  # what it always is (a launcher written with replicas: 1 stays valid)
    if role in facts.fixed_roles:
        title = fw.launcher.title if fw.launcher is not None and fw.launcher.role == role else f"the {role}"
        what, fix = f"{title} is one pod of every {facts.kind}", "remove replicas"
    else:
        what, fix = f"{role} is a role nodes counts", "remove replicas and set nodes"
        if role in facts.removable_roles:
            fix = f"remove replicas (replicas: 0 leaves the {role} out), or set nodes"
    yield target.view.error(("roles", role, "replicas"), f"{what}, so it takes no replicas", fix)


def _possible_roles(target: Target) -> list[str]:
    """The roles the job has at 2 nodes or more (pytorch's master is never there when elastic)."""
    spec = target.spec
    more = spec if spec.nodes > 1 else spec.model_copy(update={"nodes": 2})
    return [plan.role for plan in adapter(spec.framework).plan(more)]


def _frameworks_with(fact: Callable[[Facts], bool]) -> list[str]:
    """The frameworks whose facts have it, in table order: what a message offers instead."""
    return [fw.name for fw in ADAPTERS.values() if fact(fw.facts)]


def _elastic(target: Target) -> Iterator[Diagnostic]:
    spec = target.spec
    if spec.elastic is None:
        return
    if not adapter(spec.framework).facts.elastic:
        able = _frameworks_with(lambda facts: facts.elastic)
        yield target.view.error(
            ("elastic",), f"elastic training is {' and '.join(able)} only, not {spec.framework}",
            f"remove elastic or use framework: {' or '.join(able)}", prefer_key=True,
        )
    elif not spec.elastic.minNodes <= spec.nodes <= spec.elastic.maxNodes:
        yield target.view.error(
            ("nodes",),
            f"nodes ({spec.nodes}) is outside elastic minNodes..maxNodes"
            f" ({spec.elastic.minNodes}..{spec.elastic.maxNodes})",
            "set nodes to the starting size, between minNodes and maxNodes",
        )


def _processes(target: Target) -> Iterator[Diagnostic]:
    spec = target.spec
    if isinstance(spec.processesPerNode, int) and not adapter(spec.framework).facts.processes_per_node:
        able = _frameworks_with(lambda facts: facts.processes_per_node)
        yield target.view.error(
            ("processesPerNode",),
            f"processesPerNode only applies to {' and '.join(able)}, not {spec.framework}",
            "remove it; start several processes from your command instead",
        )


def _gpu_type(target: Target) -> Iterator[Diagnostic]:
    for at, asked in resources.asked(target):
        gpu_type = asked.gpuType
        if gpu_type is None:
            continue
        known = sorted(target.environment.gpuTypes)
        if not known:
            yield target.view.error(
                at + ("gpuType",),
                f"gpuType '{gpu_type}' needs a gpuTypes table in environment '{target.env_name}'",
                "declare gpuTypes for this environment in trainforge.yaml, or remove gpuType",
            )
        elif gpu_type not in known:
            yield target.view.error(
                at + ("gpuType",),
                f"environment '{target.env_name}' has no GPU type '{gpu_type}'",
                f"use one of {', '.join(known)}",
            )


def _storage(target: Target) -> Iterator[Diagnostic]:
    names: set[str] = set()
    paths: set[str] = set()
    for i, volume in enumerate(target.spec.storage):
        if volume.name in names:
            yield target.view.error(("storage", i, "name"), f"volume name '{volume.name}' is used twice", "give each volume its own name")
        if volume.mountPath in paths:
            yield target.view.error(("storage", i, "mountPath"), f"mountPath '{volume.mountPath}' is used twice", "mount each volume at its own path")
        if volume.name == SHM_VOLUME or volume.mountPath == SHM_PATH:
            yield target.view.error(("storage", i, "name"), "dshm and /dev/shm are reserved", "use resources.sharedMemory for /dev/shm")
        names.add(volume.name)
        paths.add(volume.mountPath)


_SHAPES = {type(None): "empty (null)", list: "a list", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _pod_template(target: Target) -> Iterator[Diagnostic]:
    for at, patch in roles.all_pod_patches(target.spec):
        yield from _pod_template_patch(target, at, patch)


def _pod_template_patch(target: Target, at: Loc, patch: dict) -> Iterator[Diagnostic]:
    name = ".".join(map(str, at))
    for key, value in patch.items():
        if key not in POD_TEMPLATE_KEYS:
            yield target.view.error(
                at + (key,),
                f"{name} is a pod template patch; '{key}' is not one of its fields",
                f"put pod fields under {name}.spec and labels under {name}.metadata",
                prefer_key=True,
            )
        elif not isinstance(value, dict):
            # null means "delete" in a strategic merge: an empty `spec:` would remove the
            # whole pod spec (containers included) and leave a job no cluster accepts
            yield target.view.error(
                at + (key,),
                f"{name}.{key} must be a mapping, not {_SHAPES.get(type(value), 'a scalar')}",
                f"write fields under {name}.{key} or remove it",
                prefer_key=True,
            )
    for problem in strategic.problems(patch):
        yield target.view.error(at + problem.loc, problem.message, problem.fix, prefer_key=True)


def _own_marks(target: Target) -> Iterator[Diagnostic]:
    """The restart-scope annotation is the compiler's, written from policy.restartScope where the
    environment's controller acts on it; one written by hand would bypass that check."""
    if RESTART_SCOPE in target.annotations:
        line, col = target.doc.position(("metadata", "annotations", RESTART_SCOPE), prefer_key=True)
        yield Diagnostic(
            target.doc.file, line, col, f"metadata.annotations.{RESTART_SCOPE}",
            f"{RESTART_SCOPE} is written by the compiler from spec.policy.restartScope",
            "remove the annotation and set spec.policy.restartScope: job",
        )


def _target_api(target: Target) -> Iterator[Diagnostic]:
    """What the environment's target cannot express (compiler/targets)."""
    yield from api(target.api).check(target)


def _target_fields(target: Target) -> Iterator[Diagnostic]:
    """A spec field that only other targets read (`mpi`: the mpi-operator's MPIJob) would be
    dropped here without a word, so it is an error with the target that takes it."""
    from compiler.targets import TARGETS, supporting

    own = api(target.api).own_fields
    framework, env = target.spec.framework, target.env_name
    for name, other in TARGETS.items():
        for field in other.own_fields:
            if field in own or getattr(target.spec, field) is None:
                continue
            runs = name in supporting(framework)
            yield target.view.error(
                (field,),
                f"{field} sets the {name} target's job, and environment '{env}' targets {target.api}"
                if runs else f"{field} sets the {name} target's job, which runs framework"
                f" {', '.join(f for f in FRAMEWORKS if other.supports(f))} only, not {framework}",
                (f"set environments.{env}.target: {name} in trainforge.yaml, or remove {field} (or unset it for this"
                 f" environment with environments.{env}.{field}: null)") if runs else f"remove {field}",
                prefer_key=True,
            )


def generated_names(target: Target) -> list[str]:
    """Every object name the operator (or, under trainer-v2, JobSet) will derive from the job name."""
    # a new PVC's name `{job}-{volume}` is a DNS subdomain (253 characters): never over
    return [target.name, *api(target.api).pod_names(target)]


def _name_length(target: Target) -> Iterator[Diagnostic]:
    too_long = [n for n in generated_names(target) if len(n) > NAME_LIMIT]
    if too_long:
        longest = max(too_long, key=len)
        room = NAME_LIMIT - (len(longest) - len(target.name))
        line, col = target.doc.position(("metadata", "name"), prefer_key=False)
        yield Diagnostic(
            target.doc.file, line, col, "metadata.name",
            f"generated name '{longest}' is {len(longest)} characters; Kubernetes allows {NAME_LIMIT}",
            f"shorten the job name to at most {room} characters",
        )


RULES: tuple[Callable[[Target], Iterator[Diagnostic]], ...] = (
    _roles,
    _elastic,
    _processes,
    _gpu_type,
    resources.check,
    _storage,
    _pod_template,
    _own_marks,
    podschema.check,
    _name_length,
    podrules.check,
    podcheck.check,
    admission_review.check,
    _target_api,
    _target_fields,
    policy.check,
)


def check(target: Target) -> list[Diagnostic]:
    return [d for rule in RULES for d in rule(target)]
