"""Gang scheduling behind `--gang-scheduler-name`: the job's PodGroup and the pod decoration.

Upstream's PodGroupControl (semantics §8) rewritten as pure functions plus one small
class the reconciler calls at three points (`controller.jobs.addons.Gang`): `sync` before the pod
pass (create or update the PodGroup `{job}`; for Volcano, hold pod creation until the
group's `status.phase` is past `Pending`), `decorate` on every pod it creates, and
`delete` when the job finishes, fails a limit or is suspended. The PodGroups are read
from an informer (the manager maps their events to the owning job, so an admitted
Volcano group requeues the job), PriorityClass values too: zero GETs on the steady path.

A PodGroup `{job}` we did not create is used, not taken over. The compiler ships one
in git (overlays/scheduling.py: same name and spec, no owner, Argo CD sync-wave -1),
so a group without a controller owner is treated as GitOps's: its spec is brought in
line only when it really differs (quantities by value, absent queue = Volcano's
`default`; compiled groups never differ, so nothing is written), it gets no owner
reference, and it is never deleted: deleting it would make a self-healing Argo CD put it
back, our watch would see it and delete it again, forever. Git removes it with the job.
A group controlled by another object is left alone entirely (upstream would fight over it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.jobs.desired import owner_reference
from controller.jobs.kinds import Kind
from controller.jobs.status import Ctx
from controller.runtime.informer import Informer
from foundation.cluster.kube import Resource
from controller.runtime.writes import Writes
from schemas import quantity, upstream

log = logging.getLogger(__name__)

VOLCANO = Resource(*upstream.VOLCANO_PODGROUP_API, "podgroups", "PodGroup")
SCHEDULER_PLUGINS = Resource(*upstream.COSCHEDULING_PODGROUP_API, "podgroups", "PodGroup")
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)
CUSTOM_SCHEDULER_MESSAGE = "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
# not copied to the PodGroup: a record of the job's own applied spec, and Argo CD's claim on the job
NOT_COPIED = frozenset({"kubectl.kubernetes.io/last-applied-configuration", "argocd.argoproj.io/tracking-id"})
OURS, SHIPPED, FOREIGN = "ours", "shipped", "foreign"


@dataclass(frozen=True)
class Scheduler:
    """What `--gang-scheduler-name` selects: the pods' schedulerName and the PodGroup API."""

    name: str
    volcano: bool

    @property
    def resource(self) -> Resource:
        return VOLCANO if self.volcano else SCHEDULER_PLUGINS

    @property
    def spec_keys(self) -> tuple[str, ...]:
        if self.volcano:
            return ("minMember", "queue", "priorityClassName", "minResources")
        return ("minMember", "minResources", "scheduleTimeoutSeconds")


def scheduler_for(flag: str | None) -> Scheduler | None:
    """`volcano` (any case) -> Volcano; another non-empty value -> scheduler-plugins; else off."""
    if not flag or flag.strip().lower() == "none":
        return None
    name = flag.strip()
    volcano = upstream.VOLCANO_SCHEDULER
    return Scheduler(volcano, volcano=True) if name.lower() == volcano else Scheduler(name, volcano=False)


# ---------------------------------------------------------------------- pure rules
def scheduling_policy(job: Mapping[str, Any]) -> dict[str, Any]:
    return ((job.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy") or {}


def min_member(job: Mapping[str, Any], kind: Kind) -> int:
    """`schedulingPolicy.minAvailable`, else every replica of the (defaulted) job."""
    policy = scheduling_policy(job)
    if policy.get("minAvailable") is not None:
        return int(policy["minAvailable"])
    return sum(int(r.get("replicas", 1)) for r in job["spec"][kind.facts.replica_specs].values())


def min_resources(job: Mapping[str, Any], kind: Kind, *, members: int,
                  priority: Callable[[str], int] = lambda name: 0) -> dict[str, str]:
    """Upstream's calcPGMinResources for the (defaulted) job (`schemas.upstream.min_resources`)."""
    return upstream.min_resources(job["spec"][kind.facts.replica_specs], kind.facts.replica_types,
                                  members=members, priority=priority)


def desired_spec(scheduler: Scheduler, job: Mapping[str, Any], kind: Kind, *, current: Mapping[str, Any] | None = None,
                 priority: Callable[[str], int] = lambda name: 0) -> dict[str, Any]:
    """The PodGroup spec upstream writes (empty fields omitted, as Go's omitempty does)."""
    policy = scheduling_policy(job)
    members = min_member(job, kind)
    resources = policy.get("minResources")
    if resources is None:
        resources = min_resources(job, kind, members=members, priority=priority)
    spec: dict[str, Any] = {"minMember": members}
    if scheduler.volcano:
        existing = ((current or {}).get("spec") or {}).get("queue")
        spec["queue"] = existing or policy.get("queue") or "default"
        if policy.get("priorityClass"):
            spec["priorityClassName"] = policy["priorityClass"]
    elif policy.get("scheduleTimeoutSeconds") is not None:
        spec["scheduleTimeoutSeconds"] = int(policy["scheduleTimeoutSeconds"])
    if resources:
        spec["minResources"] = dict(resources)
    return spec


def _comparable(scheduler: Scheduler, spec: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in keys:
        value = spec.get(key)
        if key == "queue" and not value:
            value = "default"  # the Volcano CRD's default
        elif key == "minResources":
            value = {k: quantity.amount(v) for k, v in (value or {}).items()} or None
        if value not in (None, ""):
            out[key] = value
    return out


def spec_differs(scheduler: Scheduler, current: Mapping[str, Any], wanted: Mapping[str, Any], *, only: tuple[str, ...] | None = None) -> bool:
    """Whether writing `wanted` would change `current`: by value, every key of either
    (upstream replaces the whole spec), or only `only` (a PodGroup we merely adopt)."""
    keys = only if only is not None else tuple(dict.fromkeys([*scheduler.spec_keys, *current, *wanted]))
    return _comparable(scheduler, current, keys) != _comparable(scheduler, wanted, keys)


def admitted(scheduler: Scheduler, podgroup: Mapping[str, Any]) -> bool:
    """Volcano: pods wait until the group's phase is set and not Pending; others never wait."""
    if not scheduler.volcano:
        return True
    return ((podgroup.get("status") or {}).get("phase") or "Pending") != "Pending"


def ownership(podgroup: Mapping[str, Any], job: Mapping[str, Any]) -> str:
    ref = next((r for r in podgroup["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
    if ref is None:
        return SHIPPED
    return OURS if ref.get("uid") == job["metadata"].get("uid") else FOREIGN


def podgroup(scheduler: Scheduler, job: Mapping[str, Any], kind: Kind, spec: dict[str, Any]) -> dict[str, Any]:
    meta = job["metadata"]
    metadata: dict[str, Any] = {"name": meta["name"], "namespace": meta.get("namespace", "default"),
                                "ownerReferences": [owner_reference(dict(job), kind)]}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in NOT_COPIED}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": scheduler.resource.api_version, "kind": "PodGroup", "metadata": metadata, "spec": spec}


def decorate(scheduler: Scheduler, pod: dict[str, Any], *, job_name: str, replica_type: str) -> None:
    spec, meta = pod["spec"], pod["metadata"]
    if not spec.get("schedulerName"):
        spec["schedulerName"] = scheduler.name
    for field, items in upstream.pod_group_decoration(volcano=scheduler.volcano, job_name=job_name,
                                                      replica_type=replica_type).items():
        meta.setdefault(field, {}).update(items)


def custom_scheduler_set(replicas: Mapping[str, Any], scheduler: Scheduler) -> bool:
    """Upstream warns when ANY replica template names another scheduler (kept as written)."""
    return any(upstream.pod_spec(r).get("schedulerName") not in (None, "", scheduler.name) for r in replicas.values())


# ---------------------------------------------------------------------- the reconciler's hook
class PodGroups:
    """`controller.jobs.addons.Gang` for one scheduler, reading PodGroups and PriorityClasses from caches."""

    def __init__(self, scheduler: Scheduler, *, podgroups: Informer, priority_classes: Informer) -> None:
        self.scheduler, self.podgroups, self.priority_classes = scheduler, podgroups, priority_classes

    def informers(self) -> list[Informer]:
        return [self.podgroups, self.priority_classes]

    def priority(self, name: str) -> int:
        found = self.priority_classes.get(None, name) if name else None
        return int(found.get("value", 0)) if found else 0

    def sync(self, writes: Writes, ctx: Ctx) -> bool:
        """Create or update the PodGroup; False while pods must not be created yet."""
        current = self.podgroups.get(ctx.namespace, ctx.name)
        if current is not None and current["metadata"].get("deletionTimestamp"):
            return False  # the old group is going away (after a suspend); its DELETED event requeues us
        wanted = desired_spec(self.scheduler, ctx.job, ctx.kind, current=current, priority=self.priority)
        if current is None:
            # expected, so no pod pass runs on a cache without it; created silently, as upstream
            writes.create(ctx, self.scheduler.resource, podgroup(self.scheduler, ctx.job, ctx.kind, wanted), announce=False)
            return not self.scheduler.volcano  # a new Volcano group has no phase yet
        owner = ownership(current, ctx.job)
        if owner == FOREIGN:
            log.warning("%s: PodGroup %s/%s is controlled by another object; not managing it", ctx.key,
                        ctx.namespace, ctx.name)
        elif owner == OURS and spec_differs(self.scheduler, current.get("spec") or {}, wanted):
            self._update(writes, current, wanted)
        elif owner == SHIPPED and spec_differs(self.scheduler, current.get("spec") or {}, wanted, only=self.scheduler.spec_keys):
            kept = {k: v for k, v in (current.get("spec") or {}).items() if k not in self.scheduler.spec_keys}
            self._update(writes, current, {**kept, **wanted})
        return admitted(self.scheduler, current)

    def decorate(self, ctx: Ctx, pod: dict[str, Any], replica_type: str) -> None:
        if custom_scheduler_set(ctx.replicas, self.scheduler):
            ctx.events.append(("Warning", "SetPodTemplateSchedulerName", CUSTOM_SCHEDULER_MESSAGE))
        decorate(self.scheduler, pod, job_name=ctx.name, replica_type=replica_type)

    def delete(self, writes: Writes, ctx: Ctx) -> None:
        """Delete our PodGroup (never one GitOps shipped, see the module docstring)."""
        current = self.podgroups.get(ctx.namespace, ctx.name)
        if current is None or current["metadata"].get("deletionTimestamp") or ownership(current, ctx.job) != OURS:
            return
        ctx.events.append(("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup"))
        writes.delete(ctx, self.scheduler.resource, current, noun="PodGroup")

    def _update(self, writes: Writes, current: dict[str, Any], spec: dict[str, Any]) -> None:
        # PUT with the cached resourceVersion: a Volcano PodGroup has no status subresource,
        # so a stale copy must fail (409, retried) rather than overwrite Volcano's phase
        written = writes.update(self.scheduler.resource, {**current, "spec": spec})
        if written is not None:
            self.podgroups.remember(written)
