"""The one small interface every output API ("target") implements.

A target is what an environment's jobs are lowered to: `kubeflow-v1` (the Training
Operator's `kubeflow.org/v1` kinds), `trainer-v2` (Kubeflow Trainer v2 TrainJobs) or
`mpi-operator` (the mpi-operator's `kubeflow.org/v2beta1` MPIJob). The
rest of the compiler asks the target, through this table entry, instead of testing its
name: which frameworks it can run, what it cannot express (positioned diagnostics), how
a resolved job is lowered, where the lowered object keeps its pod templates (the
overlays patch those), whether gang scheduling and the priority class live in the job
(`runPolicy.schedulingPolicy`) or in the runtime, and which review rules hold for its pods
(whole pod templates or patches of a runtime's, upstream's admission rules, the init
containers an operator adds), and what `train-compile plan` needs to judge a change of its
jobs (`PlanFacts`). Adding a target is one module plus one line in
`compiler/targets/__init__.py` (and its row in the plan's hazard table,
`compiler.plan.hazards.RULES`); the review and plan facts have no defaults, so a new target
states them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional

if TYPE_CHECKING:
    from compiler.diagnostics import Diagnostic
    from compiler.reading.resolve import Target
    from schemas.bundle import Bundle
    from schemas.trainjob import Resources, Role


@dataclass(frozen=True)
class JobRuntime:
    """Objects of a job's own that admission needs before the job: `component` is the job
    folder's component holding them, of these `kinds`. Flux must sync them first
    (compiler.emit.prerequisites)."""

    component: str
    api_version: str
    kinds: tuple[str, ...]


@dataclass(frozen=True)
class PlanFacts:
    """What the plan (compiler.plan) asks a target about its rendered jobs instead of its name."""

    # how the plan reads what changed in a job (compiler.plan.aspects.READERS): "replica-specs"
    # (per replica type a count and a pod template, a runPolicy; the run spec train-controller
    # defers is foundation.runs.spec's) or "trainer" (a TrainJob: its trainer, runtime patches)
    reader: str
    suspend: tuple[str, ...]  # the path of the rendered job's suspend flag
    ttl: Optional[tuple[str, ...]]  # the path of its ttlSecondsAfterFinished (None: the target has none)
    # kind -> the API plural of the target's jobs of that kind (what `plan --live` and `status`
    # list), None for a kind that is not the target's
    plural: Callable[[str], Optional[str]]
    # whether Kueue manages the target's jobs of a kind (a queue label then puts them in its quota)
    kueue_manages: Callable[[str], bool]
    # the one controller that makes the pods when the target fixes it (the hazard table's row is
    # (target, it)); None: the environment's `controller` setting chooses
    pod_maker: Optional[str] = None
    # spec fields the API server refuses to change whatever the job's state (a CRD's
    # `self == oldSelf`, checked when both sides have the field), and the pod spec fields of a
    # runtime patch refused likewise
    immutable: tuple[str, ...] = ()
    pod_patch_immutable: tuple[str, ...] = ()


def at_path(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    """The value at `path` in a rendered object (None where a step is missing)."""
    value: Any = obj
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value


@dataclass(frozen=True)
class TargetApi:
    name: str  # as written in trainforge.yaml: kubeflow-v1 | trainer-v2 | mpi-operator
    supports: Callable[[str], bool]  # framework name -> can this target run it
    check: Callable[["Target"], Iterator["Diagnostic"]]  # what the target cannot express
    lower: Callable[["Target"], "Bundle"]
    # (role, JSON pointer to its pod spec) for every pod template the overlays patch
    pod_templates: Callable[["Bundle"], list[tuple[str, str]]]
    program_container: Callable[["Bundle"], str]  # the container running the program
    # role -> the resources its pods ask for (None: no resources of the job's own), for GPU placement
    role_resources: Callable[["Bundle"], dict[str, Optional["Resources"]]]
    # names the cluster derives from the job name for its pods (held to 63 characters)
    pod_names: Callable[["Target"], list[str]]
    # (role, pods, GPUs per pod) of the rendered job, for summaries (make demo)
    pods: Callable[["Bundle"], list[tuple[str, int, int]]]
    # the pods are made from the whole pod templates lowering writes (podTemplate merged in:
    # its containers and resources are the pods'), so compiler/podrules checks those; False:
    # podTemplate patches a runtime's templates, and the target's own `check` says what it may
    whole_pod_templates: bool
    plan: PlanFacts  # what `train-compile plan` reads about its jobs
    # upstream's admission rules (foundation/admission.py: the Training Operator's webhook and
    # reconciler checks) judge the lowered job at sync time (compiler/review/admission_review.py)
    upstream_admission: bool
    # (kind, replica type, the job's replica types) -> init containers the operator adds to
    # those pods without a securityContext; the pod security review checks them too (kubeflow-v1
    # reads them from the framework adapters' `operator_init`)
    operator_init_containers: Callable[[str, str, set[str]], list[str]]
    # the job carries runPolicy.schedulingPolicy (PriorityClass, gang) and the pods their
    # scheduler; False: the runtime decides both (Trainer v2's podGroupPolicy)
    scheduling_policy: bool = True
    # a job may bring its own runtime that must exist before the job (trainer-v2: restartScope: job)
    job_runtime: Optional[JobRuntime] = None
    # how messages name the controller that makes the pods when the target fixes it (plan.pod_maker)
    maker_title: Optional[str] = None
    # the PodGroup of a gang is written beside the job and the pods carry its decoration (the
    # Training Operator finds it equal to its own); False: the operator makes the PodGroup itself
    # and refuses one it does not own (mpi-operator), so only runPolicy.schedulingPolicy is written
    pod_group_in_git: bool = True
    # top-level spec fields only this target reads (mpi-operator: `mpi`); elsewhere an error
    own_fields: tuple[str, ...] = ()
    # pod template key (as in pod_templates) -> its spec.roles entry, whose placement replaces the
    # job's there (overlays/scheduling.py); {}: the target takes no per-role settings (trainer-v2)
    role_entries: Callable[["Bundle"], dict[str, Optional["Role"]]] = lambda bundle: {}
    # replica type -> the volumes the operator adds to its pods, which a template's containers
    # may mount though the template does not have them (the mpi-operator's hostfile and SSH keys)
    added_volumes: Callable[[str], tuple[str, ...]] = lambda replica_type: ()
    # an environment's bundles -> the same with the objects the sources add to them (trainer-v2:
    # the runtimes written beside the jobs, each carried by one job that names it)
    with_runtimes: Callable[[list["Bundle"]], list["Bundle"]] = lambda bundles: bundles


def gpus_in(resources: dict[str, Any]) -> int:
    """GPUs in a container's resources (any `*gpu` limit: nvidia.com/gpu, amd.com/gpu...)."""
    limits = (resources or {}).get("limits") or {}
    return sum(int(v) for k, v in limits.items() if k.endswith("gpu"))
