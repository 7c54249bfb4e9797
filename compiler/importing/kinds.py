"""The job kinds `train-compile import` reads, each with what the round trip needs to know of it.

A `JobKind` pairs an `apiVersion`/`kind` with its framework adapter (every fact of the kind
lives there: `foundation/frameworks/`) and says where the kind keeps its replicas and pod
templates and how its operator defaults a job. The importer and the round trip ask the kind
instead of naming one, so a kind the adapters learn (the mpi-operator's `kubeflow.org/v2beta1`
MPIJob, say) is one entry in `KINDS`. `refusal` names the versions nobody runs any more,
so such a manifest gets the reason rather than "not a training job".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from compiler.importing.amounts import plain
from foundation.frameworks import ADAPTERS, mpi_operator
from foundation.frameworks.base import GROUP, Adapter
from foundation.frameworks.defaulting import defaulted
from foundation.frameworks.operator import replica_specs, run_policy

Obj = dict[str, Any]


@dataclass(frozen=True)
class JobKind:
    """One kind the importer reads: its apiVersion and kind, its framework adapter, and the
    project target whose lowering writes it back."""

    api_version: str
    adapter: Adapter
    target: str  # the environment target that compiles to this kind (schemas/project.py)
    whole_pods: bool = True  # its templates are whole pods (Kubernetes' pod defaults apply), not patches

    @property
    def kind(self) -> str:
        return self.adapter.facts.kind

    @property
    def replica_specs(self) -> str:
        return self.adapter.facts.replica_specs

    def replicas(self, job: Obj) -> dict[str, Obj]:
        found = (job.get("spec") or {}).get(self.replica_specs)
        return {str(k): v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}

    def default(self, job: Obj) -> Obj:
        """`job` (changed in place) as the operator reads it: its defaulting and the values it
        takes for unset fields. A pod template's own restartPolicy is dropped: the operator
        writes the replica's into every pod over it (`pod_restart_policy`), so the replica's
        says it all."""
        defaulted(job, self.adapter, copy=False)
        self.adapter.operator.with_implicit(job["spec"])
        for replica in self.replicas(job).values():
            spec = (replica.get("template") or {}).get("spec")
            if isinstance(spec, dict):
                spec.pop("restartPolicy", None)
        return job

    def templates(self, job: Obj) -> Iterator[tuple[str, Obj]]:
        """(replica type, its pod template) of every replica that has one."""
        for replica_type, replica in self.replicas(job).items():
            if isinstance(replica.get("template"), dict):
                yield replica_type, replica["template"]

    def extra(self, job: Obj) -> Obj:
        """The spec fields beside nodes and roles that the framework's plan reads: a v1 kind's elastic
        policy as `elastic` (its bounds and restarts; the rest is compared like any field)."""
        policy = (job.get("spec") or {}).get("elasticPolicy")
        if not self.adapter.facts.elastic or not isinstance(policy, dict):
            return {}
        elastic = {"minNodes": policy.get("minReplicas"), "maxNodes": policy.get("maxReplicas")}
        if policy.get("maxRestarts") is not None:
            elastic["maxRestarts"] = policy["maxRestarts"]
        rendezvous = {field: policy[own] for own, field in RENDEZVOUS.items() if policy.get(own) is not None}
        if rendezvous and rendezvous != {"backend": DEFAULT_BACKEND}:
            elastic["rendezvous"] = rendezvous
        if policy.get("metrics"):
            elastic["metrics"] = plain(policy["metrics"])
        return {"elastic": elastic}

    def default_restart(self, replica_type: str) -> str:
        """The restartPolicy a replica of this type has when it sets none (the kind's defaulting)."""
        return _default_restart(self, replica_type)

    @property
    def clean_pods_default(self) -> str:
        """runPolicy.cleanPodPolicy of a compiled job whose spec sets no policy.cleanPods."""
        return "None"

    def why(self, loc: Loc) -> Optional[str]:
        """Why a difference at `loc` (of the canonical form) has no spec field, where the kind knows
        better than "the spec cannot say this"; None otherwise."""
        return None

    def containers(self, job: Obj) -> list[Obj]:
        """The containers whose resources name the job's GPUs (every pod template's)."""
        return [c for _, t in self.templates(job) for c in ((t.get("spec") or {}).get("containers") or [])
                if isinstance(c, dict)]

    def spec_fields(self) -> set[str]:
        """The fields of the kind's `spec` its CRD defines (others are dropped by the API server)."""
        return {self.replica_specs, "runPolicy", *self.adapter.operator.spec_fields}

    def unknown_fields(self, job: Obj) -> list[Loc]:
        """Where `job` has a field its CRD does not define, above the pod templates: the API
        server drops each (kubectl's strict validation refuses it first)."""
        spec = job.get("spec")
        if not isinstance(spec, dict):
            return []
        fields = self.spec_fields()
        found: list[Loc] = [("spec", key) for key in spec if key not in fields]
        run = spec.get("runPolicy")
        if isinstance(run, dict):
            found += [("spec", "runPolicy", key) for key in run if key not in RUN_POLICY_FIELDS]
        for replica_type, replica in self.replicas(job).items():
            found += [("spec", self.replica_specs, replica_type, key) for key in replica if key not in REPLICA_FIELDS]
        return found


Loc = tuple[Any, ...]
# an elastic policy's rendezvous fields -> spec.elastic.rendezvous's (schemas/elastic.py)
RENDEZVOUS = {"rdzvBackend": "backend", "rdzvHost": "host", "rdzvPort": "port"}
DEFAULT_BACKEND = "c10d"
RUN_POLICY_FIELDS = frozenset(run_policy()["properties"])
REPLICA_FIELDS = frozenset(replica_specs()["additionalProperties"]["properties"])
@dataclass(frozen=True)
class MpiOperatorKind(JobKind):
    """The mpi-operator's MPIJob (`kubeflow.org/v2beta1`): the v1 MPIJob's shape and adapter, its own
    defaults and fields (`foundation.frameworks.mpi_operator`)."""

    def default(self, job: Obj) -> Obj:
        mpi_operator.defaulted(job)
        for replica in self.replicas(job).values():  # the operator writes the replica's into every pod
            spec = (replica.get("template") or {}).get("spec")
            if isinstance(spec, dict):
                spec.pop("restartPolicy", None)
        return job

    def spec_fields(self) -> set[str]:
        return set(mpi_operator.SPEC_FIELDS)

    @property
    def clean_pods_default(self) -> str:
        return mpi_operator.CLEAN_PODS_DEFAULT

    def extra(self, job: Obj) -> Obj:
        settings = mpi_operator.settings_of(job.get("spec") or {})
        return {"mpi": settings} if settings else {}


V1 = f"{GROUP}/v1"
KINDS: dict[tuple[str, str], JobKind] = {
    (V1, adapter.facts.kind): JobKind(V1, adapter, "kubeflow-v1") for adapter in ADAPTERS.values()
}
KINDS[(mpi_operator.API_VERSION, mpi_operator.KIND)] = MpiOperatorKind(
    mpi_operator.API_VERSION, ADAPTERS[mpi_operator.FRAMEWORK], "mpi-operator")
# versions of the kinds above that no operator serves any more: the manifest must be moved on first
LEGACY_VERSIONS = ("v1alpha1", "v1alpha2", "v1beta1", "v1beta2")


_RESTARTS: dict[tuple[str, str, str], str] = {}  # (apiVersion, kind, replica type) -> its default


def _default_restart(kind: JobKind, replica_type: str) -> str:
    key = (kind.api_version, kind.kind, replica_type)
    if key not in _RESTARTS:
        stub = {"apiVersion": kind.api_version, "kind": kind.kind,
                "spec": {kind.replica_specs: {replica_type: {"template": {}}}}}
        _RESTARTS[key] = str(kind.replicas(kind.default(stub)).get(replica_type, {}).get("restartPolicy"))
    return _RESTARTS[key]


def kind_of(job: Obj) -> Optional[JobKind]:
    return KINDS.get((str(job.get("apiVersion")), str(job.get("kind"))))


def refusal(job: Obj) -> Optional[str]:
    """Why a manifest of a job kind in a version nobody serves is refused, or None."""
    api_version, kind = str(job.get("apiVersion")), str(job.get("kind"))
    group, _, version = api_version.rpartition("/")
    known = {k for (_, k) in KINDS}
    if group == GROUP and kind in known and version in LEGACY_VERSIONS:
        served = sorted(v for (v, k) in KINDS if k == kind)
        return (f"{api_version} {kind} is a legacy version no operator serves any more (the API server refuses it);"
                f" move the manifest to {' or '.join(served)} first")
    return None


def is_job_kind(kind: Any) -> bool:
    """Whether `kind` names a training job kind in any version (for a clear refusal of the others)."""
    return kind in {k for (_, k) in KINDS}


def known() -> str:
    """The kinds read, for messages: `kubeflow.org/v1 PyTorchJob, TFJob, ...`."""
    by_version: dict[str, list[str]] = {}
    for version, kind in KINDS:
        by_version.setdefault(version, []).append(kind)
    return "; ".join(f"{version} {', '.join(names)}" for version, names in by_version.items())
