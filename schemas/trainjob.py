"""The `TrainJob` document (`trainforge.dev/v1alpha1`) as pydantic models.

This is the contract users write, field for field as `shared/docs/trainjob-spec.md` names
it. Models are strict and reject unknown fields, so a typo is an error with a position
rather than a silently ignored key. Only single-field facts live here (types, ranges,
one-of choices inside one object); rules that relate several fields or need the project
file (roles per framework, GPU types, policy) live in `compiler/review/rules.py`.
`EnvOverride` is derived from `TrainJobSpec` so the two can never drift apart.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    create_model,
    model_validator,
)

from schemas.types import (
    EnvName,
    LabelKey,
    LabelValue,
    Name,
    Namespace,
    NonEmptyStr,
    NonNegativeInt,
    ObjectName,
    PositiveInt,
    Quantity,
    Seconds,
)

API_VERSION = "trainforge.dev/v1alpha1"
# the adapter table's names (foundation/frameworks/__init__.py), which this layer cannot import:
# tests/foundation/test_framework_table.py fails when the two differ
Framework = Literal["pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax", "mxnet"]
FRAMEWORKS: tuple[str, ...] = Framework.__args__  # type: ignore[attr-defined]


class StrictModel(BaseModel):
    """Base for every spec object: strict types, unknown keys rejected, camelCase names."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=False)


class SecretRef(StrictModel):
    secret: NonEmptyStr = Field(description="Secret name in the job's namespace.")
    key: NonEmptyStr = Field(description="Key inside the Secret.")


class ConfigMapRef(StrictModel):
    configMap: NonEmptyStr = Field(description="ConfigMap name in the job's namespace.")
    key: NonEmptyStr = Field(description="Key inside the ConfigMap.")


def _env_kind(value: Any) -> str | None:
    # Tags show up in pydantic error locs; "env:" keeps them apart from the real keys
    # `secret` and `configMap` of the same objects (compiler/reading/validation.py skips them).
    if isinstance(value, str):
        return "env:value"
    if isinstance(value, dict):
        return "env:configMap" if "configMap" in value else "env:secret"
    return None


EnvValue = Annotated[
    Annotated[str, Field(strict=True), Tag("env:value")]
    | Annotated[SecretRef, Tag("env:secret")]
    | Annotated[ConfigMapRef, Tag("env:configMap")],
    Discriminator(
        _env_kind,
        custom_error_type="env_value",
        custom_error_message="an env value is a string, {secret: NAME, key: KEY} or"
        " {configMap: NAME, key: KEY}; quote numbers and booleans",
    ),
]


class Resources(StrictModel):
    """Per-node resources. GPUs become limits of the environment's gpuResource."""

    gpu: Optional[NonNegativeInt] = Field(None, description="Whole GPUs per node.")
    gpuType: Optional[NonEmptyStr] = Field(
        None, description="GPU model, resolved through the environment's gpuTypes table."
    )
    cpu: Optional[Quantity] = None
    memory: Optional[Quantity] = None
    sharedMemory: Optional[Quantity] = Field(
        None, description="Size of /dev/shm (a memory-backed emptyDir)."
    )


class Role(StrictModel):
    """A framework-specific extra role (e.g. tensorflow `ps`, mxnet `server`)."""

    replicas: NonNegativeInt = Field(1, description="Pods of this role.")
    resources: Optional[Resources] = Field(None, description="The role's own resources (no GPUs unless asked).")
    command: Optional[list[NonEmptyStr]] = Field(None, description="Overrides spec.command for this role.")
    args: Optional[list[str]] = Field(None, description="Overrides spec.args for this role.")


class Elastic(StrictModel):
    """Elastic training (pytorch only): torchrun rendezvous between min and max nodes."""

    minNodes: PositiveInt = Field(description="Fewest nodes the job runs on.")
    maxNodes: PositiveInt = Field(description="Most nodes the job scales to.")
    maxRestarts: Optional[NonNegativeInt] = Field(None, description="torchrun restarts before failing.")

    @model_validator(mode="after")
    def _ordered(self) -> "Elastic":
        if self.maxNodes < self.minNodes:
            raise ValueError(
                f"maxNodes ({self.maxNodes}) is below minNodes ({self.minNodes});"
                " set maxNodes >= minNodes"
            )
        return self


class Volume(StrictModel):
    """A volume mounted into every pod that runs the program: an existing claim or a new PVC."""

    name: Name = Field(description="Volume name; a new PVC is named <job>-<name>.")
    mountPath: NonEmptyStr = Field(description="Where the volume appears in the containers.")
    claim: Optional[NonEmptyStr] = Field(None, description="Existing PersistentVolumeClaim.")
    size: Optional[Quantity] = Field(None, description="Create a PVC of this size.")
    storageClass: Optional[NonEmptyStr] = None
    accessMode: Optional[
        Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
    ] = None
    readOnly: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> "Volume":
        if self.claim is not None and self.size is not None:
            raise ValueError(
                "has both claim and size; keep claim to mount an existing PVC or size to create one"
            )
        if self.claim is None and self.size is None:
            raise ValueError(
                "has neither claim nor size; add claim: <existing PVC> or size: <e.g. 100Gi>"
            )
        if self.claim is not None and (self.storageClass or self.accessMode):
            raise ValueError(
                "storageClass and accessMode only apply to a new PVC; drop them or use size"
            )
        return self


class Toleration(StrictModel):
    key: Optional[str] = None
    operator: Optional[Literal["Exists", "Equal"]] = None
    value: Optional[str] = None
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None
    tolerationSeconds: Optional[int] = None


class Gang(StrictModel):
    scheduler: Literal["volcano", "coscheduling"] = "volcano"
    timeoutSeconds: Optional[PositiveInt] = None


def _gang_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "switch"
    return "object" if isinstance(value, dict) else None


GangChoice = Annotated[
    Annotated[bool, Tag("switch")] | Annotated[Gang, Tag("object")],
    Discriminator(
        _gang_kind,
        custom_error_type="gang_value",
        custom_error_message="gang is true, false or {scheduler: volcano | coscheduling,"
        " timeoutSeconds: N}",
    ),
]


class Scheduling(StrictModel):
    queue: Optional[NonEmptyStr] = Field(
        None,
        description="Kueue LocalQueue name; null: none, not even the environment's default. Not for mpi or"
        " mxnet under kubeflow-v1: Kueue v0.17 does not manage those kinds (refused).",
    )
    priority: Optional[NonEmptyStr] = Field(None, description="PriorityClass name; under trainer-v2 only as a Kueue label (kueuePriority).")
    gang: Optional[GangChoice] = Field(
        None,
        description="true = the environment's gang scheduler (else volcano), or an object.",
    )
    nodeSelector: Optional[dict[LabelKey, LabelValue]] = None
    tolerations: Optional[list[Toleration]] = None


class Policy(StrictModel):
    restart: Optional[Literal["OnFailure", "Never", "ExitCode", "Always"]] = Field(
        None, description="Replica restartPolicy; ExitCode retries exit codes 128-255 only. Under trainer-v2 only with"
        " restartScope: job, as OnFailure or ExitCode."
    )
    restartScope: Optional[Literal["pod", "job"]] = Field(
        None,
        description="pod (the default, upstream's): a retryable exit restarts that pod. job: it restarts every pod of"
        " the job as one new attempt, counted once against backoffLimit; kubeflow-v1 under controller:"
        " train-controller, or trainer-v2 with a backoffLimit (a TrainingRuntime of the job's own with a JobSet"
        " failurePolicy; docs/migration-trainer-v2.md).",
    )
    backoffLimit: Optional[NonNegativeInt] = Field(
        None, description="Restarts before the job fails. Under trainer-v2 only with restartScope: job (whole-job"
        " restarts: the JobSet's failurePolicy.maxRestarts)."
    )
    activeDeadline: Optional[Seconds] = Field(None, description="90s, 30m, 24h, 7d or seconds.")
    ttlAfterFinished: Optional[Seconds] = Field(
        None, description="90s, 30m, 24h, 7d or seconds. Under kubeflow-v1 a warning (the project policy's"
        " ttlAfterFinished: error, or --strict, makes it an error): the GitOps engine creates the deleted job again"
        " and it runs again; cleanPods: All frees the pods instead. An error under trainer-v2."
    )
    cleanPods: Optional[Literal["Running", "All", "None"]] = Field(
        None, description="Which pods to delete when the job finishes. kubeflow-v1 only (an error under trainer-v2)."
    )
    suspend: Optional[bool] = Field(
        None, description="Only true is written out (Kueue flips it in the cluster)."
    )


class PolicyRule(StrictModel):
    apiGroups: list[str] = Field(default_factory=lambda: [""])
    resources: list[NonEmptyStr] = Field(min_length=1)
    verbs: list[NonEmptyStr] = Field(min_length=1)
    resourceNames: Optional[list[NonEmptyStr]] = None


class ServiceAccount(StrictModel):
    name: Optional[Name] = Field(None, description="Use this ServiceAccount (default: the job's name when create).")
    create: bool = False
    rules: list[PolicyRule] = Field(default_factory=list)
    imagePullSecrets: list[NonEmptyStr] = Field(default_factory=list)

    @model_validator(mode="after")
    def _rules_need_create(self) -> "ServiceAccount":
        if not self.create and (self.rules or self.imagePullSecrets):
            raise ValueError("rules and imagePullSecrets need create: true; add it or drop them")
        return self


def _ppn_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    return "count" if isinstance(value, int) else "auto"


ProcessesPerNode = Annotated[
    Annotated[Literal["auto"], Tag("auto")] | Annotated[PositiveInt, Tag("count")],
    Discriminator(
        _ppn_kind,
        custom_error_type="processes_value",
        custom_error_message="processesPerNode is auto or a whole number >= 1",
    ),
]


class RuntimeRef(StrictModel):
    """A Kubeflow Trainer v2 runtime by kind: a namespaced TrainingRuntime lives in the job's namespace."""

    name: ObjectName = Field(description="The runtime's name.")
    kind: Literal["ClusterTrainingRuntime", "TrainingRuntime"] = Field(
        "ClusterTrainingRuntime", description="TrainingRuntime: namespaced, in the job's namespace."
    )


def _runtime_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return "runtime:name"
    return "runtime:ref" if isinstance(value, dict) else None


RuntimeChoice = Annotated[
    Annotated[ObjectName, Tag("runtime:name")] | Annotated[RuntimeRef, Tag("runtime:ref")],
    Discriminator(
        _runtime_kind,
        custom_error_type="runtime_value",
        custom_error_message="runtime is a ClusterTrainingRuntime name or {name, kind};"
        " write e.g. runtime: my-runtime or runtime: {name: my-runtime, kind: TrainingRuntime}",
    ),
]


class TrainJobSpec(StrictModel):
    """What one training job runs; the data scientist's ~20 lines."""

    framework: Framework = Field(description="Which Kubeflow job kind the spec becomes.")
    image: NonEmptyStr = Field(description="Container image that runs the training program.")
    command: Optional[list[NonEmptyStr]] = Field(None, description="Entrypoint; the image's own otherwise.")
    args: Optional[list[str]] = Field(None, description="Arguments to the command.")
    workingDir: Optional[NonEmptyStr] = Field(
        None, description="Working directory of the container. kubeflow-v1 only (an error under trainer-v2)."
    )
    env: dict[EnvName, EnvValue] = Field(
        default_factory=dict,
        description="Environment: a string, {secret: NAME, key: KEY} or {configMap: NAME, key: KEY}.",
    )
    nodes: PositiveInt = Field(1, description="Pods that run the training program.")
    processesPerNode: ProcessesPerNode = Field(
        "auto", description="pytorch nprocPerNode (auto: torchrun counts GPUs); mpi slotsPerWorker."
    )
    resources: Resources = Field(default_factory=Resources, description="Per-node resources.")
    roles: dict[Name, Role] = Field(
        default_factory=dict, description="Framework-specific extra roles (tensorflow ps/evaluator, mxnet server...);"
        " kubeflow-v1 only."
    )
    elastic: Optional[Elastic] = Field(
        None, description="Elastic training between minNodes and maxNodes (pytorch); kubeflow-v1 only (an error under trainer-v2)."
    )
    storage: list[Volume] = Field(default_factory=list, description="Volumes mounted into every pod.")
    scheduling: Scheduling = Field(default_factory=Scheduling, description="Queue, priority, gang and placement.")
    policy: Policy = Field(default_factory=Policy, description="Restart, backoff, deadline, TTL and cleanup.")
    serviceAccount: Optional[ServiceAccount] = Field(
        None, description="Pods' ServiceAccount; create: true writes SA + Role + RoleBinding."
    )
    # checked field by field against Kubernetes' own schema by compiler/review/podschema.py; the JSON
    # Schema refers to the PodTemplateSpec definitions schemas/export.py embeds
    podTemplate: dict[str, Any] = Field(
        default_factory=dict, description="Strategic-merge patch onto every pod template, checked against"
        " Kubernetes v1.32's PodTemplateSpec (null deletes a field; $patch, $retainKeys allowed)."
    )
    runtime: Optional[RuntimeChoice] = Field(
        None,
        description="trainer-v2 only: the runtime (a ClusterTrainingRuntime name, or {name, kind:"
        " TrainingRuntime}); default: the framework's stock runtime. No effect under kubeflow-v1.",
    )


def _optional(annotation: Any) -> Any:
    return Optional[annotation]


# Per-environment overrides: every spec field optional, framework fixed by the job.
EnvOverride = create_model(  # type: ignore[call-overload]
    "EnvOverride",
    __base__=StrictModel,
    __doc__="Fields deep-merged over spec for one environment.",
    **{
        # null unsets an optional field for the environment (compiler/reading/resolve.py); a required
        # one (image) has nothing to fall back to, so its override takes a value or nothing
        name: (field.annotation if field.is_required() else _optional(field.annotation),
               Field(None, description=field.description))
        for name, field in TrainJobSpec.model_fields.items()
        if name != "framework"
    },
)


class TrainJobSpecWithEnvs(TrainJobSpec):
    environments: dict[Name, Optional[EnvOverride]] = Field(  # type: ignore[valid-type]
        default_factory=dict, description="Per-environment overrides, deep-merged over spec; null: the job is"
        " not compiled into that environment (it does not exist there)."
    )


class Metadata(StrictModel):
    name: Name = Field(description="DNS-1035 label; every generated name must stay within 63 characters.")
    namespace: Optional[Namespace] = Field(None, description="Default: the environment's, the project's, else default.")
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, description="Copied to the Kubeflow job and every pod."
    )
    annotations: dict[str, str] = Field(default_factory=dict, description="Copied to the Kubeflow job.")


class TrainJob(StrictModel):
    """A whole TrainJob document."""

    apiVersion: Literal["trainforge.dev/v1alpha1"]
    kind: Literal["TrainJob"]
    metadata: Metadata
    spec: TrainJobSpecWithEnvs
