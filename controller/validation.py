"""What upstream refuses, checked at reconcile time: the fallback for clusters without the policies.

Upstream v1.9.4 refuses bad PyTorch/TF/XGBoost/Paddle/JAX jobs in its validating webhook;
trainforge ships the same rules as ValidatingAdmissionPolicies (`controller/install/admission`,
Kubernetes >= 1.30). A job that reached the cluster without them (an older cluster, the
policies not installed, a job created before they were) is checked here with the very same
rule table (`compiler/admission.py`), and the reconciler fails it with a `Failed` condition
and a Warning event, reason `{Kind}FailedValidation`, whose message carries the text the
admission refusal would have shown.

MPIJob (v1.9.4) and MXJob (v1.8.1) have no admission checks upstream: their reconcilers
validate on every pass, report the first problem in a Warning event, write no condition and
retry with backoff. Those checks and their messages are upstream's, below.
"""

from __future__ import annotations

from typing import Any

from compiler import admission
from controller.kinds import Kind

# kinds that upstream checks in the reconciler (no webhook): event + backoff, no condition
RECONCILER_VALIDATED = frozenset({"MPIJob", "MXJob"})
_MPI_TYPES = ("Launcher", "Worker")


def problems(job: dict[str, Any], kind: Kind) -> list[str]:
    """Every rule the raw job breaks (empty = valid): upstream's messages, for the kind's check."""
    if kind.name == "MPIJob":
        return _mpi(job)
    if kind.name == "MXJob":
        return _mx(job)
    return admission.errors(job, kind.name)


def failure_message(kind: Kind, found: list[str]) -> str:
    """The event (and condition) message: `{Kind} failed validation because <upstream's error>`."""
    return f"{kind.name} failed validation because {admission.aggregate(found)}"


def _replicas(job: dict[str, Any], field: str) -> dict[str, Any] | None:
    specs = (job.get("spec") or {}).get(field)
    return specs if isinstance(specs, dict) else None


def _containers(replica: Any) -> list[Any]:
    if not isinstance(replica, dict):
        return []
    found = ((replica.get("template") or {}).get("spec") or {}).get("containers")
    return found if isinstance(found, list) else []


def _mpi(job: dict[str, Any]) -> list[str]:
    """Upstream's ValidateV1MpiJobSpec; it stops at the first error (its map order is random, ours sorted)."""
    specs = _replicas(job, "mpiReplicaSpecs")
    if specs is None:
        return ["MPIReplicaSpecs is not valid"]
    for rtype in sorted(specs):
        replica = specs[rtype]
        containers = _containers(replica)
        if not containers:
            return [f"MPIReplicaSpecs is not valid: containers definition expected in {rtype}"]
        if rtype not in _MPI_TYPES:
            return [f"MPIReplicaType is {rtype} but must be one of [{' '.join(_MPI_TYPES)}]"]
        for container in containers:
            if not (isinstance(container, dict) and container.get("image")):
                return [f"MPIReplicaSpec is not valid: Image is undefined in the container of {rtype}"]
            if not container.get("name"):
                return [f"MPIReplicaSpec is not valid: ImageName is undefined in the container of {rtype}"]
        if rtype == "Launcher" and replica.get("replicas") is not None and replica["replicas"] != 1:
            return ["MPIReplicaSpec is not valid: There must be only 1 launcher replica"]
    if "Launcher" not in specs:
        return ["MPIReplicaSpec is not valid: Master ReplicaSpec must be present"]
    return []


def _mx(job: dict[str, Any]) -> list[str]:
    """v1.8.1's ValidateV1MXJob. (Its "more than 1 scheduler" check cannot fail: map keys are unique.)"""
    name = str((job.get("metadata") or {}).get("name", ""))
    reasons = admission.name_reasons(name)
    if reasons:
        return [f"MXJob name is invalid: [{' '.join(reasons)}]"]
    specs = _replicas(job, "mxReplicaSpecs")
    if specs is None:
        return ["MXJobSpec is not valid"]
    for rtype in sorted(specs):
        containers = _containers(specs[rtype])
        if (not containers or not all(isinstance(c, dict) and c.get("image") for c in containers)
                or not any(c.get("name") == "mxnet" for c in containers)):
            return ["MXJobSpec is not valid"]
    return []
