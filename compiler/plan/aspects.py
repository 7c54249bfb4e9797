"""What changed between a job's compiled objects, in the terms the hazards are judged by.

A spec edit reaches the cluster as changed objects; what it does to a run depends on which
part of them changed: a replica count or a pod template (the pods of a run), the run policy
(read live by the controller), `suspend`, the TTL, trainforge's own annotations, the job's
metadata, the objects beside the job (a claim, RBAC, a PodGroup). `Aspects` names those for
one job, with the details a summary sentence needs (`Worker 2 -> 3`, an image). How a job is
read is its target's (`PlanFacts.reader`, one reader per layout in `READERS`): a
kubeflow.org/v1 job by its replica specs, where whether the run spec changed is
`foundation.runs.spec`'s (the rule train-controller defers edits by, defaults applied), or a
Trainer v2 TrainJob by its trainer and runtime patches, with the fields the target says the
Trainer refuses to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

from compiler.targets.base import PlanFacts
from foundation.frameworks import BY_KIND
from foundation.frameworks.stock_runtimes import NODE  # the TrainJob's replicated job its trainer fields shape
from foundation.runs import spec as runspec
from schemas.marks import RESTART_SCOPE, SOURCE
from schemas.upstream import QUEUE_LABEL

OWN_ANNOTATIONS = (SOURCE, RESTART_SCOPE)


@dataclass
class Aspects:
    replicas: dict[str, tuple[int, int]] = field(default_factory=dict)  # replica type -> (before, after)
    templates: list[str] = field(default_factory=list)  # replica types whose pod template changed
    job_fields: list[str] = field(default_factory=list)  # other spec fields the pods are made from
    images: list[tuple[str, str]] = field(default_factory=list)  # (before, after) of a changed image
    elastic: Optional[tuple[int, int]] = None  # (minReplicas, maxReplicas) of an elastic job
    suspend: tuple[bool, bool] = (False, False)
    run_policy: list[str] = field(default_factory=list)  # run policy fields read live (backoff, deadline ...)
    scheduling_policy: bool = False
    ttl: Optional[int] = None  # ttlSecondsAfterFinished of the head, when set
    restart_scope: Optional[tuple[str, str]] = None
    queue: Optional[tuple[Optional[str], Optional[str]]] = None
    metadata: list[str] = field(default_factory=list)  # job labels and annotations, nothing that runs
    moved: Optional[tuple[str, str]] = None  # the source annotation: the spec file moved
    containers: bool = False  # a container or init container of some pod set differs (Kueue's check)
    immutable: list[str] = field(default_factory=list)  # spec fields the target's API refuses to change
    runtime_patches: bool = False
    others: list[str] = field(default_factory=list)  # other objects changed: "PersistentVolumeClaim x"
    claims: list[str] = field(default_factory=list)  # claims whose spec changed beyond a size increase
    runtime: Optional[str] = None  # the job's own TrainingRuntime (trainer-v2, restartScope: job), changed
    # the run spec differs (foundation.runs.spec: defaulted, an elastic job's Worker count left
    # out): what train-controller defers to the next run of a running job
    run_spec: bool = False
    # what upstream's operator makes pods from differs: the run spec without the gang's
    # schedulingPolicy (its PodGroup follows that) and without trainforge's restart scope
    pod_spec: bool = False

    @property
    def changes_pods(self) -> bool:
        """The pods of a run would differ: a count, a template, a field they are made from, the gang or the scope."""
        return bool(self.replicas or self.templates or self.job_fields or self.scheduling_policy
                    or self.restart_scope or self.run_spec or self.pod_spec)


def _meta(obj: dict[str, Any], part: str) -> dict[str, Any]:
    return (obj.get("metadata") or {}).get(part) or {}


def _images(old: dict[str, Any], new: dict[str, Any], seen: list[tuple[str, str]]) -> None:
    before = {c.get("name"): c.get("image") for c in (old.get("spec") or {}).get("containers") or []}
    for c in (new.get("spec") or {}).get("containers") or []:
        pair = (before.get(c.get("name")), c.get("image"))
        if pair[0] is not None and pair[0] != pair[1] and pair not in seen:
            seen.append(pair)


def _containers(old: dict[str, Any], new: dict[str, Any]) -> bool:
    o, n = old.get("spec") or {}, new.get("spec") or {}
    return o.get("containers") != n.get("containers") or o.get("initContainers") != n.get("initContainers")


def _replica_specs(old: dict[str, Any], new: dict[str, Any], out: Aspects, target: PlanFacts) -> None:
    adapter = BY_KIND[new["kind"]]
    facts = adapter.facts
    before, after = old["spec"].get(facts.replica_specs) or {}, new["spec"].get(facts.replica_specs) or {}
    for rtype in sorted(set(before) | set(after)):
        o, n = before.get(rtype) or {}, after.get(rtype) or {}
        count = (int(o.get("replicas", 1)) if o else 0, int(n.get("replicas", 1)) if n else 0)
        if count[0] != count[1]:
            out.replicas[rtype] = count
        if o.get("template") != n.get("template") or o.get("restartPolicy") != n.get("restartPolicy"):
            out.templates.append(rtype)
            _images(o.get("template") or {}, n.get("template") or {}, out.images)
        if _containers(o.get("template") or {}, n.get("template") or {}):
            out.containers = True
    out.containers = out.containers or bool(out.replicas)
    if runspec.elastic(adapter, new["spec"]):
        elastic = new["spec"]["elasticPolicy"]
        out.elastic = (int(elastic.get("minReplicas", 1)), int(elastic.get("maxReplicas", 1)))
    before_run, after_run = runspec.run_spec(old, adapter), runspec.run_spec(new, adapter)
    out.run_spec = before_run != after_run
    out.pod_spec = runspec.pods_part(before_run) != runspec.pods_part(after_run)
    for key in sorted(set(old["spec"]) | set(new["spec"])):
        if key not in (facts.replica_specs, "runPolicy") and old["spec"].get(key) != new["spec"].get(key):
            out.job_fields.append(key)
    o_rp, n_rp = old["spec"].get("runPolicy") or {}, new["spec"].get("runPolicy") or {}
    out.suspend = (bool(o_rp.get("suspend")), bool(n_rp.get("suspend")))
    out.scheduling_policy = o_rp.get("schedulingPolicy") != n_rp.get("schedulingPolicy")
    out.run_policy = sorted(k for k in set(o_rp) | set(n_rp) if k not in ("suspend", "schedulingPolicy")
                            and o_rp.get(k) != n_rp.get(k))
    ttl = n_rp.get("ttlSecondsAfterFinished")
    out.ttl = int(ttl) if ttl is not None else None


def _pod_patches(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(manager, replicated job) -> the pod spec patch of runtimePatches."""
    out = {}
    for patch in spec.get("runtimePatches") or []:
        jobs = (((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec") or {}).get(
            "replicatedJobs") or []
        for job in jobs:
            pod = ((((job.get("template") or {}).get("spec") or {}).get("template")) or {}).get("spec") or {}
            out[(patch.get("manager", ""), job.get("name", ""))] = pod
    return out


def _trainer(old: dict[str, Any], new: dict[str, Any], out: Aspects, target: PlanFacts) -> None:
    o, n = old["spec"], new["spec"]
    out.immutable = [k for k in target.immutable if k in o and k in n and o[k] != n[k]]
    before, after = _pod_patches(o), _pod_patches(n)
    fixed = sorted({f for key in set(before) & set(after) for f in target.pod_patch_immutable
                    if f in before[key] and f in after[key] and before[key][f] != after[key][f]})
    out.immutable += [f"runtimePatches (the pods' {', '.join(fixed)})"] if fixed else []
    out.runtime_patches = o.get("runtimePatches") != n.get("runtimePatches")
    out.suspend = (bool(o.get("suspend")), bool(n.get("suspend")))
    out.others += [f"spec.{k}" for k in sorted(set(o) | set(n)) if k not in target.immutable
                   and k not in ("runtimePatches", "suspend") and o.get(k) != n.get(k)]
    out.others += [f"spec.{k} (added)" for k in target.immutable if (k in o) != (k in n)]
    trainer_o, trainer_n = o.get("trainer") or {}, n.get("trainer") or {}
    if trainer_o.get("numNodes") != trainer_n.get("numNodes"):
        out.replicas[NODE] = (int(trainer_o.get("numNodes", 1)), int(trainer_n.get("numNodes", 1)))
    if trainer_o.get("image") != trainer_n.get("image") and trainer_o.get("image"):
        out.images.append((trainer_o["image"], trainer_n.get("image")))
    if trainer_o != trainer_n or out.runtime_patches:
        out.templates.append(NODE)
        out.containers = True


def _replica_specs_as_written(old: dict[str, Any], new: dict[str, Any], out: Aspects, target: PlanFacts) -> None:
    """Replica specs another operator reads (the mpi-operator's MPIJob): what its pods are made from
    is what is written (a count, a template, a spec field), without the Training Operator's defaulting."""
    _replica_specs(old, new, out, target)
    out.run_spec = False  # train-controller's, which does not run these
    out.pod_spec = bool(out.replicas or out.templates or out.job_fields)


# how each layout of job is read (a target's PlanFacts.reader names its own)
READERS: dict[str, Callable[[dict[str, Any], dict[str, Any], Aspects, PlanFacts], None]] = {
    "replica-specs": _replica_specs, "replica-specs-as-written": _replica_specs_as_written, "trainer": _trainer}


def job_aspects(old: dict[str, Any], new: dict[str, Any], target: PlanFacts) -> Aspects:
    """What changed from `old` to `new`, two rendered jobs of one kind of `target`."""
    out = Aspects()
    READERS[target.reader](old, new, out, target)
    o_ann, n_ann = _meta(old, "annotations"), _meta(new, "annotations")
    if o_ann.get(SOURCE) != n_ann.get(SOURCE):
        out.moved = (o_ann.get(SOURCE, ""), n_ann.get(SOURCE, ""))
    if o_ann.get(RESTART_SCOPE) != n_ann.get(RESTART_SCOPE):
        out.restart_scope = (o_ann.get(RESTART_SCOPE) or "pod", n_ann.get(RESTART_SCOPE) or "pod")
    o_lab, n_lab = _meta(old, "labels"), _meta(new, "labels")
    if o_lab.get(QUEUE_LABEL) != n_lab.get(QUEUE_LABEL):
        out.queue = (o_lab.get(QUEUE_LABEL), n_lab.get(QUEUE_LABEL))
    out.metadata = sorted(
        [f"labels.{k}" for k in set(o_lab) | set(n_lab) if k != QUEUE_LABEL and o_lab.get(k) != n_lab.get(k)]
        + [f"annotations.{k}" for k in set(o_ann) | set(n_ann)
           if k not in OWN_ANNOTATIONS and o_ann.get(k) != n_ann.get(k)])
    return out


def other_objects(old: list[dict[str, Any]], new: list[dict[str, Any]], out: Aspects) -> None:
    """The objects beside the job (all but the last of each list): which changed, and claims
    whose spec changed (the API server refuses those: a claim's spec is immutable but for a
    larger size of a bound claim whose StorageClass allows expansion, which the plan cannot
    know offline; an unbound claim's size is refused too, as the real API server does)."""
    def key(obj: dict[str, Any]) -> tuple[str, str]:
        return (obj["kind"], obj["metadata"]["name"])
    before, after = {key(o): o for o in old[:-1]}, {key(o): o for o in new[:-1]}
    for k in sorted(set(before) | set(after)):
        o, n = before.get(k), after.get(k)
        if o == n:
            continue
        if k[0] == "TrainingRuntime" and o is not None and n is not None:
            out.runtime = k[1]  # the Trainer built a started job's JobSet from it once (compiler.plan.hazards)
            continue
        out.others.append(f"{k[0]} {k[1]}" + (" (new)" if o is None else " (removed)" if n is None else ""))
        if k[0] == "PersistentVolumeClaim" and o is not None and n is not None and o.get("spec") != n.get("spec"):
            out.claims.append(k[1])
