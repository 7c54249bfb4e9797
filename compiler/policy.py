"""Project policy: what the platform team allows, checked on every job in every environment.

The policy comes from `trainforge.yaml` (`policy`, or an environment's own `policy`,
which replaces it there) and is checked like any other cross-field rule, so violations
are ordinary diagnostics at the job's offending field: GPUs over all pods
(`maxGpusPerJob`; an elastic job counts at `maxNodes`, the size it may grow to), the
namespace (`allowedNamespaces`), `requiredLabels` (at `metadata.labels`, or `metadata`
when there are none) and host access through the `podTemplate` escape hatch
(privileged containers, hostNetwork, hostPID, hostPath volumes) unless `allowPrivileged`.
"""

from __future__ import annotations

from typing import Any, Iterator

from compiler.diagnostics import Diagnostic
from compiler.frameworks import adapter
from compiler.lowering import pod_template
from compiler.resolve import Target
from schemas.loader import Loc

CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
ALLOW_FIX = "or set policy.allowPrivileged: true in trainforge.yaml"


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
        spec = spec.model_copy(update={"podTemplate": {}})
    fw = adapter(spec.framework)
    total = 0
    for plan in fw.plan(spec):
        replicas = plan.replicas
        if plan.accelerated and spec.elastic is not None:
            replicas = spec.elastic.maxNodes
        total += replicas * pod_gpus(pod_template(spec, plan, fw.facts, target), target.environment.gpuResource)
    return total


def _gpu_loc(target: Target, total: int, limit: int) -> Loc:
    if target.spec.podTemplate and total_gpus(target, with_pod_template=False) <= limit:
        return ("podTemplate",)  # the escape hatch is what adds the GPUs over the limit
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
            prefer_key=loc == ("podTemplate",),
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


def _host_access(pod_template: dict[str, Any]) -> Iterator[tuple[Loc, str]]:
    """(spec-relative loc, what) for every host-level setting in a podTemplate."""
    base: Loc = ("podTemplate", "spec")
    pod = pod_template.get("spec")
    if not isinstance(pod, dict):
        return
    for field in ("hostNetwork", "hostPID"):
        if pod.get(field) is True:
            yield base + (field,), field
    for i, volume in enumerate(pod.get("volumes") or []):
        if isinstance(volume, dict) and volume.get("hostPath") is not None:
            yield base + ("volumes", i, "hostPath"), "a hostPath volume"
    for kind in CONTAINER_LISTS:
        for i, container in enumerate(pod.get(kind) or []):
            context = container.get("securityContext") if isinstance(container, dict) else None
            if isinstance(context, dict) and context.get("privileged") is True:
                yield base + (kind, i, "securityContext", "privileged"), "a privileged container"


def _privileged(target: Target) -> Iterator[Diagnostic]:
    if target.policy.allowPrivileged:
        return
    for loc, what in _host_access(target.spec.podTemplate):
        yield target.view.error(
            loc,
            f"podTemplate sets {what}, which the policy does not allow",
            f"remove it, {ALLOW_FIX}",
            prefer_key=True,
        )


def check(target: Target) -> Iterator[Diagnostic]:
    """All policy rules for one job in one environment (registered in `rules.RULES`)."""
    for rule in (_max_gpus, _namespace, _labels, _privileged):
        yield from rule(target)
