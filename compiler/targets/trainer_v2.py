"""The `trainer-v2` target: a Kubeflow Trainer v2 `TrainJob` (`trainer.kubeflow.org/v1alpha1`).

A TrainJob names a runtime (`runtimeRef`: the framework's stock ClusterTrainingRuntime,
or `spec.runtime`) and overrides only what the runtime leaves to the job: `trainer`
(image, command, args, env, numNodes, numProcPerNode, resourcesPerNode), `suspend` and
`activeDeadlineSeconds`. Everything about pods beyond that goes through one
`runtimePatches` entry owned by the manager `trainforge.dev/compiler` (the v2.3 API),
with one `replicatedJobs` entry per replicated job that runs the program (`node`, and
`launcher` for MPI, whose stock runtime runs the launcher as a node). Lowering writes
that entry with the pod labels, /dev/shm and pull secrets; the rbac, storage and
scheduling overlays then patch its pod templates exactly as they patch a v1 replica's,
so the kustomize tree keeps its layout and `kubectl kustomize` still equals `render`.
With `policy.restartScope: job` the job also gets a TrainingRuntime of its own, in a
`runtime/` component, and names it (`trainer_v2_restarts` says why and what is in it).

Why the `node` container is always listed (even with nothing but its name): overlays
add volume mounts to the program container by index, and a JSON6902 add needs the
entry to exist. The Trainer's webhook accepts a container patch that names a container
of the runtime's job, which `node` is in every runtime the Trainer can drive.
"""

from __future__ import annotations

from typing import Iterator, Optional

from compiler import podsecurity, strategic
from compiler.diagnostics import Diagnostic
from foundation.frameworks import adapter as adapter_for
from foundation.frameworks.stock_runtimes import API_VERSION, TRAINJOB, TRAINJOBS
from compiler.reading.resolve import Target
from compiler.targets import trainer_v2_restarts as restarts
from compiler.targets import trainer_v2_rules
from compiler.targets import trainer_v2_sources as sources
from compiler.targets.base import JobRuntime, PlanFacts, TargetApi, gpus_in
from compiler.targets.lowering import (
    DIVISOR,
    POD_TEMPLATE_QUANTITIES,
    SHM_PATH,
    SHM_VOLUME,
    env_vars,
    resource_requirements,
    shared_memory_volume,
)
from compiler.targets.trainer_v2_rules import CONTAINER
from compiler.targets.trainer_v2_sources import capability, runtime_ref
from overlays import waves
from schemas.bundle import Bundle, Component, JsonObject
from schemas.jsoncopy import json_copy
from schemas.quantity import canonical_quantities
from schemas.trainjob import Initializer, Resources

KIND, PLURAL = TRAINJOB, TRAINJOBS
MANAGER = "trainforge.dev/compiler"
# Fields the v2.3 CRD holds immutable (`self == oldSelf`, evaluated when both sides have the
# field): a change is refused whatever the job's state. So are these fields of each pod spec
# patch inside runtimePatches; the rest of runtimePatches (pod labels and annotations, node
# selector, affinity, tolerations) its webhook refuses to change unless the job was suspended
# (pkg/runtime/framework/plugins/jobset: suspended before or after the update, and no active
# pods). Probed on the real Trainer (tests/e2e/test_plan_engines.py).
IMMUTABLE = ("trainer", "runtimeRef", "initializer", "activeDeadlineSeconds", "managedBy")
POD_PATCH_IMMUTABLE = ("containers", "initContainers", "volumes", "imagePullSecrets", "securityContext",
                       "serviceAccountName", "terminationGracePeriodSeconds")
PATCHES = "/spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs"
RUNTIME_COMPONENT = sources.COMPONENT  # the folder of the job's own runtime (restartScope: job, or the sources')

# Where Trainer's Go types hold a `resource.Quantity` in what the compiler writes (paths in
# the TrainJob's spec, "*" any key or item). Trainer's mutating webhook decodes a TrainJob
# into those types and answers with a patch, so on create the API server stores each of
# these as its canonical string (`4` -> "4", `0.5` -> "500m", `1.5Gi` -> "1536Mi"); and
# `spec.trainer` is immutable, so a re-apply of the written form was refused ("field is
# immutable") once a job existed. The compiler writes the stored form instead.
# each replicated job's pod template: every quantity a PodTemplateSpec holds (the paths
# kubeflow-v1 canonicalizes for Kueue's webhook) is one here too
_POD_TEMPLATE = ("runtimePatches", "*", "trainingRuntimeSpec", "template", "spec", "replicatedJobs", "*",
                 "template", "spec", "template")
QUANTITY_PATHS: tuple[tuple[str, ...], ...] = (
    ("trainer", "resourcesPerNode", "requests", "*"),
    ("trainer", "resourcesPerNode", "limits", "*"),
    ("trainer", *DIVISOR),
    *((*_POD_TEMPLATE, *path) for path in POD_TEMPLATE_QUANTITIES),
)


def _trainer(target: Target) -> JsonObject:
    spec = target.spec
    trainer: JsonObject = {}
    if spec.image is not None:  # else the runtime's (trainer_v2_rules checks it has one)
        trainer["image"] = spec.image
    if spec.command:
        trainer["command"] = list(spec.command)
    if spec.args:
        trainer["args"] = list(spec.args)
    env = env_vars(spec.env)
    if env:
        trainer["env"] = env
    trainer["numNodes"] = spec.nodes
    processes = capability(target).num_proc_per_node(spec)
    if processes is not None:
        trainer["numProcPerNode"] = processes
    resources = resource_requirements(spec.resources, target.environment.gpuResource)
    if resources:
        trainer["resourcesPerNode"] = resources
    return trainer


def _pod_template(target: Target) -> JsonObject:
    """The pod template patch every program job gets; podTemplate (checked to fit the
    patchable fields by the rules) merged in with its container renamed to `node`."""
    spec = target.spec
    container: JsonObject = {"name": CONTAINER}
    pod: JsonObject = {"containers": [container]}
    if spec.resources.sharedMemory:
        container["volumeMounts"] = [{"name": SHM_VOLUME, "mountPath": SHM_PATH}]
        pod["volumes"] = [shared_memory_volume(spec.resources.sharedMemory)]
    if spec.serviceAccount is not None and spec.serviceAccount.imagePullSecrets:
        pod["imagePullSecrets"] = [{"name": name} for name in spec.serviceAccount.imagePullSecrets]
    template: JsonObject = {"spec": pod}
    if target.labels:
        template["metadata"] = {"labels": dict(sorted(target.labels.items()))}
    if spec.podTemplate:
        template = strategic.merge(template, renamed_containers(target, spec.podTemplate))
    if target.policy.podSecurityDefaults:  # security contexts are patchable fields: as in v1
        template = podsecurity.harden(template)
    return template


def renamed_containers(target: Target, patch: JsonObject) -> JsonObject:
    """podTemplate names the program container as v1 does (e.g. `pytorch`); here it is `node`."""
    v1_name = adapter_for(target.spec.framework).facts.container
    containers = (patch.get("spec") or {}).get("containers")
    if not isinstance(containers, list):
        return patch
    renamed = [
        {**c, "name": CONTAINER} if isinstance(c, dict) and c.get("name") == v1_name else c
        for c in containers
    ]
    return {**patch, "spec": {**patch["spec"], "containers": renamed}}


def lower(target: Target) -> Bundle:
    fw = adapter_for(target.spec.framework)
    template = _pod_template(target)
    replicated_jobs = [
        {"name": name, "template": {"spec": {"template": json_copy(template)}}}
        for name in capability(target).program_jobs
    ]
    metadata: JsonObject = {"name": target.name, "namespace": target.namespace}
    if target.labels:
        metadata["labels"] = dict(sorted(target.labels.items()))
    if target.annotations:
        metadata["annotations"] = dict(sorted(target.annotations.items()))
    runtime = _whole_job_runtime(target)
    ref = runtime_ref(target) if runtime is None else {"name": target.name, "kind": restarts.KIND}
    job_spec: JsonObject = {"runtimeRef": ref, "trainer": _trainer(target)}
    if target.spec.initializer is not None:
        job_spec["initializer"] = initializer(target.spec.initializer)
    policy = target.spec.policy
    if policy.activeDeadline is not None:
        job_spec["activeDeadlineSeconds"] = policy.activeDeadline
    if policy.suspend:  # only true is written: Kueue flips suspend in the cluster
        job_spec["suspend"] = True
    job_spec["runtimePatches"] = [
        {"manager": MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": replicated_jobs}}}}
    ]
    job = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": canonical_spec(job_spec)}
    bundle = Bundle(target=target, adapter=fw, job=job, api=API)
    return bundle if runtime is None else bundle.with_component(Component(RUNTIME_COMPONENT, resources=(runtime,)))


def initializer(spec: Initializer) -> JsonObject:
    """The TrainJob's `initializer`: each step's storageUri, env and Secret (envFrom), as v2.3 names them."""
    out: JsonObject = {}
    for step in ("dataset", "model"):
        source = getattr(spec, step)
        if source is None:
            continue
        entry: JsonObject = {"storageUri": source.storageUri}
        if source.env:
            entry["env"] = env_vars(source.env)
        if source.secret is not None:
            entry["secretRef"] = {"name": source.secret}
        out[step] = entry
    return out


def _whole_job_runtime(target: Target) -> Optional[JsonObject]:
    """With restartScope: job, the job's own TrainingRuntime (trainer_v2_restarts), in the
    prerequisite sync wave: Trainer refuses a TrainJob whose runtime does not exist yet."""
    policy = target.spec.policy
    if policy.restartScope != "job":
        return None
    assert policy.backoffLimit is not None, "trainer_v2_rules refuses restartScope: job without backoffLimit"
    runtime = restarts.whole_job_runtime(
        stock=runtime_ref(target)["name"], name=target.name, namespace=target.namespace, labels=target.labels,
        max_restarts=policy.backoffLimit, exit_codes=policy.restart == "ExitCode")
    return waves.annotate(runtime)


def canonical_spec(spec: JsonObject) -> JsonObject:
    """The TrainJob spec as Trainer's admission stores it (see QUANTITY_PATHS)."""
    return canonical_quantities(spec, QUANTITY_PATHS)


def pod_templates(bundle: Bundle) -> list[tuple[str, str]]:
    jobs = bundle.job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    return [(job["name"], f"{PATCHES}/{i}/template/spec/template/spec") for i, job in enumerate(jobs)]


def role_resources(bundle: Bundle) -> dict[str, Optional[Resources]]:
    """Every program job runs on nodes with resourcesPerNode (an MPI launcher too)."""
    return {role: bundle.target.spec.resources for role, _ in pod_templates(bundle)}


def pod_names(target: Target) -> list[str]:
    """The longest pod hostname JobSet gives, `{job}-{replicated job}-{job index}-{pod index}`,
    for every program job at numNodes pods (an upper bound: an MPI node job has one fewer)."""
    found = adapter_for(target.spec.framework).trainer_v2  # None: refused at spec.framework instead
    jobs = found.program_jobs if found is not None else ()
    return [f"{target.name}-{name}-0-{target.spec.nodes - 1}" for name in jobs]


def pods(bundle: Bundle) -> list[tuple[str, int, int]]:
    """numNodes nodes (an MPI launcher is one of them), each with resourcesPerNode."""
    trainer = bundle.job["spec"]["trainer"]
    return [(CONTAINER, trainer["numNodes"], gpus_in(trainer.get("resourcesPerNode")))]


def _check(target: Target) -> Iterator[Diagnostic]:

    return trainer_v2_rules.check(target)


API = TargetApi(
    name="trainer-v2",
    supports=lambda framework: adapter_for(framework).trainer_v2 is not None,
    check=_check,
    lower=lower,
    pod_templates=pod_templates,
    program_container=lambda bundle: CONTAINER,
    role_resources=role_resources,
    pod_names=pod_names,
    pods=pods,
    # the runtime's templates are the pods'; runtimePatches may change only what
    # trainer_v2_rules.PATCHABLE lists, and the Trainer's webhook, not the Training Operator's, reviews it
    whole_pod_templates=False,
    plan=PlanFacts(
        reader="trainer",
        suspend=("spec", "suspend"),
        ttl=None,  # a TrainJob has no ttlSecondsAfterFinished
        plural=lambda kind: PLURAL if kind == KIND else None,
        kueue_manages=lambda kind: True,  # Kueue integrates TrainJobs
        pod_maker="trainer",  # the Trainer (its JobSet) makes the pods, whatever the environment's controller
        immutable=IMMUTABLE,
        pod_patch_immutable=POD_PATCH_IMMUTABLE,
    ),
    upstream_admission=False,
    operator_init_containers=lambda kind, replica_type, replica_types: [],  # the Training Operator's; runtimes differ
    scheduling_policy=False,
    job_runtime=JobRuntime(RUNTIME_COMPONENT, API_VERSION, (restarts.KIND, sources.CLUSTER)),
    with_runtimes=sources.with_runtimes,
    maker_title="Kubeflow Trainer",
)
