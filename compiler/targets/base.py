"""The one small interface every output API ("target") implements.

A target is what an environment's jobs are lowered to: `kubeflow-v1` (the Training
Operator's `kubeflow.org/v1` kinds), `trainer-v2` (Kubeflow Trainer v2 TrainJobs) or
`mpi-operator` (the mpi-operator's `kubeflow.org/v2beta1` MPIJob). The
rest of the compiler asks the target, through this table entry, instead of testing its
name: which frameworks it can run, what it cannot express (positioned diagnostics), how
a resolved job is lowered, where the lowered object keeps its pod templates (the
overlays patch those), whether gang scheduling and the priority class live in the job
(`runPolicy.schedulingPolicy`) or in the runtime, whether Kueue manages its jobs, who makes
its pods (the environment's `controller`, or the target's own), and which review rules hold for its pods
(whole pod templates or patches of a runtime's, upstream's admission rules, the init
containers an operator adds). Adding a target is one module plus one line in
`compiler/targets/__init__.py`; the review facts have no defaults, so a new target states them.
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
    """An object of a job's own that admission needs before the job: `component` is the job
    folder's component holding it. Flux must sync it first (compiler.emit.prerequisites)."""

    component: str
    api_version: str
    kind: str


@dataclass(frozen=True)
class PodMaker:
    """The controller a target's jobs always go to (so the project's `controller` does not apply)."""

    key: str  # how the plan's hazard table names it
    title: str  # how messages name it


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
    # framework -> Kueue manages this target's job of it (a queue label on a job it does not
    # manage is ignored: the job runs at once, outside the queue's quota)
    kueue_manages: Callable[[str], bool] = lambda framework: True
    # who makes the pods when the target decides it; None: the environment's `controller` does
    maker: Optional[PodMaker] = None
    # the PodGroup of a gang is written beside the job and the pods carry its decoration (the
    # Training Operator finds it equal to its own); False: the operator makes the PodGroup itself
    # and refuses one it does not own, so only runPolicy.schedulingPolicy is written
    pod_group_in_git: bool = True
    # top-level spec fields only this target reads (mpi-operator: `mpi`); elsewhere an error
    own_fields: tuple[str, ...] = ()
    # pod template key (as in pod_templates) -> its spec.roles entry, whose placement replaces the
    # job's there (overlays/scheduling.py); {}: the target takes no per-role settings (trainer-v2)
    role_entries: Callable[["Bundle"], dict[str, Optional["Role"]]] = lambda bundle: {}


def gpus_in(resources: dict[str, Any]) -> int:
    """GPUs in a container's resources (any `*gpu` limit: nvidia.com/gpu, amd.com/gpu...)."""
    limits = (resources or {}).get("limits") or {}
    return sum(int(v) for k, v in limits.items() if k.endswith("gpu"))
