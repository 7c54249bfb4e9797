"""What a kubelet decides before a pod's containers run, as pure functions of the pod and of
what the API server holds: may its volumes mount, may its images be pulled, may its
containers' environment be built. ``testworld.kubelet`` (the process that plays this part of
the kubelet beside kwok) applies them; kwok's stages run the pod once it says so.

Why pure and separate: the order and the wording are the kubelet's, and tests pin them
without a cluster. Followed from kubernetes v1.32's kubelet:

- volumes first (``WaitForAttachAndMount`` before any container): a ``secret`` or
  ``configMap`` volume whose object is missing keeps every container ``waiting``
  ``ContainerCreating`` (``PodInitializing`` when the pod has init containers) and gives a
  ``FailedMount`` Event ``MountVolume.SetUp failed for volume "V" : secret "S" not found``
  (volume manager's ``GenerateError``; ``secret``/``configmap`` is the kubelet's watch-based
  manager's resource name in its NotFound error);
- then per container, init containers one at a time before the others: the image
  (``ErrImagePull`` with the runtime's error, then ``ImagePullBackOff``
  ``Back-off pulling image "I": ErrImagePull: <that error>``), then the environment
  (``envFrom`` before ``env``): ``CreateContainerConfigError`` with ``secret "S" not found``,
  ``configmap "C" not found`` or ``couldn't find key K in Secret NS/S``.
  ``optional: true`` references never block.

A pull fails for an image the world's ``bad_images`` pattern matches; the runtime error is
containerd's wording for an unknown tag (``failed to pull and unpack image`` around
``failed to resolve reference``, as gRPC NotFound). A kubelet starts the containers that can
start and leaves the others waiting; this world starts a pod's containers together, so while
one cannot start the others wait with the kubelet's default reason.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

Lookup = Callable[[str, str], "Mapping[str, Any] | None"]  # (kind "secret"/"configmap", name) -> its data keys

DEFAULT_BAD_IMAGES = r"\b(does-not-exist|typo)\b"  # a word of the image reference, e.g. train:does-not-exist
MOUNT_KINDS = {"secret": ("secretName", "secret"), "configMap": ("name", "configmap")}
ENV_FROM = {"secretRef": "secret", "configMapRef": "configmap"}
ENV_KEY = {"secretKeyRef": ("secret", "Secret"), "configMapKeyRef": ("configmap", "ConfigMap")}


@dataclass(frozen=True)
class Fault:
    """Why one container cannot start: ``pull`` (its image; ``message`` is the runtime's
    error) or ``config`` (``message`` is the kubelet's)."""

    kind: str
    message: str


@dataclass
class Verdict:
    mounts: list[tuple[str, str]] = field(default_factory=list)  # (volume, error) of each volume that cannot mount
    faults: dict[str, Fault] = field(default_factory=dict)  # container name -> why it cannot start
    init: bool = False  # the fault is an init container's (the others wait for it)

    @property
    def ready(self) -> bool:
        return not self.mounts and not self.faults


def with_default_tag(image: str) -> str:
    """The reference the kubelet pulls: ``:latest`` added when there is no tag or digest."""
    if "@" in image or ":" in image.rsplit("/", 1)[-1]:
        return image
    return f"{image}:latest"


def runtime_ref(image: str) -> str:
    """The reference as containerd names it: Docker Hub's domain and ``library/`` filled in."""
    name = with_default_tag(image)
    first, _, rest = name.partition("/")
    if not rest:
        return f"docker.io/library/{name}"
    if first == "docker.io" and "/" not in rest:
        return f"docker.io/library/{rest}"
    if "." in first or ":" in first or first == "localhost":
        return name
    return f"docker.io/{name}"


def pull_error(image: str) -> str:
    ref = runtime_ref(image)
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{ref}": '
            f'failed to resolve reference "{ref}": {ref}: not found')


def backoff_message(image: str, error: str) -> str:
    return f'Back-off pulling image "{with_default_tag(image)}": ErrImagePull: {error}'


def _optional(source: Mapping[str, Any]) -> bool:
    return bool(source.get("optional"))


def references(pod: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(kind, name) of every Secret and ConfigMap the pod's volumes and environments read."""
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or []:
        for key, (name_field, kind) in MOUNT_KINDS.items():
            if key in volume:
                yield kind, (volume[key] or {}).get(name_field) or ""
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for source in container.get("envFrom") or []:
            for key, kind in ENV_FROM.items():
                if key in source:
                    yield kind, (source[key] or {}).get("name") or ""
        for var in container.get("env") or []:
            for key, (kind, _) in ENV_KEY.items():
                if key in (var.get("valueFrom") or {}):
                    yield kind, var["valueFrom"][key].get("name") or ""


def mount_errors(pod: Mapping[str, Any], lookup: Lookup) -> list[tuple[str, str]]:
    """(volume, error) of each ``secret`` or ``configMap`` volume whose object is missing."""
    errors = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        for key, (name_field, kind) in MOUNT_KINDS.items():
            source = volume.get(key)
            if source is None or _optional(source):
                continue
            name = source.get(name_field) or ""
            if lookup(kind, name) is None:
                errors.append((volume["name"], f'{kind} "{name}" not found'))
    return errors


def env_error(container: Mapping[str, Any], namespace: str, lookup: Lookup) -> str | None:
    """The first error building the container's environment, in the kubelet's order."""
    for source in container.get("envFrom") or []:
        for key, kind in ENV_FROM.items():
            ref = source.get(key)
            if ref is not None and not _optional(ref) and lookup(kind, ref.get("name") or "") is None:
                return f'{kind} "{ref.get("name") or ""}" not found'
    for var in container.get("env") or []:
        for key, (kind, title) in ENV_KEY.items():
            ref = (var.get("valueFrom") or {}).get(key)
            if ref is None or _optional(ref):
                continue
            name = ref.get("name") or ""
            keys = lookup(kind, name)
            if keys is None:
                return f'{kind} "{name}" not found'
            if ref.get("key") not in keys:
                return f"couldn't find key {ref.get('key')} in {title} {namespace}/{name}"
    return None


def container_fault(container: Mapping[str, Any], namespace: str, lookup: Lookup | None,
                    bad_images: re.Pattern[str] | None) -> Fault | None:
    image = container.get("image") or ""
    if bad_images is not None and bad_images.search(image):
        return Fault("pull", pull_error(image))
    message = env_error(container, namespace, lookup) if lookup else None
    return Fault("config", message) if message else None


def judge(pod: Mapping[str, Any], lookup: Lookup | None, bad_images: re.Pattern[str] | None) -> Verdict:
    """What keeps the pod from starting, in the kubelet's order; ``ready`` when nothing does.
    ``lookup`` None: Secrets and ConfigMaps are not looked at (every reference resolves)."""
    mounts = mount_errors(pod, lookup) if lookup else []
    if mounts:
        return Verdict(mounts=mounts)
    spec, namespace = pod.get("spec") or {}, (pod.get("metadata") or {}).get("namespace") or ""
    for container in spec.get("initContainers") or []:
        if fault := container_fault(container, namespace, lookup, bad_images):
            return Verdict(faults={container["name"]: fault}, init=True)
    faults = {c["name"]: f for c in spec.get("containers") or []
              if (f := container_fault(c, namespace, lookup, bad_images))}
    return Verdict(faults=faults)


def field_path(pod: Mapping[str, Any], container: str) -> str:
    inits = {c["name"] for c in (pod.get("spec") or {}).get("initContainers") or []}
    return f"spec.initContainers{{{container}}}" if container in inits else f"spec.containers{{{container}}}"


def command_line(container: Mapping[str, Any]) -> str:
    """What the container runs: its command and args, or the image's entrypoint with the args."""
    args = list(container.get("args") or [])
    if container.get("command"):
        return shlex.join([*container["command"], *args])
    return " ".join([f"<entrypoint of {container.get('image') or ''}>", *([shlex.join(args)] if args else [])])


def _condition(kind: str, status: str, now: str, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    # reason and message null: a strategic merge of a condition keeps the old ones otherwise
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}


def _entry(container: Mapping[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    return {"name": container["name"], "image": container.get("image") or "", "imageID": "", "ready": False,
            "started": False, "restartCount": 0, "state": state}


def _state(container: Mapping[str, Any], verdict: Verdict, pull_reason: str, default: str) -> dict[str, Any]:
    fault = verdict.faults.get(container["name"])
    if fault is None:
        return {"waiting": {"reason": default}}
    if fault.kind != "pull":
        return {"waiting": {"reason": "CreateContainerConfigError", "message": fault.message}}
    message = fault.message if pull_reason == "ErrImagePull" else backoff_message(container.get("image") or "",
                                                                                 fault.message)
    return {"waiting": {"reason": pull_reason, "message": message}}


def waiting_status(pod: Mapping[str, Any], verdict: Verdict, *, pull_reason: str, now: str,
                   host_ip: str | None) -> dict[str, Any]:
    """The status a kubelet writes for a pod it cannot start yet (a strategic merge patch):
    Pending, each container waiting for its reason or the default one."""
    spec, current = pod.get("spec") or {}, pod.get("status") or {}
    inits, containers = spec.get("initContainers") or [], spec.get("containers") or []
    default = "PodInitializing" if inits else "ContainerCreating"
    initialized = not inits or not (verdict.mounts or verdict.init)
    unready = f"containers with unready status: [{' '.join(c['name'] for c in containers)}]"
    conditions = [
        _condition("PodReadyToStartContainers", "False" if verdict.mounts else "True", now),
        _condition("Initialized", "True", now) if initialized else _condition(
            "Initialized", "False", now, "ContainersNotInitialized",
            f"containers with incomplete status: [{' '.join(c['name'] for c in inits)}]"),
        _condition("ContainersReady", "False", now, "ContainersNotReady", unready),
        _condition("Ready", "False", now, "ContainersNotReady", unready),
    ]
    done = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}
    status: dict[str, Any] = {
        "phase": "Pending", "conditions": conditions, "startTime": current.get("startTime") or now,
        "containerStatuses": [_entry(c, _state(c, verdict, pull_reason, default)) for c in containers],
    }
    if inits:
        status["initContainerStatuses"] = [
            _entry(c, _state(c, verdict, pull_reason, default) if not initialized else done) for c in inits]
    if host_ip:
        status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}])
    return status


def shown(status: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """What a status says of each container, without times: to write only what changed."""
    def state(entry: Mapping[str, Any]) -> Any:
        waiting = (entry.get("state") or {}).get("waiting")
        return (waiting.get("reason"), waiting.get("message")) if waiting else sorted(entry.get("state") or {})
    entries = [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
    return [(e.get("name"), state(e)) for e in entries]


def container(pod: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The pod's container (or init container) of that name."""
    spec = pod.get("spec") or {}
    return next(c for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])] if c["name"] == name)
