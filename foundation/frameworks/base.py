"""The one small interface every framework adapter implements.

An adapter is a module in `foundation/frameworks/` that declares facts about one Kubeflow
kind (`Facts`: kind, replica-spec field, replica types, container, port, restart
default) and two pure functions: `plan(spec)` turns the unified TrainJob spec into
replica roles (the spec's role table), `job_fields(spec)` adds the kind's own top-level
spec fields (nprocPerNode, elasticPolicy, slotsPerWorker, jobMode). The controller uses
the same module for `rendezvous_env`, so the compiler and the controller can never
disagree on a framework's shape. Adding a framework is one new module plus one line in
`foundation/frameworks/__init__.py`.

A framework that Kubeflow Trainer v2 can run also declares `trainer_v2` (the optional
`TrainerV2Capable` capability): its stock ClusterTrainingRuntime, the mlPolicy kind a
runtime must have to run it, the runtime's replicated jobs that run the program and how
`processesPerNode` becomes `numProcPerNode`. A framework without it is refused under the
`trainer-v2` target at `spec.framework`; nothing else in the compiler names frameworks.

The other optional facts are declared data, read by the rules and overlays instead of a
framework name: `Facts.elastic` and `Facts.processes_per_node` (which spec fields a kind
takes), `Adapter.launcher` (a one-pod replica type that drives the workers: MPI) and
`Adapter.operator_init` (the init container the Training Operator adds to some pods, which
the pod security review checks, with the securityContext the environment's `controller`
gives it: `INIT_SECURITY_CONTEXT`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Collection, Optional, Protocol

from foundation.frameworks.operator import Operator
from foundation.frameworks.stock_runtimes import NODE, STOCK_RUNTIMES

if TYPE_CHECKING:
    from schemas.trainjob import Resources, TrainJobSpec

GROUP = "kubeflow.org"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
# the replica type a scalable kind's scale subresource scales (every such v1 CRD's specReplicasPath)
SCALED_REPLICA_TYPE = "Worker"


@dataclass(frozen=True)
class Facts:
    """What the upstream operator fixes for one kind (semantics doc, section 0)."""

    name: str  # trainforge framework name, e.g. "pytorch"
    kind: str  # e.g. "PyTorchJob"
    plural: str  # e.g. "pytorchjobs"
    replica_specs: str  # e.g. "pytorchReplicaSpecs"
    replica_types: tuple[str, ...]  # canonical CamelCase keys, in upstream order
    container: str  # default container name
    port_name: Optional[str]  # default port name (None: no port defaulting, MPI)
    port: Optional[int]
    default_restart: str  # replica restartPolicy default
    operator_name: str  # training.kubeflow.org/operator-name value
    scalable: bool = False  # CRD has the scale subresource (SCALED_REPLICA_TYPE's replicas)
    # the operator finds the program container by `container` (False: it runs the first container,
    # whatever its name, and spec.roles.<role>.container may name it: MPI's operators)
    container_by_name: bool = True
    # spec.roles names, each a replica type by its lower-case name: `main_roles` are the ones
    # `nodes` counts (no replicas of their own), `fixed_roles` one-pod roles always present (no
    # replicas), `allowed_roles` extra roles that exist when listed, with replicas
    main_roles: tuple[str, ...] = ("worker",)
    fixed_roles: tuple[str, ...] = ()
    allowed_roles: tuple[str, ...] = ()
    removable_roles: tuple[str, ...] = ()  # main roles `replicas: 0` drops (tensorflow: no Chief)
    elastic: bool = False  # takes spec.elastic (the kind has an elastic policy)
    autoscaled: bool = False  # the operator keeps a HorizontalPodAutoscaler from elasticPolicy.metrics
    processes_per_node: bool = False  # takes an integer spec.processesPerNode (processes per pod)
    # Why Kueue (v0.17) does not manage this kubeflow.org/v1 kind, or None when it does: a
    # queue label on an unmanaged kind is ignored, so the job runs outside the queue's quota
    kueue_unmanaged: Optional[str] = None

    @property
    def api_version(self) -> str:
        return API_VERSION

    @property
    def roles(self) -> tuple[str, ...]:
        """Every name spec.roles accepts, main roles first."""
        return self.main_roles + self.fixed_roles + self.allowed_roles


@dataclass(frozen=True)
class ReplicaPlan:
    """One replica type of the lowered job.

    `accelerated` roles are the spec's "nodes": they get the node resources (GPUs,
    shared memory) and GPU placement. The others (an MPI launcher, a parameter server,
    an MXNet scheduler) get only the resources their own `roles` entry asks for. Every
    role runs the user's command unless it sets its own or `inherit_command` is False
    (MPI workers, which the launcher drives through mpirun).
    """

    replica_type: str
    replicas: int
    accelerated: bool = True
    resources: Optional["Resources"] = None  # the role's own resources (not the node's)
    command: Optional[list[str]] = None
    args: Optional[list[str]] = None
    inherit_command: bool = True
    role: str = ""  # its name under spec.roles; "" is the replica type in lower case

    def __post_init__(self) -> None:
        if not self.role:
            object.__setattr__(self, "role", self.replica_type.lower())


@dataclass(frozen=True)
class Launcher:
    """A replica type of one pod that runs the program and drives the workers (MPI's mpirun
    launcher). Under `spec.roles.<role>` the user gives it resources and nothing else; the
    operator names objects after the job with `names`' suffixes instead of `{job}-<type>-0`."""

    role: str  # its entry under spec.roles, e.g. launcher
    replica_type: str  # e.g. Launcher
    title: str  # how diagnostics name it, e.g. "the MPI launcher"
    # suffixes of the names the operator derives from the job name: the first is the pod's
    # (and its default ServiceAccount's and exec Role's), then the rest (the hostfile ConfigMap)
    names: tuple[str, ...]
    workers: str = "Worker"  # the replica type it drives (its pods are the hostfile's)

    @property
    def pod_suffix(self) -> str:
        return self.names[0]

    @property
    def config_suffix(self) -> str:
        return self.names[1]


# restricted's four container controls, plus a user id: runAsNonRoot alone stops a container
# whose image runs as root (upstream's alpine and kubectl-delivery images do), so the id that
# distroless images call `nonroot` is given; neither container needs root (nslookup; copying
# kubectl into an emptyDir, which is writable by all)
RESTRICTED_INIT_SECURITY_CONTEXT: dict[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "seccompProfile": {"type": "RuntimeDefault"},
}

INIT_SECURITY_CONTEXT: dict[str, Optional[dict[str, Any]]] = {
    "training-operator": None,  # upstream's templates have none
    # controller/jobs/desired.py and controller/jobs/mpi.py write this (unless --upstream-init-containers)
    "train-controller": RESTRICTED_INIT_SECURITY_CONTEXT,
}
"""Per controller a project may name (schemas/project.py `controller`), the securityContext of
the init containers it adds (None: none): the one place both the pod security review and
train-controller read it."""


@dataclass(frozen=True)
class OperatorInit:
    """An init container the Training Operator (and train-controller, its drop-in) adds to the
    pods of `replica_type` it makes from a template. The Training Operator gives it no
    securityContext; train-controller gives it `INIT_SECURITY_CONTEXT["train-controller"]`
    (an operator given its own init container template may differ, which no spec shows).
    Only the spec's shape or the controller avoids it, so a pod security level that refuses
    it is reported at `refusal_at` with `refusal_fix`."""

    name: str  # e.g. init-pytorch
    replica_type: str  # the pods that get it
    beside: Optional[str] = None  # only when the job also has this replica type (PyTorch: Master)
    refusal_at: tuple[str, ...] = ("framework",)
    refusal_fix: str = ""

    def containers(self, replica_type: str, replica_types: Collection[str]) -> list[str]:
        """Its name for the pods of `replica_type` in a job with `replica_types`, else nothing."""
        if replica_type == self.replica_type and (self.beside is None or self.beside in replica_types):
            return [self.name]
        return []


def operator_init_container(name: str, controller: str) -> dict[str, Any]:
    """Init container `name` as far as pod security sees it when `controller` adds it."""
    security = INIT_SECURITY_CONTEXT[controller]
    return {"name": name, "securityContext": copy.deepcopy(security)} if security is not None else {"name": name}


class TrainerV2Capable(Protocol):
    """What lowering to a Kubeflow Trainer v2 TrainJob needs to know about a framework."""

    runtime: str  # the stock ClusterTrainingRuntime, e.g. torch-distributed
    ml_policy: str  # the runtime's mlPolicy source that runs this framework: torch, mpi, ...
    program_jobs: tuple[str, ...]  # replicated jobs whose pods run the program (patched)
    reserved_env: tuple[str, ...]  # variables the runtime sets; the Trainer refuses them in trainer.env

    def num_proc_per_node(self, spec: "TrainJobSpec") -> Optional[int]: ...


@dataclass(frozen=True)
class TrainerV2:
    """The usual `TrainerV2Capable`: one `node` replicated job, numProcPerNode from the spec's
    integer `processesPerNode` (`auto` leaves it to the runtime)."""

    runtime: str
    program_jobs: tuple[str, ...] = (NODE,)
    reserved_env: tuple[str, ...] = ()
    processes: Optional[Callable[["TrainJobSpec"], Optional[int]]] = None

    @property
    def ml_policy(self) -> str:
        """The mlPolicy source of its stock runtime (a fact of the Trainer release)."""
        return STOCK_RUNTIMES[self.runtime].ml_policy

    def num_proc_per_node(self, spec: "TrainJobSpec") -> Optional[int]:
        if self.processes is not None:
            return self.processes(spec)
        return spec.processesPerNode if isinstance(spec.processesPerNode, int) else None


@dataclass(frozen=True)
class Adapter:
    """A framework: its facts plus the pure functions the compiler and controller call."""

    facts: Facts
    plan: Callable[["TrainJobSpec"], list[ReplicaPlan]]
    # the Training Operator's defaulting, master role, status rule and validation of the kind
    operator: Operator
    job_fields: Callable[["TrainJobSpec"], dict[str, Any]] = field(default=lambda spec: {})
    # (job, replica_type, index) -> env entries appended to the framework's containers;
    # filled in by the controller-facing half of each module.
    rendezvous_env: Optional[Callable[..., list[dict[str, Any]]]] = None
    trainer_v2: Optional[TrainerV2Capable] = None  # None: Trainer v2 has no runtime for it
    launcher: Optional[Launcher] = None  # None: every replica type is named {job}-<type>-<i>
    operator_init: Optional[OperatorInit] = None  # None: the operator adds no init container

    @property
    def name(self) -> str:
        return self.facts.name


class KindLike(Protocol):
    """An adapter, or what wraps one (the controller's `Kind`): what the pure rules on a kind's
    jobs read (its facts and its operator's defaulting and rules)."""

    @property
    def facts(self) -> Facts: ...

    @property
    def operator(self) -> Operator: ...


def role_plan(spec: "TrainJobSpec", role: str, replica_type: str) -> Optional[ReplicaPlan]:
    """A non-program role (ps, server, evaluator...) from `spec.roles`, or None if absent."""
    entry = spec.roles.get(role)
    if entry is None:
        return None
    replicas = 1 if entry.replicas is None else entry.replicas
    if replicas == 0:
        return None
    return ReplicaPlan(
        replica_type=replica_type,
        replicas=replicas,
        accelerated=False,
        resources=entry.resources,
        command=entry.command,
        args=entry.args,
        role=role,
    )


# --- helpers for the controller half of the adapters (rendezvous env on raw job dicts)


def env_var(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def replica_count(replica: dict[str, Any]) -> int:
    """`replicas` of a raw replica spec; upstream defaults a missing count to 1."""
    value = replica.get("replicas")
    return 1 if value is None else int(value)


def template_part(replica: dict[str, Any], part: str) -> dict[str, Any]:
    """`replica.template.<part>` (spec or metadata) of a raw replica spec, {} when absent or
    null: the API server keeps `metadata:` with no value as null, and reads null as absent."""
    return (replica.get("template") or {}).get(part) or {}


def named_port(replica: dict[str, Any], facts: Facts, *, fallback: Optional[int] = None) -> int:
    """The framework port (`facts.port_name` on `facts.container`) of a raw replica spec.

    Upstream refuses to create the pod when a framework needs the port and it is
    missing (ValueError here); TF and Paddle fall back to the default number instead.
    """
    for container in template_part(replica, "spec").get("containers") or []:
        if container.get("name") == facts.container:
            for port in container.get("ports") or []:
                if port.get("name") == facts.port_name:
                    return int(port["containerPort"])
    if fallback is not None:
        return fallback
    raise ValueError(f"container {facts.container} has no port named {facts.port_name}")
