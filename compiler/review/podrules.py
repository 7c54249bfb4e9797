"""What the API server or the kubelet would refuse in a job's pods, long after review.

The operator creates a job's pods from its templates minutes or days after the job was
synced; a template the API server refuses (422) or the kubelet cannot start leaves a job
that never gets a pod, with the reason only in the operator's events. These rules catch
the ones the spec can show, each at the field that causes it: ephemeral containers
(forbidden on pod create), a mount path that is relative or holds ':', a relative working
directory, a storage volume
whose name or path collides with one the `podTemplate` adds, containers the podTemplate
adds without an image (names, types and the rest of each field are compiler/review/podschema.py's,
the whole pod compiler/review/podcheck.py's), label keys and values (pod labels, nodeSelector) and
annotation keys that are not valid, the deprecated seccomp annotations (which clash with
the seccompProfile field), the Kueue labels a queue or priority name becomes,
tolerations the API server's rules refuse, and requests above limits (or GPUs whose
request and limit differ) once the podTemplate changed one of them. Each rule reads every
pod template patch the spec writes: the job's `podTemplate` and each role's. Registered in
`compiler/review/rules.py`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Iterator, Optional

from compiler import strategic
from compiler.diagnostics import Diagnostic
from compiler.podsecurity import as_dict, as_list
from compiler.reading.resolve import Target
from compiler.targets import api, roles
from schemas import quantity
from schemas.loader import Loc
from schemas.types import DNS1123_LABEL, LABEL_NAME, LABEL_VALUE

CONTAINER_KINDS = ("initContainers", "containers")
SECCOMP_ANNOTATIONS = ("seccomp.security.alpha.kubernetes.io/pod", "container.seccomp.security.alpha.kubernetes.io/")
LATE = " (the API server takes it; the container runtime refuses it when the pod starts)"
LABEL_FIX = "use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"


_WRITTEN: list[Any] = [None, []]  # the last target's: (the target, its sites)


def _sites(target: Target) -> list[tuple[Loc, dict[str, Any]]]:
    """(spec loc of the patch, what its spec writes) for the job's podTemplate and each role's
    (deletions and other directives left out). Read-only for callers: six rules ask for them one
    target after the other, and computing them each time was a fifth of the review rules' CPU on
    1,000 specs (a quarter with a podTemplate)."""
    if _WRITTEN[0] is not target:
        _WRITTEN[:] = [target, [(at, as_dict(strategic.written(patch.get("spec"))))
                                for at, patch in roles.all_pod_patches(target.spec)]]
    return _WRITTEN[1]


def _bad_mount_path(path: str) -> str:
    if not path.startswith("/"):
        return "is relative"
    if ":" in path:
        return "contains ':'"
    return ""


def _ephemeral(target: Target) -> Iterator[Diagnostic]:
    for at, pod in _sites(target):
        if "ephemeralContainers" in pod:
            yield target.view.error(
                at + ("spec", "ephemeralContainers"),
                "the API server refuses every pod created with ephemeral containers",
                "remove them; add one to a running pod with kubectl debug",
                prefer_key=True,
            )


def _mount_paths(target: Target) -> Iterator[Diagnostic]:
    for i, volume in enumerate(target.spec.storage):
        problem = _bad_mount_path(volume.mountPath)
        if problem:
            yield target.view.error(("storage", i, "mountPath"), f"mountPath '{volume.mountPath}' {problem}{LATE}",
                                    "write an absolute path without ':', e.g. /data")
    for at, pod in _sites(target):
        for kind in CONTAINER_KINDS:
            for i, container in enumerate(as_list(pod.get(kind))):
                for j, mount in enumerate(as_list(as_dict(container).get("volumeMounts"))):
                    path = as_dict(mount).get("mountPath")
                    problem = _bad_mount_path(path) if isinstance(path, str) else ""
                    if problem:
                        yield target.view.error(at + ("spec", kind, i, "volumeMounts", j, "mountPath"),
                                                f"mountPath '{path}' {problem}{LATE}",
                                                "write an absolute path without ':', e.g. /data")


def _working_dirs(target: Target) -> Iterator[Diagnostic]:
    """runc takes only an absolute working directory (the API server takes any)."""
    asked = [(("workingDir",), target.spec.workingDir)] + [
        (at + ("spec", kind, i, "workingDir"), as_dict(c).get("workingDir"))
        for at, pod in _sites(target) for kind in CONTAINER_KINDS for i, c in enumerate(as_list(pod.get(kind)))
    ]
    for at, path in asked:
        if isinstance(path, str) and not path.startswith("/"):
            yield target.view.error(at, f"workingDir '{path}' is relative, which the container runtime refuses"
                                    " when the pod starts", "write an absolute path, e.g. /workspace")


def _storage_collisions(target: Target) -> Iterator[Diagnostic]:
    """spec.storage is mounted after the podTemplate is merged: a name or path the podTemplate
    uses already makes two volumes of one name, or two mounts at one path (both 422)."""
    for at, pod in _sites(target):
        name = ".".join(map(str, at))
        volumes = {as_dict(v).get("name") for v in as_list(pod.get("volumes"))}
        for i, volume in enumerate(target.spec.storage):
            if volume.name in volumes:
                yield target.view.error(("storage", i, "name"), f"{name} also adds a volume named '{volume.name}'",
                                        "give the storage volume another name")
            for container in as_list(pod.get("containers")):
                mounts = {as_dict(m).get("mountPath") for m in as_list(as_dict(container).get("volumeMounts"))}
                if volume.mountPath in mounts and as_dict(container).get("name") == _framework_container(target):
                    yield target.view.error(
                        ("storage", i, "mountPath"),
                        f"{name} also mounts a volume at '{volume.mountPath}' in container '{container['name']}'",
                        "mount each volume at its own path")


def _framework_container(target: Target) -> str:
    from foundation.frameworks import adapter

    return adapter(target.spec.framework).facts.container


def _containers(target: Target) -> Iterator[Diagnostic]:
    """Containers the podTemplate adds need a valid name and an image; the framework's own
    container is merged by name and has its image already."""
    if not api(target.api).whole_pod_templates:
        return  # a runtime has its own containers; the target's check says what may patch them
    own = _framework_container(target)
    named = {own, *(role.container for role in target.spec.roles.values() if role.container)}  # an MPI role's own
    for site, pod in _sites(target):
        yield from _site_containers(target, site, pod, own, named)


def _site_containers(target: Target, site: Loc, pod: dict[str, Any], own: str,
                     named: set[str]) -> Iterator[Diagnostic]:
    for kind in CONTAINER_KINDS:
        for i, container in enumerate(as_list(pod.get(kind))):
            if not isinstance(container, dict):
                continue
            at = site + ("spec", kind, i)
            name = container.get("name")
            if not isinstance(name, str) or not DNS1123_LABEL.match(name) or len(name) > 63:
                continue  # compiler/review/podschema.py: a name is required and a DNS label
            if container.get("image") or (kind == "containers" and name in named):
                continue
            if kind == "containers":  # most likely meant to patch the framework's container by another name
                yield target.view.error(at, f"container '{name}' is not the framework's container '{own}' and has no"
                                        " image", f"rename it {own} to patch that container (spec.image sets its image),"
                                        " or add image: <image> to run it as an extra container", prefer_key=True)
            else:
                yield target.view.error(at, f"container '{name}' has no image",
                                        f"add image: <image> (only the {own} container gets spec.image)", prefer_key=True)


def _labels(target: Target) -> Iterator[Diagnostic]:
    patches = dict(roles.all_pod_patches(target.spec))
    for site, pod in _sites(target):
        yield from _site_labels(target, site, as_dict(strategic.written(patches[site].get("metadata"))), pod)


def _site_labels(target: Target, site: Loc, meta: dict[str, Any], pod: dict[str, Any]) -> Iterator[Diagnostic]:
    pairs = [(site + ("metadata", "labels"), as_dict(meta.get("labels"))),
             (site + ("spec", "nodeSelector"), as_dict(pod.get("nodeSelector")))]
    for at, labels in pairs:
        for key, value in labels.items():
            if not _label_key_ok(key):
                yield target.view.error(at + (key,), f"'{key}' is not a valid label key",
                                        "use e.g. team or example.com/team", prefer_key=True)
            elif not isinstance(value, str):
                continue  # compiler/review/podschema.py: a label value is a string (null deletes it)
            elif len(value) > 63 or not LABEL_VALUE.match(value):
                yield target.view.error(at + (key,), f"'{value}' is not a valid label value", LABEL_FIX)
    for key in as_dict(meta.get("annotations")):
        at = site + ("metadata", "annotations", key)
        if not _label_key_ok(key):
            yield target.view.error(at, f"'{key}' is not a valid annotation key", "use e.g. example.com/note",
                                    prefer_key=True)
        elif key.startswith(SECCOMP_ANNOTATIONS):
            yield target.view.error(at, "seccomp annotations are ignored since Kubernetes 1.27, and the API server"
                                    " refuses a pod whose annotation differs from its seccompProfile",
                                    "set securityContext.seccompProfile instead", prefer_key=True)


def _label_key_ok(key: Any) -> bool:
    return isinstance(key, str) and bool(LABEL_NAME.match(key)) and len(key.rsplit("/", 1)[-1]) <= 63 \
        and len(key.rpartition("/")[0]) <= 253


def _kueue_labels(target: Target) -> Iterator[Diagnostic]:
    """The queue is written as a label value (kueue.x-k8s.io/queue-name), and so is the priority
    with kueuePriority (kueue.x-k8s.io/priority-class)."""
    scheduling = target.spec.scheduling
    asked = [("queue", scheduling.queue)]
    if target.environment.scheduling.kueuePriority:
        asked.append(("priority", scheduling.priority))
    for name, value in asked:
        if value is not None and (len(value) > 63 or not LABEL_VALUE.match(value)):
            yield target.view.error(("scheduling", name), f"'{value}' becomes a label value and is not a valid one",
                                    LABEL_FIX)


def _tolerations(target: Target) -> Iterator[Diagnostic]:
    """The API server's toleration rules: a key is a label key, no key means Exists, Exists
    takes no value, and tolerationSeconds is only for NoExecute."""
    asked = [(("scheduling",), target.spec.scheduling.tolerations)] + [
        (("roles", name, "scheduling"), role.scheduling.tolerations) for name, role in target.spec.roles.items()
        if role.scheduling is not None]
    for where, tolerations in asked:
        yield from _site_tolerations(target, where, tolerations or [])


def _site_tolerations(target: Target, where: Loc, tolerations: list[Any]) -> Iterator[Diagnostic]:
    for i, toleration in enumerate(tolerations):
        at = where + ("tolerations", i)
        if toleration.key and not _label_key_ok(toleration.key):
            yield target.view.error(at + ("key",), f"'{toleration.key}' is not a valid toleration key",
                                    "use a label key such as nvidia.com/gpu")
        elif not toleration.key and toleration.operator != "Exists":
            yield target.view.error(at, "a toleration without a key must have operator: Exists",
                                    "add key: <taint key>, or operator: Exists to tolerate every taint",
                                    prefer_key=True)
        if toleration.operator == "Exists" and toleration.value:
            yield target.view.error(at + ("value",), "operator Exists takes no value",
                                    "remove value, or use operator: Equal")
        if toleration.tolerationSeconds is not None and toleration.effect != "NoExecute":
            yield target.view.error(at + ("tolerationSeconds",), "tolerationSeconds only applies to effect NoExecute",
                                    "set effect: NoExecute or remove tolerationSeconds")


NATIVE = ("cpu", "memory", "ephemeral-storage", "storage")  # and hugepages-*; other names are extended resources


def _amount(value: Any) -> Optional[Decimal]:
    """A quantity's exact amount (None for anything else: `_pod_template_quantities` reports it)."""
    try:
        return quantity.parse(value, signed=False).amount
    except ValueError:
        return None


def _requests_within_limits(target: Target) -> Iterator[Diagnostic]:
    """A podTemplate that changes requests or limits can leave a request above its limit, or an
    extended resource (GPUs) whose request and limit differ: the API server refuses both."""
    if not roles.all_pod_patches(target.spec) or not api(target.api).whole_pod_templates:
        return  # before the imports below: they were most of this rule's cost on a spec without podTemplate
    from compiler.podsecurity import containers
    from compiler.review.podcheck import pods
    from compiler.review.policy import located

    for plan, template in pods(target):  # built once per target, shared with compiler/review/podcheck.py
        patches = roles.pod_patches(target.spec, plan.role)
        for at, name, container in containers(as_dict(template.get("spec"))):
            resources = as_dict(container.get("resources"))
            requests, limits = as_dict(resources.get("requests")), as_dict(resources.get("limits"))
            for key in sorted(set(requests) & set(limits)):
                asked, most = _amount(requests[key]), _amount(limits[key])
                extended = key not in NATIVE and not str(key).startswith("hugepages-")
                if asked is None or most is None or (asked == most if extended else asked <= most):
                    continue
                loc, whole = located(at + ("resources", "limits", key), template, patches)
                if not whole:
                    loc, _ = located(at + ("resources", "requests", key), template, patches)
                yield target.view.error(
                    loc,
                    f"{key} request {requests[key]} and limit {limits[key]} in container '{name}' "
                    + ("differ, and an extended resource's request must equal its limit" if extended else "leave the request above the limit"),
                    "set the podTemplate's request and limit together (or change resources instead)")


RULES = (_ephemeral, _mount_paths, _working_dirs, _storage_collisions, _containers, _labels, _kueue_labels, _tolerations,
         _requests_within_limits)


def check(target: Target) -> Iterator[Diagnostic]:
    """Every late refusal of one job in one environment (registered in `rules.RULES`)."""
    for rule in RULES:
        yield from rule(target)
