"""The `Project` document (`trainforge.yaml`): defaults, environments and policy.

A project file sits at the root of a compiled source folder and describes the clusters
the jobs go to: per environment the GPU resource name, how GPU types are placed
(nodeSelector, tolerations, affinity) and scheduling defaults; and the policy every job
must meet. Without one there is a single environment, `default`.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field

from schemas.trainjob import GangChoice, NonEmptyStr, StrictModel, Toleration
from schemas.types import LabelKey, LabelValue, Name, Namespace, NonNegativeInt

DEFAULT_ENV = "default"
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"
PodSecurityLevel = Literal["privileged", "baseline", "restricted"]
DEFAULT_POD_SECURITY = "baseline"
TtlSeverity = Literal["warning", "error"]
DEFAULT_TTL_SEVERITY = "warning"
TargetName = Literal["kubeflow-v1", "trainer-v2", "mpi-operator"]
DEFAULT_TARGET = "kubeflow-v1"
# foundation/frameworks/base.py INIT_SECURITY_CONTEXT says how each one's init containers are secured
ControllerName = Literal["training-operator", "train-controller"]
DEFAULT_CONTROLLER = "training-operator"
CONTROLLER_HELP = (
    "Which controller turns the kubeflow-v1 jobs into pods, so the pod security review judges the pods it"
    " makes: training-operator (upstream: its init-pytorch and kubectl-delivery init containers have no"
    " securityContext, so policy.podSecurity: restricted refuses multi-node PyTorch and MPI jobs) or"
    " train-controller (its init containers meet restricted). Under target trainer-v2 the Trainer makes"
    " the pods, under mpi-operator the mpi-operator: a default here does not apply there, and an"
    " environment's own controller is an error."
)


class GpuPlacement(StrictModel):
    """Where pods asking for one GPU type may run."""

    nodeSelector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    affinity: Optional[dict[str, Any]] = Field(None, description="A core/v1 Affinity object.")


class EnvScheduling(StrictModel):
    """Scheduling defaults for every job of an environment (a job's own values win)."""

    queue: Optional[NonEmptyStr] = Field(None, description="Default Kueue LocalQueue (a job opts out with queue: null).")
    priority: Optional[NonEmptyStr] = Field(None, description="Default priority name.")
    gang: Optional[GangChoice] = Field(None, description="Default gang scheduling.")
    gangScheduler: Literal["volcano", "coscheduling"] = Field(
        "volcano", description="The scheduler `gang: true` means in this environment."
    )
    kueuePriority: bool = Field(
        False,
        description="Write priority as the kueue.x-k8s.io/priority-class label"
        " (a WorkloadPriorityClass) instead of a PriorityClass.",
    )


class ProjectPolicy(StrictModel):
    maxGpusPerJob: Optional[NonNegativeInt] = Field(
        None, description="GPUs over all pods of a job (podTemplate included; elastic jobs at maxNodes)."
    )
    allowedNamespaces: Optional[list[Namespace]] = None
    requiredLabels: list[LabelKey] = Field(default_factory=list)
    podSecurity: Optional[PodSecurityLevel] = Field(
        None,
        description="Pod Security Standards level (Kubernetes v1.32) every compiled pod must meet:"
        " privileged (no checks), baseline (the default: no host namespaces, privileged containers,"
        " extra capabilities, hostPath, host ports, unconfined AppArmor/seccomp, custom SELinux,"
        " unsafe sysctls) or restricted (baseline plus non-root, no privilege escalation, drop ALL,"
        " a seccomp profile, the volume allowlist). Emitted Namespaces carry it as"
        " pod-security.kubernetes.io/enforce, warn and audit (versions v1.32). An environment's"
        " policy inherits it unless it sets its own.",
    )
    podSecurityDefaults: Optional[bool] = Field(
        None,
        description="The compiler writes what restricted requires and can set safely:"
        " allowPrivilegeEscalation: false, capabilities.drop [ALL] and a RuntimeDefault seccomp profile"
        " where a pod leaves them unset (default false; inherited like podSecurity).",
    )
    allowPrivileged: Optional[bool] = Field(
        None,
        description="Deprecated: write podSecurity: privileged (true means that, with a warning).",
    )
    ttlAfterFinished: Optional[TtlSeverity] = Field(
        None,
        description="What a job's policy.ttlAfterFinished is under kubeflow-v1: a warning (the default) or an"
        " error. The TTL deletes the finished job and the GitOps engine that keeps syncing the tree creates it"
        " again, so it runs again; cleanPods: All frees the pods instead (inherited like podSecurity;"
        " train-compile --strict makes every warning an error).",
    )

    def pod_security(self) -> str:
        """The effective level: podSecurity, else the deprecated allowPrivileged, else baseline."""
        if self.podSecurity is not None:
            return self.podSecurity
        return "privileged" if self.allowPrivileged else DEFAULT_POD_SECURITY


# what an environment's own policy inherits from the project's when it leaves them unset
INHERITED_POLICY = ("podSecurity", "podSecurityDefaults", "ttlAfterFinished")


class NamespaceSettings(StrictModel):
    """Namespace objects the compiled tree carries for the namespaces its jobs use."""

    create: bool = Field(
        True,
        description="Emit a Namespace per namespace used (labelled with the Pod Security level, never"
        " pruned by Flux or Argo CD); false when the platform team owns namespaces.",
    )


class Environment(StrictModel):
    gpuResource: NonEmptyStr = DEFAULT_GPU_RESOURCE
    gpuTypes: dict[NonEmptyStr, GpuPlacement] = Field(default_factory=dict)
    scheduling: EnvScheduling = Field(default_factory=EnvScheduling)
    namespace: Optional[Namespace] = Field(None, description="Default namespace here.")
    policy: Optional[ProjectPolicy] = Field(
        None, description="Replaces the project policy here (podSecurity, podSecurityDefaults and ttlAfterFinished are inherited"
        " unless set)."
    )
    namespaces: Optional[NamespaceSettings] = Field(None, description="Default: defaults.namespaces.")
    target: Optional[TargetName] = Field(
        None, description="The API jobs are lowered to here; default: defaults.target."
    )
    controller: Optional[ControllerName] = Field(
        None, description="The controller that makes the pods here (target kubeflow-v1 only); default: defaults.controller."
    )


class ProjectDefaults(StrictModel):
    namespace: Optional[Namespace] = None
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    namespaces: NamespaceSettings = Field(
        default_factory=NamespaceSettings, description="Namespace objects in the compiled tree."
    )
    target: TargetName = Field(
        DEFAULT_TARGET,
        description="kubeflow-v1: kubeflow.org/v1 jobs (Training Operator); trainer-v2: Kubeflow"
        " Trainer v2 TrainJobs on (Cluster)TrainingRuntimes, for pytorch, mpi, jax and xgboost. Under"
        " trainer-v2 these are errors at their field: policy restart and backoffLimit (unless restartScope:"
        " job), ttlAfterFinished and cleanPods, elastic, roles, workingDir, a PriorityClass, gang on a runtime"
        " without podGroupPolicy (docs/migration-trainer-v2.md). mpi-operator: the mpi-operator's"
        " kubeflow.org/v2beta1 MPI job, for mpi only (spec.mpi; restart ExitCode and Always, restartScope:"
        " job are errors; docs/frameworks-and-targets.md).",
    )
    controller: ControllerName = Field(DEFAULT_CONTROLLER, description=CONTROLLER_HELP)


class ProjectMetadata(StrictModel):
    name: Optional[Name] = None


class Project(StrictModel):
    apiVersion: Literal["trainforge.dev/v1alpha1"]
    kind: Literal["Project"]
    metadata: ProjectMetadata = Field(default_factory=ProjectMetadata)
    defaults: ProjectDefaults = Field(default_factory=ProjectDefaults)
    environments: dict[Name, Environment] = Field(default_factory=dict)
    policy: ProjectPolicy = Field(default_factory=ProjectPolicy)

    def environment_names(self) -> list[str]:
        return sorted(self.environments) or [DEFAULT_ENV]

    def environment(self, name: str) -> Environment:
        return self.environments.get(name) or Environment()

    def target_for(self, env: str) -> str:
        own = self.environment(env).target
        return own if own is not None else self.defaults.target

    def controller_for(self, env: str) -> str:
        """The controller that makes the environment's kubeflow-v1 pods (under trainer-v2 the
        Trainer's own controllers make them: the value then has no effect)."""
        own = self.environment(env).controller
        return own if own is not None else self.defaults.controller

    def policy_for(self, env: str) -> ProjectPolicy:
        """The environment's own policy, else the project's; an own policy that leaves the pod
        security fields or the TTL severity unset inherits them (never lowered by omission)."""
        override = self.environment(env).policy
        if override is None:
            return self.policy
        inherited = {
            name: getattr(self.policy, name)
            for name in INHERITED_POLICY
            if getattr(override, name) is None and getattr(self.policy, name) is not None
        }
        return override.model_copy(update=inherited) if inherited else override

    def creates_namespaces(self, env: str) -> bool:
        own = self.environment(env).namespaces
        return (own if own is not None else self.defaults.namespaces).create


DEFAULT_PROJECT = Project(apiVersion="trainforge.dev/v1alpha1", kind="Project")
