"""Names and one calculation fixed by upstream projects that both halves of trainforge write.

The compiler writes them into git (the scheduling overlay: a gang's pod decoration, its
PodGroup and `minResources`; Kueue's labels; Argo CD's sync-wave annotation) and the
controller writes them into the cluster (the Training Operator's pod labels, the PodGroup
it manages behind `--gang-scheduler-name`). Each is defined here once, below both, so the
two can never drift apart: an operator that manages PodGroups must find the compiled one
equal to its own, and `minResources` printed one way in git and another by the controller
was a diff every sync (`1048577Ki` against `1073742848` for one value).

Facts about one Kubeflow kind (its replica types, container, plural) are not here: they
belong to its adapter (`foundation/frameworks/`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from schemas import quantity as q

# --- the Kubeflow Training Operator's labels on the pods and services of a job ---------
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
ROLE_LABEL = "training.kubeflow.org/job-role"

# --- gang scheduling: Volcano and scheduler-plugins (coscheduling) ----------------------
VOLCANO_SCHEDULER = "volcano"  # the pods' schedulerName
COSCHEDULING_SCHEDULER = "scheduler-plugins-scheduler"  # the pods' schedulerName (the chart's)
VOLCANO_PODGROUP_API = ("scheduling.volcano.sh", "v1beta1")
COSCHEDULING_PODGROUP_API = ("scheduling.x-k8s.io", "v1alpha1")
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"

# --- Kueue and Argo CD --------------------------------------------------------------------
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
SYNC_WAVE_ANNOTATION = "argocd.argoproj.io/sync-wave"


def pod_group_decoration(*, volcano: bool, job_name: str, replica_type: str) -> dict[str, dict[str, str]]:
    """The metadata upstream's PodGroupControl puts on each pod of a gang: Volcano's two
    annotations, or scheduler-plugins' one label."""
    if volcano:
        return {"annotations": {VOLCANO_GROUP_ANNOTATION: job_name, VOLCANO_TASK_ANNOTATION: replica_type.lower()}}
    return {"labels": {POD_GROUP_LABEL: job_name}}


def min_resources(replicas: Mapping[str, Mapping[str, Any]], replica_types: Sequence[str], *, members: int,
                  priority: Callable[[str], int] = lambda name: 0) -> dict[str, str]:
    """Upstream's calcPGMinResources: the first `members` pods, taking the replica types by
    the value of their pods' PriorityClass (`priority` of its name), highest first, ties in
    the kind's `replica_types` order (where Go's map order is random), each container's
    requests, or its limits when it has no requests; summed name by name, each sum printed
    as apimachinery prints it in the format of its first term."""
    rank = {rtype: i for i, rtype in enumerate(replica_types)}
    order = sorted(replicas, key=lambda rt: (-priority(pod_spec(replicas[rt]).get("priorityClassName") or ""),
                                             rank.get(rt, len(rank)), rt))
    totals: dict[str, tuple[Decimal, str]] = {}
    counted = 0
    for rtype in order:
        replica = replicas[rtype]
        pods = min(int(replica.get("replicas", 1)), members - counted)
        if pods <= 0:
            continue
        counted += pods
        terms = [(name, q.read(value)) for name, value in _requests(replica)]
        for _ in range(pods):  # added pod by pod, as upstream adds them
            for name, (number, fmt) in terms:
                previous = totals.get(name)
                totals[name] = (number, fmt) if previous is None else (previous[0] + number, previous[1])
    return {name: q.canonical(number, fmt) for name, (number, fmt) in sorted(totals.items())}


def pod_spec(replica: Mapping[str, Any]) -> dict[str, Any]:
    """A replica spec's ``template.spec`` ({} where it is missing or null)."""
    return (replica.get("template") or {}).get("spec") or {}


def _requests(replica: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for container in pod_spec(replica).get("containers") or []:
        resources = container.get("resources") or {}
        requests = resources.get("requests")
        out += (requests if requests is not None else resources.get("limits") or {}).items()
    return out

