"""What to change when a job is stuck or failed: the spec field, its line, and the fix where the cause is known.

`status` shows why a pod waits in the kubelet's and the scheduler's words; a user acts on a
field of the spec. Each rule reads one known cause and names the field a person changes
(at its line in the spec, the environment's override where it sets it):

- the scheduler finds no node with the GPUs (CPU, memory) a pod asks for: how many it asks
  for per node against the largest node's allocatable (`spec.resources.gpu`); when some node
  is big enough, the pods wait for room, and the count says so;
- no node matches the pods' node selector: the GPU type (`spec.resources.gpuType`), else
  `spec.scheduling.nodeSelector`;
- an image that cannot be pulled: `spec.image` (a role's own image when the pod is a role's);
- a Secret or ConfigMap (or a key of one) that the environment reads and that does not
  exist: the `spec.env` entry that reads it, and the object to create;
- the API server refusing the pods for a PriorityClass that does not exist (the job's
  Warning Event): `spec.scheduling.priority`;
- Kueue not admitting a queued job (its Workload says why): a LocalQueue that does not
  exist, or the queue's quota: `spec.scheduling.queue`;
- a program that exited non-zero (a failed pod, a crash loop): no field, the log to read.

Pure: the job's report and the largest node's allocatable per resource in, advice out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from compiler.cli.live.terms import field_of

if TYPE_CHECKING:
    from compiler.cli.live.gather import JobReport

_INSUFFICIENT = re.compile(r"Insufficient ([\w./-]+)")
_MISSING = re.compile(r'^(secret|configmap) "([^"]+)" not found')
_NO_KEY = re.compile(r"^couldn't find key (\S+) in (Secret|ConfigMap) ([^/\s]+)/(\S+)")
_PRIORITY = re.compile(r"no PriorityClass with name (\S+) was found")
_NO_QUEUE = re.compile(r"LocalQueue \S+ doesn't exist")
_PULL = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
_PROGRAM = ("CrashLoopBackOff", "Error", "OOMKilled")
# a resource the scheduler lacks -> (the spec's field under resources, its name in a sentence)
_RESOURCES = {"cpu": ("cpu", "CPUs"), "memory": ("memory", "memory")}


@dataclass(frozen=True)
class Advice:
    text: str  # what is wrong, in a sentence
    field: Optional[str] = None  # the spec field to change (diagnostics' path syntax), None: no field
    line: Optional[int] = None  # its line in the spec's file
    command: Optional[str] = None  # a command that shows more (the log of a failed program)
    joiner: str = ": "  # between the text and the field (" " where the text ends "or change")

    def said(self, source: str) -> str:
        """One sentence: what is wrong, then the field at its line, or the command to run."""
        where = f"{self.field}, {source}:{self.line}" if self.field else ""
        return self.text + (self.joiner + where if where else "") + (f": {self.command}" if self.command else "")


def advise(job: "JobReport", *, largest: Optional[dict[str, float]] = None) -> list[Advice]:
    """The advice for `job`, each cause once (module docstring); `largest`: resource -> the
    largest allocatable of any node (None: the nodes could not be read)."""
    out: list[Advice] = []
    raw = {(p.get("metadata") or {}).get("name"): p for p in job.raw_pods}
    for pod in job.pods:
        if not pod.reason:
            continue
        found = _pod(job, pod, raw.get(pod.name) or {}, largest)
        if found is not None and found not in out:
            out.append(found)
    if job.queue is not None:
        found = _queue(job)
        if found not in out:
            out.append(found)
    for event in job.events:
        match = _PRIORITY.search(event.message)
        if match:
            field, line = _field(job, ("scheduling", "priority"))
            found = Advice(f"PriorityClass {match.group(1)} does not exist", field, line)
            if found not in out:
                out.append(found)
    return out


def _pod(job: "JobReport", pod: Any, raw: dict[str, Any], largest: Optional[dict[str, float]]) -> Optional[Advice]:
    if pod.reason == "Unschedulable":
        return _unschedulable(job, pod.message, raw, pod.replica, largest)
    if pod.reason in _PULL:
        image = next((c.get("image") for c in (raw.get("spec") or {}).get("containers") or []
                      if c.get("name") == pod.container), None)
        field, line = _field(job, field_of(job.spec, pod.replica, "image"))
        return Advice(f"image {image or '?'} cannot be pulled", field, line)
    if pod.reason == "CreateContainerConfigError":
        return _config(job, pod.message, pod.replica)
    if pod.reason in _PROGRAM or pod.phase == "Failed":
        spec = job.spec
        index = f" --index {pod.index}" if pod.index is not None else ""
        command = f"train-compile logs {spec.namespace}/{spec.name} --replica {pod.replica.lower()}{index}"
        return Advice(f"the program {_exit(pod.message)}", command=command)
    return None


def _queue(job: "JobReport") -> Advice:
    """Kueue has not admitted the job: a LocalQueue that does not exist, else the queue's quota."""
    assert job.queue is not None
    field, line = _field(job, ("scheduling", "queue"))
    if _NO_QUEUE.search(job.queue.message):
        return Advice(f"LocalQueue {job.spec.namespace}/{job.queue.queue} does not exist: create it, or change",
                      field, line, joiner=" ")
    return Advice(f"Kueue has not admitted it to queue {job.queue.queue} (above): its quota, or another queue",
                  field, line)


def _unschedulable(job: "JobReport", message: str, raw: dict[str, Any], replica: str,
                   largest: Optional[dict[str, float]]) -> Optional[Advice]:
    lacking = _INSUFFICIENT.findall(message)
    for resource in lacking:
        asked = _asked(raw, resource)
        if resource.endswith("/gpu"):
            key, words = "gpu", "GPUs"
        elif resource in _RESOURCES:
            key, words = _RESOURCES[resource]
        else:
            continue
        field, line = _field(job, field_of(job.spec, replica, "resources", key))
        have = (largest or {}).get(resource)
        if asked is None:
            return Advice(f"no node has the {words} asked for free", field, line)
        shown = _amount(asked, resource)
        if have is not None and asked > have:
            return Advice(f"{shown} {words} per node requested; the largest node has {_amount(have, resource)}",
                          field, line)
        return Advice(f"{shown} {words} per node requested; no node has that free now: the pods wait for room",
                      field, line)
    if "didn't match Pod's node affinity/selector" in message:
        spec = job.spec.target.spec if job.spec.target is not None else None
        if spec is not None and spec.resources is not None and spec.resources.gpuType:
            field, line = _field(job, ("resources", "gpuType"))
            return Advice(f"no node has GPU type {spec.resources.gpuType}", field, line)
        field, line = _field(job, ("scheduling", "nodeSelector"))
        return Advice("no node matches the node selector", field, line)
    return None


def _config(job: "JobReport", message: str, replica: str) -> Optional[Advice]:
    """A missing Secret or ConfigMap (or key): the env entry that reads it, and what to create."""
    ns = job.spec.namespace
    missing = _MISSING.match(message)
    no_key = _NO_KEY.match(message)
    if missing:
        kind, name, key = ("Secret" if missing.group(1) == "secret" else "ConfigMap"), missing.group(2), None
    elif no_key:
        key, kind, name = no_key.group(1), no_key.group(2), no_key.group(4)
    else:
        return None
    entry = _env_reading(job, replica, kind, name, key)
    field, line = _field(job, entry) if entry else (None, None)
    what = f"{kind} {ns}/{name}" + (f" has no key {key}" if key else " does not exist")
    return Advice(f"{what}: create it, or change", field, line, joiner=" ") if field else Advice(what)


def _env_reading(job: "JobReport", replica: str, kind: str, name: str,
                 key: Optional[str]) -> Optional[tuple[str, ...]]:
    """The env entry (its loc under `spec`) whose value reads the object: the replica type's
    role's own entries first (they win over spec.env), then the job's."""
    spec = job.spec.target.spec if job.spec.target is not None else None
    if spec is None:
        return None
    attr = "secret" if kind == "Secret" else "configMap"
    role = (getattr(spec, "roles", None) or {}).get(replica.lower())
    for base, env in ((("roles", replica.lower()), getattr(role, "env", None)), ((), spec.env)):
        for env_name, value in (env or {}).items():
            if getattr(value, attr, None) == name and (key is None or getattr(value, "key", None) == key):
                return (*base, "env", str(env_name))
    return None


def _asked(pod: dict[str, Any], resource: str) -> Optional[float]:
    """What the pod asks of `resource` (its containers' requests, else limits), None: nothing."""
    total = 0.0
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        value = (res.get("requests") or {}).get(resource, (res.get("limits") or {}).get(resource))
        if value is not None:
            total += allocatable(value)
    return total or None


def allocatable(value: Any) -> float:
    """A quantity (`8`, `500m`, `64Gi`) as a number; 0 for one that is not."""
    from schemas.quantity import parse

    try:
        return float(parse(value).amount)
    except ValueError:
        return 0.0


def _amount(value: float, resource: str) -> str:
    if resource == "memory":
        return f"{value / 2**30:g}Gi"
    return f"{value:g}"


def _field(job: "JobReport", loc: tuple[str, ...]) -> tuple[Optional[str], Optional[int]]:
    from compiler.cli.live.terms import locate

    return locate(job.spec, loc)


def _exit(message: str) -> str:
    match = re.search(r"(?:exit code|exited) (\d+)", message)
    return f"exited {match.group(1)}; its log" if match else "keeps failing; its log"
