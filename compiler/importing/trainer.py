"""Kubeflow Trainer v2 TrainJobs (`trainer.kubeflow.org/v1alpha1`): their runtime, their framework,
their first-class fields, and the form two of them are compared in.

A TrainJob names a runtime (`runtimeRef`) and overrides part of it: the trainer (image, command,
args, env, nodes, processes and resources per node), suspend, the deadline, and pod fields
through `runtimePatches`. The spec's `framework` is what the runtime runs (its `mlPolicy`: the
stock runtimes' are facts of the release, `foundation/frameworks/stock_runtimes.py`; a runtime
of the team's own must be imported beside the job, so its policy is known). What the runtime
takes for a field the job leaves unset (`numNodes`, `numProcPerNode`) is read from the runtime
too, so a job that leaves them to it and the spec that writes them are the same job.

`runtimePatches` are compared as what they do: per replicated job, the pod template patches
of every entry merged in order (`compiler/strategic.py`), whoever the `manager`; a container
patch that only names its container changes nothing, and is no difference. The spec's
`podTemplate` is the program jobs' patch (the container named `node` there), so what differs
in those is found and kept as for the v1 kinds (`compiler/importing/residual.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from compiler import strategic
from compiler.importing import lifting, pods
from compiler.importing.kinds import JobKind
from compiler.importing.sameness import amounts, plain, same
from compiler.importing.manifests import Manifest
from foundation.frameworks import ADAPTERS
from foundation.frameworks.base import Adapter
from foundation.frameworks.stock_runtimes import API_VERSION as VERSION
from foundation.frameworks.stock_runtimes import GROUP as TRAINER_GROUP
from foundation.frameworks.stock_runtimes import MANAGED_BY_TRAINER as MANAGED_BY
from foundation.frameworks.stock_runtimes import STOCK_RUNTIMES
from foundation.frameworks.stock_runtimes import TRAINJOB as JOB_KIND

Obj = dict[str, Any]
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
DEFAULT_RUNTIME_KIND = "ClusterTrainingRuntime"
SPEC_FIELDS = frozenset({"activeDeadlineSeconds", "initializer", "managedBy", "runtimePatches", "runtimeRef",
                         "suspend", "trainer"})
PATCHES = "runtimePatches"
RESOURCES = (("resourcesPerNode", "requests", "*"), ("resourcesPerNode", "limits", "*"))


@dataclass(frozen=True)
class Runtime:
    """What the importer needs of a runtime: its mlPolicy and the values it gives unset fields."""

    kind: str
    name: str
    ml_policy: Optional[str]  # torch, mpi, jax, xgboost, ... (None: none known)
    num_nodes: Optional[int] = None
    num_proc: Any = None
    program_jobs: tuple[str, ...] = ()


def runtime_of(manifest: Manifest) -> Runtime:
    spec = manifest.data.get("spec") or {}
    policy = spec.get("mlPolicy") or {}
    source = next((k for k in policy if k not in ("numNodes",)), None)
    inner = policy.get(source) if source else None
    jobs = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    return Runtime(str(manifest.data.get("kind")), str((manifest.data.get("metadata") or {}).get("name")),
                   source, policy.get("numNodes"), (inner or {}).get("numProcPerNode") if isinstance(inner, dict) else None,
                   tuple(str(j.get("name")) for j in jobs if isinstance(j, dict)))


def stock(name: str) -> Optional[Runtime]:
    found = STOCK_RUNTIMES.get(name)
    return Runtime(DEFAULT_RUNTIME_KIND, name, found.ml_policy, 1) if found is not None else None


def framework_of(runtime: Runtime) -> Optional[Adapter]:
    """The framework whose Trainer v2 runtimes carry this mlPolicy (torch: pytorch, mpi: mpi...)."""
    return next((a for a in ADAPTERS.values() if a.trainer_v2 is not None
                 and a.trainer_v2.ml_policy == runtime.ml_policy), None)


def ref(job: Obj) -> tuple[str, str]:
    """(kind, name) of a TrainJob's runtimeRef, the CRD's default kind filled in."""
    found = (job.get("spec") or {}).get("runtimeRef") or {}
    return str(found.get("kind") or DEFAULT_RUNTIME_KIND), str(found.get("name"))


@dataclass(frozen=True)
class TrainerKind(JobKind):
    """The TrainJob as a `JobKind`: its pod templates are the merged runtimePatches (patches, not
    pods: Kubernetes' pod defaults are not filled in), its defaults the CRD's and its runtime's."""

    runtime: Optional[Runtime] = None
    whole_pods: bool = False

    @property
    def kind(self) -> str:
        return JOB_KIND

    @property
    def replica_specs(self) -> str:
        return PATCHES

    def replicas(self, job: Obj) -> dict[str, Obj]:
        return {}

    def unknown_fields(self, job: Obj) -> list[tuple[Any, ...]]:
        spec = job.get("spec")
        return [("spec", k) for k in spec if k not in SPEC_FIELDS] if isinstance(spec, dict) else []

    def spec_fields(self) -> set[str]:
        return set(SPEC_FIELDS)

    def containers(self, job: Obj) -> list[Obj]:
        """The trainer's resources per node, as a container would carry them."""
        return [{"resources": ((job.get("spec") or {}).get("trainer") or {}).get("resourcesPerNode") or {}}]

    def default(self, job: Obj) -> Obj:
        spec = job.setdefault("spec", {})
        if not isinstance(spec.get("runtimeRef"), dict):
            spec["runtimeRef"] = {}
        runtime_ref = spec["runtimeRef"]
        runtime_ref.setdefault("apiGroup", TRAINER_GROUP)
        runtime_ref.setdefault("kind", DEFAULT_RUNTIME_KIND)
        if spec.get("managedBy") == MANAGED_BY:
            del spec["managedBy"]
        if spec.get("suspend") is False:
            del spec["suspend"]
        trainer = spec.get("trainer")
        if isinstance(trainer, dict):
            amounts(trainer, RESOURCES)
        if self.runtime is not None and isinstance(trainer, dict):
            for field, value in (("numNodes", self.runtime.num_nodes), ("numProcPerNode", self.runtime.num_proc)):
                if trainer.get(field) is None and value is not None:
                    trainer[field] = value
        if PATCHES in spec:
            spec[PATCHES] = merged_patches(spec[PATCHES])
        return job

    def templates(self, job: Obj) -> Iterator[tuple[str, Obj]]:
        jobs = ((job.get("spec") or {}).get(PATCHES) or {}).get("jobs") or {}
        for name in self.program_jobs():  # a job the patches leave alone: an empty patch (not kept)
            template = (jobs.get(name) or {}).get("template")
            yield name, template if isinstance(template, dict) else {}

    def why(self, loc: tuple[Any, ...]) -> Optional[str]:
        if loc[:3] == ("spec", PATCHES, "jobset"):
            return ("runtimePatches on the JobSet (its own labels and annotations): a spec's podTemplate reaches"
                    " the pods, and nothing reaches the JobSet")
        if loc[:3] == ("spec", PATCHES, "jobs") and len(loc) > 3 and loc[3] not in self.program_jobs():
            return (f"runtimePatches of replicated job {loc[3]}, which does not run the program: a spec's"
                    f" podTemplate reaches {' and '.join(self.program_jobs())} only")
        return None

    def program_jobs(self) -> tuple[str, ...]:
        capability = self.adapter.trainer_v2
        return capability.program_jobs if capability is not None else ()


def merged_patches(patches: Any) -> Any:
    """runtimePatches as what they do: the JobSet's metadata, and per replicated job its Job's
    metadata and its pod template patch, each entry merged over the ones before."""
    if not isinstance(patches, list):
        return patches
    out: Obj = {"jobset": {}, "jobs": {}}
    for entry in patches:
        template = ((entry or {}).get("trainingRuntimeSpec") or {}).get("template") or {}
        if template.get("metadata"):
            out["jobset"] = strategic.merge(out["jobset"], template["metadata"])
        for item in ((template.get("spec") or {}).get("replicatedJobs") or []):
            name = str(item.get("name"))
            job_template = item.get("template") or {}
            have = out["jobs"].setdefault(name, {})
            if job_template.get("metadata"):
                have["metadata"] = strategic.merge(have.get("metadata") or {}, job_template["metadata"])
            pod = (job_template.get("spec") or {}).get("template")
            if pod:
                have["template"] = strategic.merge(have.get("template") or {}, pod)
    for have in out["jobs"].values():
        pod = (have.get("template") or {}).get("spec") or {}
        for field in ("containers", "initContainers"):
            if isinstance(pod.get(field), list):  # a container named and nothing else: no change
                pod[field] = [c for c in pod[field] if not (isinstance(c, dict) and set(c) <= {"name"})]
    return out


def lift(raw: Obj, canon: Obj, kind: TrainerKind) -> Obj:
    """The TrainJob spec of a canonical Trainer v2 TrainJob (podTemplate is the residual's)."""
    adapter = kind.adapter
    spec = canon.get("spec") or {}
    trainer = spec.get("trainer") or {}
    out: Obj = {"framework": adapter.name}
    if trainer.get("image"):
        out["image"] = trainer["image"]
    for field in ("command", "args"):
        if trainer.get(field):
            out[field] = list(trainer[field])
    env = pods.env({"env": trainer.get("env")})
    if env:
        out["env"] = env
    nodes = trainer.get("numNodes")
    if isinstance(nodes, int) and nodes != 1:
        out["nodes"] = nodes
    resources = pods.resources({"resources": plain(trainer.get("resourcesPerNode") or {})},
                               pods.gpu_resource([{"resources": trainer.get("resourcesPerNode") or {}}]))
    if resources:
        out["resources"] = resources
    processes = _processes(adapter, out, trainer.get("numProcPerNode"))
    if processes is not None:
        out["processesPerNode"] = processes
    runtime_kind, name = ref(canon)
    capability = adapter.trainer_v2
    if (runtime_kind, name) != (DEFAULT_RUNTIME_KIND, capability.runtime if capability else None):
        out["runtime"] = name if runtime_kind == DEFAULT_RUNTIME_KIND else {"name": name, "kind": runtime_kind}
    policy: Obj = {}
    if isinstance(spec.get("activeDeadlineSeconds"), int):
        policy["activeDeadline"] = spec["activeDeadlineSeconds"]
    if spec.get("suspend") is True:
        policy["suspend"] = True
    if policy:
        out["policy"] = policy
    init = _initializer(spec.get("initializer"))
    if init:
        out["initializer"] = init
    sched = lifting.scheduling(canon, None)
    if sched:
        out["scheduling"] = sched
    return {"apiVersion": lifting.API_VERSION, "kind": "TrainJob",
            "metadata": lifting.metadata(raw, canon, lifted_queue="queue" in sched), "spec": out}


def _processes(adapter: Adapter, spec: Obj, written: Any) -> Optional[int]:
    """processesPerNode when numProcPerNode is not what the spec's `auto` gives."""
    capability = adapter.trainer_v2
    if capability is None or written is None:
        return None
    from compiler.importing.shapes import probe

    fields = {k: v for k, v in spec.items() if k in ("framework", "nodes", "resources")}
    found = probe(fields)
    auto = capability.num_proc_per_node(found) if found is not None else None
    if same(plain(written), auto) or isinstance(written, bool) or not str(plain(written)).isdigit():
        return None
    return int(str(plain(written)))


def _initializer(found: Any) -> Obj:
    """spec.initializer from the TrainJob's: each step's storageUri, Secret (`secretRef`) and env."""
    out: Obj = {}
    for step, source in (found or {}).items() if isinstance(found, dict) else ():
        if not isinstance(source, dict):
            continue
        entry: Obj = {"storageUri": source.get("storageUri")}
        if isinstance(source.get("secretRef"), dict):
            entry["secret"] = source["secretRef"].get("name")
        env = pods.env({"env": source.get("env")})
        if env:
            entry["env"] = env
        out[step] = entry
    return out
