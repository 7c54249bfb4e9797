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
  gpuType); the job's own `nodeSelector`/`tolerations` go to every role.

Why the PodGroup is in git rather than left to the operator: the pods carry the group
decoration themselves, so gang scheduling works whether or not the operator runs with
`--gang-scheduler-name`; the object is reviewable; and, having no owner reference, it
can exist before the job (Argo CD syncs it one wave earlier: `overlays.waves`). Its
spec is what the operator would compute, and `minResources` is also pinned in
`schedulingPolicy`, so an operator that does manage PodGroups finds ours equal and never
rewrites it. The price: such an operator deletes the PodGroup when the job finishes and
a self-healing sync puts it back, empty, until the job leaves git.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional

from overlays import MISSING, lookup, merge_ops, waves
from schemas import quantity as q
from schemas.bundle import Bundle, Component, JsonObject
from schemas.project import GpuPlacement
from schemas.trainjob import Gang

NAME = "scheduling"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"


@dataclass(frozen=True)
class GangScheduler:
    name: str
    scheduler_name: str  # the pods' schedulerName
    api_version: str  # of its PodGroup

    def pod_metadata(self, job: str, replica_type: str) -> JsonObject:
        """The decoration upstream's PodGroupControl puts on each pod template."""
        if self.name == "volcano":
            return {
                "annotations": {
                    "scheduling.k8s.io/group-name": job,
                    "volcano.sh/task-spec": replica_type.lower(),
                }
            }
        return {"labels": {"scheduling.x-k8s.io/pod-group": job}}


SCHEDULERS = {
    "volcano": GangScheduler("volcano", "volcano", "scheduling.volcano.sh/v1beta1"),
    "coscheduling": GangScheduler(
        "coscheduling", "scheduler-plugins-scheduler", "scheduling.x-k8s.io/v1alpha1"
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


# --- quantities: minResources is the sum of the first minMember pods' requests ----------

_BINARY = [(s, q.MULTIPLIERS[s]) for s in reversed(q.BINARY_SUFFIXES)]  # Ei first
_DECIMAL = [(s, q.MULTIPLIERS[s]) for s in ("E", "P", "T", "G", "M", "k")]
_SMALL = [(s, q.MULTIPLIERS[s]) for s in ("", "m", "u", "n")]
_ZERO = Decimal(0)


@functools.lru_cache(maxsize=None, typed=True)
def _parse(value: Any) -> tuple[Decimal, str]:
    """(amount, suffix family) of a quantity: family is int, binary, decimal or plain.

    Cached: a run sees a few distinct quantities, each in every pod of every job."""
    if isinstance(value, int):
        return Decimal(value), "int"
    parsed = q.parse(value)
    if parsed.format == q.BINARY_SI:
        return parsed.amount, "binary"
    return parsed.amount, "plain" if parsed.suffix in ("", "m", "u", "n") else "decimal"


def _format(total: Decimal, families: set[str]) -> Any:
    return _format_once(total, frozenset(families))


@functools.lru_cache(maxsize=None)
def _format_once(total: Decimal, families: frozenset[str]) -> Any:
    """`_format`, cached: the text depends only on the value (never on how a Decimal
    writes it), and jobs of a repository mostly add up to the same few totals."""
    if families == {"int"}:
        return int(total)
    candidates = (_BINARY if "binary" in families else []) + (_DECIMAL if "decimal" in families else []) + _SMALL
    for suffix, unit in candidates:
        amount = total / unit
        if amount == amount.to_integral_value():
            return f"{int(amount)}{suffix}"
    return str(total.normalize())


def _pod_requests(replica: JsonObject) -> list[tuple[str, Decimal, str]]:
    """(resource, amount, family) per container of one replica's pod, in order: its
    requests, or its limits if it has none."""
    out = []
    for container in replica["template"]["spec"].get("containers", []):
        resources = container.get("resources") or {}
        for key, value in (resources.get("requests") or resources.get("limits") or {}).items():
            out.append((key, *_parse(value)))
    return out


def min_resources(bundle: Bundle, members: int) -> JsonObject:
    """Upstream's calculation: the sum over the first `members` pods, in replica order.

    The pods of one replica are alike, so each replica's requests are read once; they
    are still added pod by pod, in upstream's order (Decimal sums then match exactly)."""
    totals: dict[str, Decimal] = {}
    families: dict[str, set[str]] = {}
    counted = 0
    for replica in bundle.job["spec"][bundle.adapter.facts.replica_specs].values():
        if counted >= members:
            break
        pods = min(int(replica.get("replicas", 1)), members - counted)
        counted += pods
        if pods <= 0:
            continue
        requests = _pod_requests(replica)
        for key, _, family in requests:
            families.setdefault(key, set()).add(family)
        for _ in range(pods):
            for key, amount, _ in requests:
                totals[key] = totals[key] + amount if key in totals else _ZERO + amount
    return {key: _format(totals[key], families[key]) for key in sorted(totals)}


# --- the pieces of the component --------------------------------------------------------


def _pod_group(bundle: Bundle, gang: GangScheduler, policy: JsonObject) -> JsonObject:
    target = bundle.target
    meta: JsonObject = {"name": target.name, "namespace": target.namespace}
    if target.labels:
        meta["labels"] = dict(sorted(target.labels.items()))
    spec: JsonObject = {"minMember": policy["minAvailable"]}
    if "minResources" in policy:
        spec["minResources"] = policy["minResources"]
    if gang.name == "volcano":
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
        labels[QUEUE_LABEL] = scheduling.queue
    if scheduling.priority and bundle.target.environment.scheduling.kueuePriority:
        labels[KUEUE_PRIORITY_LABEL] = scheduling.priority
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
    bundle: Bundle, placement: Optional[GpuPlacement], spec_path: str, gang: Optional[GangScheduler]
) -> JsonObject:
    target = bundle.target
    own = target.spec.scheduling
    pod: JsonObject = {}
    if own.priority and not target.environment.scheduling.kueuePriority and bundle.api.scheduling_policy:
        pod["priorityClassName"] = own.priority
    if gang is not None:
        pod["schedulerName"] = gang.scheduler_name
    node_selector = dict(placement.nodeSelector) if placement else {}
    node_selector.update(own.nodeSelector or {})
    tolerations: list[JsonObject] = []
    for toleration in (placement.tolerations if placement else []) + (own.tolerations or []):
        item = toleration.model_dump(exclude_none=True)
        if item not in tolerations:
            tolerations.append(item)
    if node_selector:
        pod["nodeSelector"] = dict(sorted(node_selector.items()))
    if tolerations:
        pod["tolerations"] = tolerations
    if placement and placement.affinity:
        # affinity terms are ORed inside a list, so merging lists would weaken the user's
        # own affinity: add only the parts (nodeAffinity, podAffinity...) it lacks
        existing = lookup(bundle.job, f"{spec_path}/affinity")
        have = existing if existing is not MISSING and isinstance(existing, dict) else {}
        extra = {k: v for k, v in placement.affinity.items() if k not in have}
        if extra:
            pod["affinity"] = extra
    return pod


def apply(bundle: Bundle) -> Bundle:
    gang = gang_of(bundle)
    scheduler = gang[0] if gang else None
    policy = _scheduling_policy(bundle, gang)
    patches = merge_ops(bundle.job, "", _job_fragment(bundle, policy))
    placements = _placements(bundle)
    for rtype, spec_path in bundle.pod_templates():
        template_path = spec_path.rsplit("/", 1)[0]
        template: JsonObject = {}
        pod = _pod_fragment(bundle, placements.get(rtype), spec_path, scheduler)
        if pod:
            template["spec"] = pod
        if scheduler is not None:
            template["metadata"] = scheduler.pod_metadata(bundle.target.name, rtype)
        patches += merge_ops(bundle.job, template_path, template)
    resources = (_pod_group(bundle, scheduler, policy),) if scheduler is not None else ()
    return bundle.with_component(Component(NAME, resources, tuple(patches)))
