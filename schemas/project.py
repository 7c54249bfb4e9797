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


class GpuPlacement(StrictModel):
    """Where pods asking for one GPU type may run."""

    nodeSelector: dict[LabelKey, LabelValue] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    affinity: Optional[dict[str, Any]] = Field(None, description="A core/v1 Affinity object.")


class EnvScheduling(StrictModel):
    """Scheduling defaults for every job of an environment (a job's own values win)."""

    queue: Optional[NonEmptyStr] = Field(None, description="Default Kueue LocalQueue.")
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
    allowPrivileged: bool = Field(
        False,
        description="Allow podTemplate to set privileged, hostNetwork, hostPID or hostPath.",
    )


class Environment(StrictModel):
    gpuResource: NonEmptyStr = DEFAULT_GPU_RESOURCE
    gpuTypes: dict[NonEmptyStr, GpuPlacement] = Field(default_factory=dict)
    scheduling: EnvScheduling = Field(default_factory=EnvScheduling)
    namespace: Optional[Namespace] = Field(None, description="Default namespace here.")
    policy: Optional[ProjectPolicy] = Field(None, description="Replaces the project policy here.")


class ProjectDefaults(StrictModel):
    namespace: Optional[Namespace] = None
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict)


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

    def policy_for(self, env: str) -> ProjectPolicy:
        override = self.environment(env).policy
        return override if override is not None else self.policy


DEFAULT_PROJECT = Project(apiVersion="trainforge.dev/v1alpha1", kind="Project")
