"""The scheduling overlay: queues, priority, gang scheduling and where pods may run.

- Kueue: `scheduling.queue` becomes the `kueue.x-k8s.io/queue-name` label on the job.
- Priority: a PriorityClass by default (`runPolicy.schedulingPolicy.priorityClass` and
  `priorityClassName` on every pod), or, when the environment says `kueuePriority`, the
  `kueue.x-k8s.io/priority-class` label (a WorkloadPriorityClass) instead.
- Gang scheduling (volcano or coscheduling from scheduler-plugins): `schedulingPolicy`
  gets `minAvailable` (every pod, or `elastic.minNodes`), `minResources` and
  `scheduleTimeoutSeconds`; pods get the scheduler and the
  pod-group decoration the operator would add; and a PodGroup named after the job is
  written beside it.
- Placement: the environment's `gpuTypes` entry for the job's `gpuType` goes only to
  roles that run on GPUs (the accelerated ones, or a role whose own resources name a
  gpuType); the job's own `nodeSelector`/`tolerations`/`affinity` go to every role, except
  where the role's entry (`roles.<role>.scheduling`) gives its own, which replaces it there.

Why the PodGroup is in git rather than left to the operator: the pods carry the group
decoration themselves, so gang scheduling works whether or not the operator runs with
`--gang-scheduler-name`; the object is reviewable; and, having no owner reference, it
can exist before the job (Argo CD syncs it one wave earlier: `overlays.waves`). Its
spec is what the operator would compute, and `minResources` is also pinned in
`schedulingPolicy`, so an operator that does manage PodGroups finds ours equal and never
rewrites it. The price: such an operator deletes the PodGroup when the job finishes and
a self-healing sync puts it back, empty, until the job leaves git. The mpi-operator is
another: started with `--gang-scheduling` it makes the PodGroup and decorates the pods itself
and refuses to run a job whose PodGroup it does not own, so under its target
(`TargetApi.pod_group_in_git` false) only `schedulingPolicy` is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from overlays import MISSING, lookup, merge_ops, waves
from schemas import upstream
from schemas.bundle import Bundle, Component, JsonObject
from schemas.project import GpuPlacement
from schemas.trainjob import Gang, Role

NAME = "scheduling"


@dataclass(frozen=True)
class GangScheduler:
    name: str
    scheduler_name: str  # the pods' schedulerName
    api_version: str  # of its PodGroup

    @property
    def volcano(self) -> bool:
        return self.name == "volcano"

    def pod_metadata(self, job: str, replica_type: str) -> JsonObject:
        """The decoration upstream's PodGroupControl puts on each pod template."""
        return upstream.pod_group_decoration(volcano=self.volcano, job_name=job, replica_type=replica_type)


SCHEDULERS = {
    "volcano": GangScheduler("volcano", upstream.VOLCANO_SCHEDULER, "/".join(upstream.VOLCANO_PODGROUP_API)),
    "coscheduling": GangScheduler(
        "coscheduling", upstream.COSCHEDULING_SCHEDULER, "/".join(upstream.COSCHEDULING_PODGROUP_API)
    ),
}


def gang_of(bundle: Bundle) -> Optional[tuple[GangScheduler, Optional[int]]]:
    """(scheduler, timeoutSeconds) when the job is gang scheduled, else None (also when
    the target leaves gang scheduling to the runtime: Trainer v2's podGroupPolicy)."""
    if not bundle.api.scheduling_policy:
        return None
    gang = bundle.target.spec.scheduling.gang
    if isinstance(gang, Gang):
        return SCHEDULERS[gang.scheduler], gang.timeoutSeconds
    if gang is True:
        return SCHEDULERS[bundle.target.environment.scheduling.gangScheduler], None
    return None


def min_available(bundle: Bundle) -> int:
    """Pods that must start together: every pod, or elastic.minNodes for elastic jobs."""
    spec = bundle.target.spec
    if spec.elastic is not None:
        return spec.elastic.minNodes
    replicas = bundle.job["spec"][bundle.adapter.facts.replica_specs]
    return sum(int(r.get("replicas", 1)) for r in replicas.values())


def min_resources(bundle: Bundle, members: int) -> JsonObject:
    """Upstream's sum over the first `members` pods (`schemas.upstream.min_resources`); every
    compiled pod shares one PriorityClass, so the kind's replica-type order decides."""
    facts = bundle.adapter.facts
    return upstream.min_resources(bundle.job["spec"][facts.replica_specs], facts.replica_types, members=members)


# --- the pieces of the component --------------------------------------------------------


def _pod_group(bundle: Bundle, gang: GangScheduler, policy: JsonObject) -> JsonObject:
    target = bundle.target
    meta: JsonObject = {"name": target.name, "namespace": target.namespace}
    if target.labels:
        meta["labels"] = dict(sorted(target.labels.items()))
    spec: JsonObject = {"minMember": policy["minAvailable"]}
    if "minResources" in policy:
        spec["minResources"] = policy["minResources"]
    if gang.volcano:
        # no queue: `scheduling.queue` names a Kueue LocalQueue, not a Volcano queue, and a
        # PodGroup in a Volcano queue that does not exist never starts (Volcano's default
        # queue is used instead, as the operator does when schedulingPolicy.queue is unset)
        if "priorityClass" in policy:
            spec["priorityClassName"] = policy["priorityClass"]
    elif "scheduleTimeoutSeconds" in policy:
        spec["scheduleTimeoutSeconds"] = policy["scheduleTimeoutSeconds"]
    return waves.annotate({"apiVersion": gang.api_version, "kind": "PodGroup", "metadata": meta, "spec": spec})


def _scheduling_policy(bundle: Bundle, gang: Optional[tuple[GangScheduler, Optional[int]]]) -> JsonObject:
    scheduling = bundle.target.spec.scheduling
    policy: JsonObject = {}
    if not bundle.api.scheduling_policy:  # the rules refuse a PriorityClass there
        return policy
    if scheduling.priority and not bundle.target.environment.scheduling.kueuePriority:
        policy["priorityClass"] = scheduling.priority
    if gang is not None:
        scheduler, timeout = gang
        policy["minAvailable"] = min_available(bundle)
        resources = min_resources(bundle, policy["minAvailable"])
        if resources:
            policy["minResources"] = resources
        if timeout is not None:
            policy["scheduleTimeoutSeconds"] = timeout
    return policy


def _job_fragment(bundle: Bundle, policy: JsonObject) -> JsonObject:
    scheduling = bundle.target.spec.scheduling
    labels: JsonObject = {}
    if scheduling.queue:
        labels[upstream.QUEUE_LABEL] = scheduling.queue
    if scheduling.priority and bundle.target.environment.scheduling.kueuePriority:
        labels[upstream.KUEUE_PRIORITY_LABEL] = scheduling.priority
    fragment: JsonObject = {}
    if labels:
        fragment["metadata"] = {"labels": labels}
    if policy:
        fragment["spec"] = {"runPolicy": {"schedulingPolicy": policy}}
    return fragment


def _placements(bundle: Bundle) -> dict[str, Optional[GpuPlacement]]:
    """Per replica type, the environment's GPU placement when the role asked for a
    gpuType, else None (one `plan` per job, not one per replica type)."""
    gpu_types = bundle.target.environment.gpuTypes
    out: dict[str, Optional[GpuPlacement]] = {}
    for role, resources in bundle.api.role_resources(bundle).items():
        gpu_type = resources.gpuType if resources is not None else None
        out[role] = gpu_types.get(gpu_type) if gpu_type else None
    return out


def _pod_fragment(
    bundle: Bundle, placement: Optional[GpuPlacement], spec_path: str, gang: Optional[GangScheduler],
    role: Optional[Role] = None,
) -> JsonObject:
    target = bundle.target
    own = target.spec.scheduling
    placed = role.scheduling if role is not None else None  # each field given replaces the job's
    pod: JsonObject = {}
    if own.priority and not target.environment.scheduling.kueuePriority and bundle.api.scheduling_policy:
        pod["priorityClassName"] = own.priority
    if gang is not None:
        pod["schedulerName"] = gang.scheduler_name
    selector = placed.nodeSelector if placed is not None and placed.nodeSelector is not None else own.nodeSelector
    node_selector = dict(placement.nodeSelector) if placement else {}
    node_selector.update(selector or {})
    asked = placed.tolerations if placed is not None and placed.tolerations is not None else own.tolerations
    tolerations: list[JsonObject] = []
    for toleration in (placement.tolerations if placement else []) + (asked or []):
        item = toleration.model_dump(exclude_none=True)
        if item not in tolerations:
            tolerations.append(item)
    if node_selector:
        pod["nodeSelector"] = dict(sorted(node_selector.items()))
    if tolerations:
        pod["tolerations"] = tolerations
    affinity = _affinity(bundle, spec_path, placed.affinity if placed is not None and placed.affinity is not None
                         else own.affinity, placement)
    if affinity:
        pod["affinity"] = affinity
    return pod


def _affinity(bundle: Bundle, spec_path: str, asked: Optional[JsonObject],
              placement: Optional[GpuPlacement]) -> JsonObject:
    """The spec's affinity, then the GPU type's, each adding only the parts (nodeAffinity,
    podAffinity, podAntiAffinity) the pod has none of: affinity terms are ORed inside a list,
    so merging two lists would weaken either. A podTemplate's own part wins."""
    existing = lookup(bundle.job, f"{spec_path}/affinity")
    have = dict(existing) if existing is not MISSING and isinstance(existing, dict) else {}
    out: JsonObject = {}
    for source in (asked or {}, placement.affinity if placement and placement.affinity else {}):
        for part, value in source.items():
            if part not in have and part not in out:
                out[part] = value
    return out


def apply(bundle: Bundle) -> Bundle:
    gang = gang_of(bundle)
    # an operator that makes the PodGroup itself decorates the pods too (mpi-operator)
    scheduler = gang[0] if gang and bundle.api.pod_group_in_git else None
    policy = _scheduling_policy(bundle, gang)
    patches = merge_ops(bundle.job, "", _job_fragment(bundle, policy))
    placements = _placements(bundle)
    entries = bundle.api.role_entries(bundle)
    for rtype, spec_path in bundle.pod_templates():
        template_path = spec_path.rsplit("/", 1)[0]
        template: JsonObject = {}
        pod = _pod_fragment(bundle, placements.get(rtype), spec_path, scheduler, entries.get(rtype))
        if pod:
            template["spec"] = pod
        if scheduler is not None:
            template["metadata"] = scheduler.pod_metadata(bundle.target.name, rtype)
        patches += merge_ops(bundle.job, template_path, template)
    resources = (_pod_group(bundle, scheduler, policy),) if scheduler is not None else ()
    return bundle.with_component(Component(NAME, resources, tuple(patches)))
