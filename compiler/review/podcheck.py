"""The pods a job's operator will create, checked as the API server's pod validation would.

`compiler/review/podschema.py` judges each podTemplate field alone; a mistake can also lie between
layers: a podTemplate mount of a volume only the spec's storage would add (or none adds), a
sidecar port named like the framework's own (`pytorchjob-port`, which the Training Operator
looks up by name), an init container named like the one the operator adds, a mount at
/dev/shm that takes the place of `resources.sharedMemory`'s. So each replica type's pod is
built here as it will be created: lowering's template with the podTemplate (and environment
override) merged in, the storage overlay's volumes and mounts, and the operator's init
containers (adapter facts). The rules that need the whole pod run on it, and each problem is
reported at the podTemplate line that wrote it, the role's (`roles.<role>.podTemplate`,
merged last) before the job's (`policy.located`), or at the spec field that did.

Also here, being what the operator applies to those pods: a pod `restartPolicy` in the
podTemplate, which the operator always overwrites with the replica's (`policy.restart`,
ExitCode as Never), so it is refused instead of being silently lost; and `activeDeadline: 0`,
with which the operator fails the job as it starts. Only targets whose pods are made from the whole templates (kubeflow-v1) are
built; a Trainer v2 runtime has pods of its own. Jobs without a podTemplate skip the pods
before any import: lowering alone cannot make those mistakes.

Not a rule: a projected serviceAccountToken on a pod that names no ServiceAccount. Pod
validation alone refuses it, but a cluster's ServiceAccount admission plugin gives such a pod
`default` before validation, so it deploys (tests/compiler/review/test_pod_template_oracle.py judges
against a server with the plugin on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional

from compiler.diagnostics import Diagnostic
from compiler.podsecurity import as_dict, as_list
from compiler.reading.resolve import Target
from compiler.targets import api, roles
from compiler.targets.lowering import SHM_PATH

if TYPE_CHECKING:
    from foundation.frameworks.base import ReplicaPlan

CONTAINER_KINDS = ("initContainers", "containers")


def check(target: Target) -> Iterator[Diagnostic]:
    """Every whole-pod problem of one job in one environment (registered in `rules.RULES`)."""
    if not api(target.api).whole_pod_templates:
        return  # a Trainer v2 runtime makes the pods; its target's check judges the run policy
    yield from _deadline(target)
    if not roles.all_pod_patches(target.spec):
        return
    yield from _restart_policy(target)
    seen: set[Diagnostic] = set()  # one mistake shows in every replica type's pod: say it once
    for plan, pod in pods(target):
        for problem in _pod_rules(target, plan, pod):
            if problem not in seen:
                seen.add(problem)
                yield problem


_LAST: list[Any] = [None, []]  # the last target's pods: rules run target by target, two of them read these


def pods(target: Target) -> list[tuple["ReplicaPlan", dict[str, Any]]]:
    """(replica plan, pod template) for each replica type, as the operator will create its pods.
    Read-only for callers: the last target's are kept for the next rule that asks."""
    if _LAST[0] is target:
        return _LAST[1]
    _LAST[:] = [target, _build(target)]
    return _LAST[1]


def _build(target: Target) -> list[tuple["ReplicaPlan", dict[str, Any]]]:
    from foundation.frameworks import adapter
    from compiler.targets.lowering import pod_template

    fw = adapter(target.spec.framework)
    plans = fw.plan(target.spec)
    types = [plan.replica_type for plan in plans]
    out = []
    for plan in plans:
        # lowering's kept template, read only: what this adds goes into copies of the maps and
        # lists it changes (copying the whole template cost the review CPU: bench/README.md)
        template = pod_template(target.spec, plan, fw.facts, target, shared=True)
        spec = template.get("spec")
        if isinstance(spec, dict):
            spec = dict(spec)
            template = {**template, "spec": spec}
        else:
            spec = {}  # as before: what is added to no pod spec is dropped
        _add_storage(spec, target, roles.container(target.spec, plan, fw.facts.container))
        inits = fw.operator_init.containers(plan.replica_type, types) if fw.operator_init else []
        if inits:  # the operator puts its own first; only names matter to the rules here
            spec["initContainers"] = [{"name": name, "x-added-by": "operator"} for name in inits] + \
                as_list(spec.get("initContainers"))
        out.append((plan, template))
    return out


def _add_storage(spec: dict[str, Any], target: Target, container: str) -> None:
    """What overlays/storage.py adds to every pod: a volume per entry, mounted into the framework
    container (only names and paths: what the rules read). `spec` is the caller's; its
    containers are not (they are copied where they change)."""
    storage = target.spec.storage
    if not storage:
        return
    spec["volumes"] = as_list(spec.get("volumes")) + [{"name": v.name, "x-added-by": ("storage", i)}
                                                      for i, v in enumerate(storage)]
    containers = spec.get("containers")
    if not isinstance(containers, list):
        return
    spec["containers"] = containers = list(containers)  # the template's own list stays as it is
    for i, item in enumerate(containers):
        if as_dict(item).get("name") == container:
            containers[i] = item = dict(item)
            item["volumeMounts"] = as_list(item.get("volumeMounts")) + [
                {"name": v.name, "mountPath": v.mountPath, "x-added-by": ("storage", i)} for i, v in enumerate(storage)]


# --- positions: the line that wrote a pod field ---------------------------------------------

def _at(target: Target, plan: "ReplicaPlan", template: dict[str, Any], loc: tuple[Any, ...],
        item: Any) -> tuple[tuple[Any, ...], bool]:
    """Where `loc` (in the template) was written: a storage entry, the line of the job's or the
    role's podTemplate, or (False) only near it."""
    added = as_dict(item).get("x-added-by")
    if isinstance(added, tuple):
        return added, True
    from compiler.review.policy import located

    return located(loc, template, roles.pod_patches(target.spec, plan.role))


def _error(target: Target, plan: "ReplicaPlan", template: dict[str, Any], loc: tuple[Any, ...], item: Any,
           field: str, message: str, fix: str) -> Diagnostic:
    at, whole = _at(target, plan, template, loc, item)
    if whole and isinstance(item, dict) and field in item:
        at = at + (field,)
    return target.view.error(at, message, fix, prefer_key=not whole)


# --- the rules ------------------------------------------------------------------------------

def _containers(pod: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    for kind in CONTAINER_KINDS:
        for i, container in enumerate(as_list(pod.get(kind))):
            if isinstance(container, dict):
                yield ("spec", kind, i), container


def _pod_rules(target: Target, plan: "ReplicaPlan", template: dict[str, Any]) -> Iterator[Diagnostic]:
    pod = as_dict(template.get("spec"))
    yield from _container_names(target, plan, template, pod)
    yield from _mounts(target, plan, template, pod)
    yield from _ports(target, plan, template, pod)
    yield from _shared_memory(target, plan, template, pod)


def _container_names(target: Target, plan: "ReplicaPlan", template: dict[str, Any],
                     pod: dict[str, Any]) -> Iterator[Diagnostic]:
    replica_type = plan.replica_type
    first: dict[str, dict[str, Any]] = {}
    for loc, container in _containers(pod):
        name = container.get("name")
        if not isinstance(name, str):
            continue
        if name in first:
            other = first[name]
            if other.get("x-added-by") == "operator":
                yield _error(target, plan, template, loc, container, "name",
                             f"the Training Operator adds an init container named '{name}' to {replica_type} pods",
                             "give this container another name")
            else:
                yield _error(target, plan, template, loc, container, "name", f"container name '{name}' is used twice",
                             "give each container and init container its own name")
        else:
            first[name] = container


def _mounts(target: Target, plan: "ReplicaPlan", template: dict[str, Any], pod: dict[str, Any]) -> Iterator[Diagnostic]:
    volumes = [v.get("name") for v in as_list(pod.get("volumes")) if isinstance(v, dict)]
    volumes += api(target.api).added_volumes(plan.replica_type)  # the operator's own: mountable
    for loc, container in _containers(pod):
        for j, mount in enumerate(as_list(container.get("volumeMounts"))):
            if not isinstance(mount, dict):
                continue
            at = loc + ("volumeMounts", j)
            name = mount.get("name")
            if isinstance(name, str) and name not in volumes:
                have = ", ".join(str(v) for v in volumes) or "none"
                yield _error(target, plan, template, at, mount, "name",
                             f"container '{container.get('name')}' mounts volume '{name}', which the pod does not have"
                             f" (its volumes: {have})",
                             f"add a volume named {name} under podTemplate.spec.volumes, or mount one the pod has")


def _ports(target: Target, plan: "ReplicaPlan", template: dict[str, Any], pod: dict[str, Any]) -> Iterator[Diagnostic]:
    from foundation.frameworks import adapter

    facts = adapter(target.spec.framework).facts
    named: dict[str, str] = {}
    for loc, container in _containers(pod):
        for j, port in enumerate(as_list(container.get("ports"))):
            name = as_dict(port).get("name")
            if not isinstance(name, str) or not name:
                continue
            if name in named:
                own = name == facts.port_name
                yield _error(
                    target, plan, template, loc + ("ports", j), port, "name",
                    f"port name '{name}' is also used by container '{named[name]}'" + (
                        f" (the port the Training Operator finds {facts.kind} replicas by)" if own else "")
                    + "; port names must be unique in a pod",
                    "give the port another name, or leave it unnamed")
            else:
                named[name] = str(container.get("name"))
    yield from _framework_port(target, plan, template, pod, facts)


def _framework_port(target: Target, plan: "ReplicaPlan", template: dict[str, Any], pod: dict[str, Any],
                    facts: Any) -> Iterator[Diagnostic]:
    """The operator finds the framework's port by its name; without it the job never starts."""
    if facts.port_name is None:
        return
    for loc, container in _containers(pod):
        if loc[1] == "containers" and container.get("name") == facts.container:
            ports = [as_dict(p).get("name") for p in as_list(container.get("ports"))]
            if facts.port_name not in ports:
                yield _error(target, plan, template, loc + ("ports",), container.get("ports"), "",
                             f"container '{facts.container}' no longer has the port named '{facts.port_name}',"
                             f" which the Training Operator looks up to start a {facts.kind}",
                             f"keep its port {facts.port} named {facts.port_name}; add other ports beside it")


def _shared_memory(target: Target, plan: "ReplicaPlan", template: dict[str, Any],
                   pod: dict[str, Any]) -> Iterator[Diagnostic]:
    """resources.sharedMemory mounts its volume at /dev/shm in the framework container; a podTemplate
    mount there replaces it (strategic merge keys mounts by path), and the size is silently lost."""
    own = roles.resources(target.spec, plan)
    if own is None or not own.sharedMemory:
        return
    from compiler.targets.lowering import SHM_VOLUME

    for loc, container in _containers(pod):
        for j, mount in enumerate(as_list(container.get("volumeMounts"))):
            if isinstance(mount, dict) and mount.get("mountPath") == SHM_PATH and mount.get("name") != SHM_VOLUME:
                yield _error(target, plan, template, loc + ("volumeMounts", j), mount, "mountPath",
                             f"container '{container.get('name')}' mounts volume '{mount.get('name')}' at /dev/shm,"
                             " where resources.sharedMemory mounts its own; the shared-memory size would be lost",
                             "remove this mount (resources.sharedMemory sizes /dev/shm), or remove"
                             " resources.sharedMemory")


def _restart_policy(target: Target) -> Iterator[Diagnostic]:
    for at, patch in roles.all_pod_patches(target.spec):
        asked: Optional[Any] = as_dict(as_dict(patch).get("spec")).get("restartPolicy")
        if asked is None:
            continue
        role = at[1] if at[0] == "roles" else None
        own = target.spec.roles[role].restart if role is not None else None
        field = f"roles.{role}.restart" if own is not None else "policy.restart"
        restart = own if own is not None else target.spec.policy.restart
        if restart is not None:
            message = (f"pod restartPolicy {asked} conflicts with {field} {restart}, which the Training Operator"
                       " writes into every pod (ExitCode as Never)")
        else:
            message = ("the Training Operator overwrites a pod's restartPolicy with its replica's"
                       " (policy.restart, the operator's default when unset), so this setting would be lost")
        fix = (f"remove it from podTemplate and set roles.{role}.restart" if role is not None
               else "remove it from podTemplate and set policy.restart") + " (OnFailure, Never, ExitCode or Always)"
        yield target.view.error(at + ("spec", "restartPolicy"), message, fix)


def _deadline(target: Target) -> Iterator[Diagnostic]:
    """activeDeadlineSeconds 0: the operator fails a job past its deadline, so this one as it starts."""
    if target.spec.policy.activeDeadline == 0:
        yield target.view.error(("policy", "activeDeadline"), "a deadline of 0 seconds fails the job as soon as it"
                                " starts (the Training Operator ends a job past its activeDeadlineSeconds;"
                                " Kubernetes' own deadlines are at least 1 second)",
                                "write e.g. 90s, 30m or 24h, or remove it for no deadline")
