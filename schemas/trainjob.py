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
    Discriminator,
    Field,
    Tag,
    create_model,
    model_validator,
)

# the spec's parts live in their own modules; they are imported from here too (one name per model)
from schemas.elastic import Elastic
from schemas.placement import Gang, GangChoice, RoleScheduling, Scheduling, Toleration  # noqa: F401
from schemas.resources import ResourceLimits, Resources  # noqa: F401
from schemas.strict import ConfigMapRef, EnvValue, SecretRef, StrictModel  # noqa: F401
from schemas.types import (
    ContainerName,
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
    StorageUri,
)

API_VERSION = "trainforge.dev/v1alpha1"
# the adapter table's names (foundation/frameworks/__init__.py), which this layer cannot import:
# tests/foundation/test_framework_table.py fails when the two differ
Framework = Literal["pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax", "mxnet"]
FRAMEWORKS: tuple[str, ...] = Framework.__args__  # type: ignore[attr-defined]


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


RestartPolicy = Literal["OnFailure", "Never", "ExitCode", "Always"]


class Role(StrictModel):
    """One replica type of the kind, by its lower-case name: settings for its pods only.

    Main roles (those `nodes` counts: pytorch master and worker, tensorflow chief and worker,
    worker elsewhere) take no `replicas`; tensorflow's `chief: {replicas: 0}` makes a job without
    its chief pod. Extra roles (tensorflow ps and evaluator, paddle ps, mxnet server) exist only when
    listed, with `replicas` (default 1). One-pod roles (the mpi launcher, the mxnet scheduler) are
    always there. Each field given replaces the job's for this role; `env` is merged over spec.env."""

    replicas: Optional[NonNegativeInt] = Field(
        None, description="Pods of an extra role (default 1); 0 leaves it out. Main and one-pod roles take none"
        " (tensorflow's chief takes 0: no chief pod)."
    )
    image: Optional[NonEmptyStr] = Field(None, description="Overrides spec.image for this role.")
    container: Optional[ContainerName] = Field(
        None, description="The name of this role's program container (framework mpi only: the MPI operators run"
        " the first container whatever its name; the others find it by the framework's name)."
    )
    command: Optional[list[NonEmptyStr]] = Field(
        None, description="Overrides spec.command for this role; [] runs the image's entrypoint."
    )
    args: Optional[list[str]] = Field(None, description="Overrides spec.args for this role; [] passes none.")
    env: Optional[dict[EnvName, EnvValue]] = Field(
        None, description="Merged over spec.env for this role (a name given here wins)."
    )
    restart: Optional[RestartPolicy] = Field(
        None, description="This replica type's restartPolicy, over policy.restart; kubeflow-v1 only."
    )
    resources: Optional[Resources] = Field(
        None, description="Replaces the job's per-node resources for this role (an extra role has none of the"
        " job's: no GPUs unless asked)."
    )
    scheduling: Optional[RoleScheduling] = Field(
        None, description="nodeSelector, tolerations and affinity for this role's pods (each replaces the job's)."
    )
    # checked like spec.podTemplate (compiler/review/podschema.py), merged after it
    podTemplate: dict[str, Any] = Field(
        default_factory=dict, description="Strategic-merge patch onto this role's pod template only, after"
        " spec.podTemplate (volumes, annotations, init containers...)."
    )


class Policy(StrictModel):
    restart: Optional[RestartPolicy] = Field(
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


class Mpi(StrictModel):
    """The mpi-operator's own MPIJob settings (`kubeflow.org/v2beta1`, target mpi-operator); each is written
    only when set, so the operator's defaults apply otherwise (OpenMPI, /root/.ssh, AtStartup)."""

    implementation: Optional[Literal["OpenMPI", "Intel", "MPICH"]] = Field(
        None, description="mpiImplementation: the MPI the image runs (the hostfile's format follows it); default OpenMPI.")
    sshAuthMountPath: Optional[NonEmptyStr] = Field(
        None, description="Where the SSH keys are mounted; default /root/.ssh, root's (a non-root user, as restricted"
        " pod security needs, reads its own, e.g. /home/mpiuser/.ssh).")
    runLauncherAsWorker: Optional[bool] = Field(
        None, description="The launcher also runs MPI processes: it is one of the nodes; default false.")
    launcherCreationPolicy: Optional[Literal["AtStartup", "WaitForWorkersReady"]] = Field(
        None, description="WaitForWorkersReady: the launcher starts once every worker is Ready; default AtStartup.")


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


class InitializerSource(StrictModel):
    """One initializer step's input: the runtime's `dataset-initializer` or `model-initializer` job gets
    it as STORAGE_URI (and the Secret's keys as its environment)."""

    storageUri: StorageUri = Field(description="Where to download from: hf://, s3://, gs://... (scheme://...).")
    secret: Optional[ObjectName] = Field(
        None, description="A Secret in the job's namespace whose keys the initializer gets as environment (envFrom)."
    )
    env: Optional[dict[EnvName, EnvValue]] = Field(None, description="More environment for the initializer.")


class Initializer(StrictModel):
    """Trainer v2's initializer steps, each in a replicated job of the runtime that runs before the trainer."""

    dataset: Optional[InitializerSource] = Field(None, description="The dataset the trainer reads.")
    model: Optional[InitializerSource] = Field(None, description="The model the trainer starts from.")


class TrainJobSpec(StrictModel):
    """What one training job runs; the data scientist's ~20 lines."""

    framework: Framework = Field(description="Which Kubeflow job kind the spec becomes.")
    image: Optional[NonEmptyStr] = Field(
        None, description="Container image that runs the training program. Required under kubeflow-v1 (unless"
        " every role gives its own); under trainer-v2 the runtime's when unset."
    )
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
        default_factory=dict, description="Per replica type, by its lower-case name: extra roles (tensorflow"
        " ps/evaluator, paddle ps, mxnet server) and settings for one role's pods only (roles.worker.image, ...);"
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
    mpi: Optional[Mpi] = Field(
        None, description="framework mpi under target mpi-operator only: the MPI implementation, where the SSH keys"
        " are mounted, whether the launcher is also a worker, when the launcher starts."
    )
    runtime: Optional[RuntimeChoice] = Field(
        None,
        description="trainer-v2 only: the runtime (a ClusterTrainingRuntime name, or {name, kind:"
        " TrainingRuntime}); default: the framework's stock runtime. A runtime document in the sources is"
        " compiled with the jobs that name it. No effect under kubeflow-v1.",
    )
    initializer: Optional[Initializer] = Field(
        None, description="trainer-v2 only: what the runtime's dataset and model initializer steps download"
        " (Trainer v2.3's TrainJob initializer)."
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
        # one (none but framework, which is the job's) would have nothing to fall back to
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
