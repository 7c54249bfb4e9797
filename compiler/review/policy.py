"""Project policy: what the platform team allows, checked on every job in every environment.

The policy comes from `trainforge.yaml` (`policy`, or an environment's own `policy`,
which replaces it there) and is checked like any other cross-field rule, so violations
are ordinary diagnostics at the job's offending field: GPUs over all pods
(`maxGpusPerJob`; an elastic job counts at `maxNodes`, the size it may grow to), the
namespace (`allowedNamespaces`), `requiredLabels` (at `metadata.labels`, or `metadata`
when there are none) and the Pod Security Standards level (`podSecurity`, default
baseline; the controls live in `compiler/podsecurity.py`) on every pod template the job
compiles to, reported at the `podTemplate` field that wrote the offence (a role's own, or the
job's; `resources.sharedMemory: host` at that field) (a required setting a
misspelled key meant to write, `runAsNonroot`, is left to compiler/review/podschema.py's
did-you-mean: one mistake, one error, the cause). `allowPrivileged`
is the deprecated spelling of `podSecurity: privileged` (a warning on the project file).
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from compiler import podsecurity, strategic
from compiler.diagnostics import Diagnostic
from foundation.frameworks import adapter
from foundation.frameworks.base import (
    INIT_SECURITY_CONTEXT,
    OperatorInit,
    ReplicaPlan,
    operator_init_container,
)
from compiler.reading.resolve import Target
from compiler.review import podschema
from compiler.targets import api, roles
from compiler.review.resources import asked as asked_resources
from compiler.targets.lowering import SHM_VOLUME, pod_template
from schemas.loader import Document, Loc
from schemas.project import Project


def _where(target: Target) -> str:
    """Names the environment when its own policy sets the limit, since limits differ.

    Yes/no rules (labels, host access) never name it: the same violation then reads the
    same in every environment and is reported once."""
    if target.environment.policy is not None:
        return f" in environment '{target.env_name}'"
    return ""


def _gpu_count(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:  # not a whole number: the API server refuses it for an extended resource anyway
        return 0


def pod_gpus(template: dict[str, Any], gpu_resource: str) -> int:
    """GPUs one pod asks for, as the scheduler counts them: the containers' sum, or the
    largest init container if that is more; limits, else requests; the environment's GPU
    resource and any other `*/gpu` a podTemplate names."""
    def one(container: Any) -> int:
        resources = container.get("resources") if isinstance(container, dict) else None
        if not isinstance(resources, dict):
            return 0
        asked = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
        return sum(_gpu_count(v) for k, v in asked.items() if k == gpu_resource or str(k).endswith("/gpu"))
    pod = template.get("spec") or {}
    return max(sum(one(c) for c in pod.get("containers") or []),
               max((one(c) for c in pod.get("initContainers") or []), default=0))


def total_gpus(target: Target, *, with_pod_template: bool = True) -> int:
    """GPUs over all pods, from the pod templates lowering writes (`podTemplate` included,
    so GPUs added through the escape hatch count); an elastic job at maxNodes."""
    spec = target.spec
    if not with_pod_template:
        spec = spec.model_copy(update={"podTemplate": {}, "roles": {
            name: role.model_copy(update={"podTemplate": {}}) for name, role in spec.roles.items()}})
    fw = adapter(spec.framework)
    total = 0
    for plan in fw.plan(spec):
        replicas = plan.replicas
        if plan.accelerated and spec.elastic is not None:
            replicas = spec.elastic.maxNodes
        total += replicas * pod_gpus(pod_template(spec, plan, fw.facts, target, shared=True),
                                        target.environment.gpuResource)
    return total


def _gpu_loc(target: Target, total: int, limit: int) -> Loc:
    patches = roles.all_pod_patches(target.spec)
    if patches and total_gpus(target, with_pod_template=False) <= limit:
        return patches[0][0]  # the escape hatch is what adds the GPUs over the limit
    if target.spec.resources.gpu:
        return ("resources", "gpu")
    for name, role in target.spec.roles.items():
        if role.resources is not None and role.resources.gpu:
            return ("roles", name, "resources", "gpu")
    return ("resources",)


def _max_gpus(target: Target) -> Iterator[Diagnostic]:
    limit = target.policy.maxGpusPerJob
    if limit is None:
        return
    total = total_gpus(target)
    if total > limit:
        loc = _gpu_loc(target, total, limit)
        yield target.view.error(
            loc,
            f"the job uses {total} GPUs over all pods; the policy{_where(target)} allows at most {limit}",
            "lower nodes or resources.gpu (and GPUs in podTemplate), or ask for a higher policy.maxGpusPerJob",
            prefer_key=loc[-1] == "podTemplate",
        )


def _metadata_error(target: Target, loc: Loc, message: str, fix: str, *, prefer_key: bool) -> Diagnostic:
    if loc not in target.doc.key_pos:  # not written at all: point at metadata itself
        loc, prefer_key = ("metadata",), True
    line, col = target.doc.position(loc, prefer_key=prefer_key)
    return Diagnostic(target.doc.file, line, col, ".".join(loc), message, fix)


def _namespace(target: Target) -> Iterator[Diagnostic]:
    allowed = target.policy.allowedNamespaces
    if allowed is None or target.namespace in allowed:
        return
    yield _metadata_error(
        target,
        ("metadata", "namespace"),
        f"namespace '{target.namespace}' is not allowed by the policy{_where(target)}",
        f"set metadata.namespace to one of {', '.join(allowed)}",
        prefer_key=False,
    )


def _labels(target: Target) -> Iterator[Diagnostic]:
    for key in target.policy.requiredLabels:
        if key not in target.labels:
            yield _metadata_error(
                target,
                ("metadata", "labels"),
                f"label '{key}' is required by the policy",
                f"add {key}: <value> under metadata.labels",
                prefer_key=True,
            )


# the restricted settings `policy.podSecurityDefaults` writes when a template leaves them unset
_DEFAULTABLE = {"Privilege Escalation", "Seccomp", "Capabilities"}


def located(loc: Loc, merged: dict[str, Any], patches: list[tuple[Loc, dict[str, Any]]]) -> tuple[Loc, bool]:
    """`patch_loc` over the patches a template got (`roles.pod_patches`: the job's podTemplate, then
    the role's): the last one that wrote the whole path, else near where the setting belongs in the
    last patch (the job's podTemplate when there is none)."""
    for prefix, patch in reversed(patches):
        at, whole = patch_loc(loc, merged, patch, prefix)
        if whole:
            return at, True
    prefix, patch = patches[-1] if patches else (("podTemplate",), {})
    return patch_loc(loc, merged, patch, prefix)


def patch_loc(loc: Loc, merged: dict[str, Any], patch: dict[str, Any],
              prefix: Loc = ("podTemplate",)) -> tuple[Loc, bool]:
    """Where in the patch at `prefix` (the job's `podTemplate`) the merged template's `loc` was written: list items are found
    by their merge key (the template's containers come first, the patch's may be in another
    order). Returns the spec-relative loc and whether the whole path is in the patch; if not,
    the path runs on by field names to where the setting belongs, and stops at a list item
    the patch does not have (a container only lowering wrote)."""
    out: Loc = prefix
    node_m: Any = merged
    node_p: Any = patch
    field = ""
    for i, step in enumerate(loc):
        if isinstance(step, int):
            items_m = node_m if isinstance(node_m, list) else []
            items_p = node_p if isinstance(node_p, list) else []
            item = items_m[step] if step < len(items_m) else None
            key = strategic.MERGE_KEYS.get(field)
            if key and isinstance(item, dict):
                found = [j for j, p in enumerate(items_p) if isinstance(p, dict) and p.get(key) == item.get(key)]
                j = found[0] if found else None
            else:
                j = step if step < len(items_p) else None
            if j is None:
                return out, False
            out, node_m, node_p = out + (j,), item, items_p[j]
        else:
            if isinstance(node_p, dict) and node_p.get("$patch") == "replace" and step not in node_p:
                return out, False  # the map the patch replaced is where the setting went
            if not isinstance(node_p, dict) or step not in node_p:
                rest = loc[i:]
                cut = next((k for k, s in enumerate(rest) if isinstance(s, int)), len(rest))
                return out + tuple(rest[:cut]), False
            out = out + (step,)
            node_m = node_m.get(step) if isinstance(node_m, dict) else None
            node_p = node_p[step]
            field = step
    return out, True


def _fix(target: Target, finding: podsecurity.Finding) -> str:
    lower = "privileged" if finding.level == "baseline" else "baseline"
    if finding.missing and finding.control in _DEFAULTABLE and not target.policy.podSecurityDefaults:
        return f"{finding.fix}, or set policy.podSecurityDefaults: true to have the compiler write it"
    return f"{finding.fix}, or ask for policy.podSecurity: {lower} in trainforge.yaml"


def _pod_security_where(target: Target) -> str:
    policy = target.environment.policy
    return _where(target) if policy is not None and policy.podSecurity is not None else ""


def _pod_security(target: Target) -> Iterator[Diagnostic]:
    """Every compiled pod template against the level's Pod Security Standards controls."""
    level = target.policy.pod_security()
    if level == "privileged" or (level == "baseline" and not roles.all_pod_patches(target.spec)
                                 and not _host_shm(target)):
        # lowering alone writes nothing baseline forbids (names, images, env, resources, container
        # ports, a memory emptyDir; test_pod_security_admission holds it for every framework) but
        # the node's /dev/shm, and skipping the templates there saves much of a build's CPU (bench/README.md)
        return
    spec = target.spec
    fw = adapter(spec.framework)
    plans = [p for p in fw.plan(spec) if p.replicas > 0]
    types = {p.replica_type for p in plans}
    where = _pod_security_where(target)
    operator_init_containers = api(target.api).operator_init_containers
    for plan in plans:
        template = pod_template(spec, plan, fw.facts, target, shared=True)  # read, never changed
        injected = operator_init_containers(fw.facts.kind, plan.replica_type, types)
        if injected:  # checked as the controller will create them (a copy: the template is the job's)
            template = {**template, "spec": {**template["spec"], "initContainers": [
                *(template["spec"].get("initContainers") or []),
                *(operator_init_container(n, target.controller) for n in injected)]}}
        operator_refusals: set[str] = set()
        for finding in podsecurity.findings(template, level):
            if finding.container in injected:
                operator_refusals.add(finding.control)
                continue
            shm = _shm_finding(target, plan, template, finding)
            if shm is not None:
                yield shm
                continue
            patches = roles.pod_patches(spec, plan.role)
            loc, whole = located(finding.loc, template, patches)
            if finding.missing and not whole and loc[-1] == finding.loc[-1] \
                    and any(podschema.misspelled(patch, loc[len(at):]) for at, patch in patches if loc[:len(at)] == at):
                continue  # a misspelled key wrote it (runAsNonroot): its did-you-mean is the fix, reported first
            container = f" in container '{finding.container}'" if finding.container else ""
            yield target.view.error(
                loc,
                f"pod security level '{level}'{where} forbids {finding.what}{container} ({finding.control})",
                _fix(target, finding),
                prefer_key=True,
            )
        if operator_refusals and fw.operator_init is not None:
            yield _operator_refusal(target, fw.operator_init, plan.replica_type, injected,
                                    sorted(operator_refusals), level=level, where=where)


def _host_shm(target: Target) -> bool:
    """Some role's /dev/shm is the node's (`sharedMemory: host`): a hostPath lowering writes."""
    return any(resources.sharedMemory == "host" for _, resources in asked_resources(target))


def _shm_finding(target: Target, plan: ReplicaPlan, template: dict[str, Any],
                 finding: podsecurity.Finding) -> Optional[Diagnostic]:
    """A finding on the /dev/shm volume lowering wrote for `sharedMemory: host`, at that field."""
    loc = finding.loc
    if loc[:2] != ("spec", "volumes") or len(loc) < 3:
        return None
    volumes = podsecurity.as_list(podsecurity.as_dict(template.get("spec")).get("volumes"))
    volume = podsecurity.as_dict(volumes[loc[2]]) if isinstance(loc[2], int) and loc[2] < len(volumes) else {}
    if volume.get("name") != SHM_VOLUME or "hostPath" not in volume:
        return None
    at = roles.resources_loc(target.spec, plan)
    where = _pod_security_where(target)
    level = target.policy.pod_security()
    return target.view.error(
        at + ("sharedMemory",),
        f"pod security level '{level}'{where} forbids a hostPath volume ({finding.control}): sharedMemory: host mounts"
        " the node's /dev/shm",
        "write sharedMemory: unsized (memory-backed, no size limit) or a size such as 64Gi, or ask for"
        " policy.podSecurity: privileged in trainforge.yaml",
    )


CONTROLLER_TITLES = {"training-operator": "the Training Operator", "train-controller": "train-controller"}


def _operator_refusal(target: Target, init: OperatorInit, replica_type: str, injected: list[str],
                      controls: list[str], *, level: str, where: str) -> Diagnostic:
    """At the spec field whose choice brings the init container in (the framework adapter's
    `operator_init`); a framework as a whole is pointed at by its key, a count by its value.
    Under the Training Operator the first way out is the controller whose init containers
    meet restricted (`INIT_SECURITY_CONTEXT`)."""
    names = ", ".join(f"'{n}'" for n in injected)
    bare = INIT_SECURITY_CONTEXT[target.controller] is None
    fix = init.refusal_fix
    if bare:
        fix = f"set controller: train-controller in trainforge.yaml (the init containers it adds meet restricted), or {fix}"
    return target.view.error(
        init.refusal_at,
        f"pod security level '{level}'{where} refuses the {replica_type} pods: {CONTROLLER_TITLES[target.controller]}"
        f" adds init container {names}{' without a securityContext' if bare else ''} ({', '.join(controls)})",
        fix,
        prefer_key=init.refusal_at == ("framework",),
    )


def project_diagnostics(project: Project, doc: Document) -> Iterator[Diagnostic]:
    """The deprecated `allowPrivileged`, wherever a policy sets it: a warning, or an error when
    it contradicts the same policy's podSecurity; an environment's `controller` under a target
    whose pods one controller always makes."""
    yield from _controller_diagnostics(project, doc)
    policies = [(("policy",), project.policy)] + [
        (("environments", name, "policy"), env.policy) for name, env in project.environments.items()
        if env.policy is not None
    ]
    for at, policy in policies:
        if policy.allowPrivileged is None:
            continue
        line, col = doc.position(at + ("allowPrivileged",))
        path = ".".join(map(str, at + ("allowPrivileged",)))
        if policy.allowPrivileged and policy.podSecurity not in (None, "privileged"):
            yield Diagnostic(doc.file, line, col, path,
                             f"allowPrivileged: true contradicts podSecurity: {policy.podSecurity}",
                             "remove allowPrivileged (deprecated); podSecurity alone sets the level")
        else:
            now = "podSecurity: privileged" if policy.allowPrivileged else "nothing (baseline is the default)"
            yield Diagnostic(doc.file, line, col, path,
                             "allowPrivileged is deprecated; policy.podSecurity sets the Pod Security Standards"
                             " level", f"write {now} instead", severity="warning")


def _controller_diagnostics(project: Project, doc: Document) -> Iterator[Diagnostic]:
    """An environment that names its own `controller` while lowering to a target whose jobs one
    controller always runs (trainer-v2: the Trainer's JobSet makes the pods; mpi-operator: the
    mpi-operator, as train-controller reconciles no v2beta1 MPIJob), so the setting cannot say
    what it promises. `defaults.controller` is simply not applied there."""
    from compiler.targets import TARGETS

    takes = [name for name, target in TARGETS.items() if target.plan.pod_maker is None]
    for name, env in project.environments.items():
        maker = api(project.target_for(name)).maker_title
        if env.controller is None or maker is None:
            continue
        at = ("environments", name, "controller")
        line, col = doc.position(at, prefer_key=True)
        yield Diagnostic(doc.file, line, col, ".".join(at),
                         f"controller: {env.controller} says who makes the pods of {' and '.join(takes)} jobs;"
                         f" environment '{name}' lowers to target {project.target_for(name)}, whose pods"
                         f" {maker} makes",
                         f"remove controller from environment '{name}', or set its target: {' or '.join(takes)}")


def check(target: Target) -> Iterator[Diagnostic]:
    """All policy rules for one job in one environment (registered in `rules.RULES`)."""
    for rule in (_max_gpus, _namespace, _labels, _pod_security):
        yield from rule(target)
