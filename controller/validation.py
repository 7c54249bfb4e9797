"""What upstream refuses, checked at reconcile time because we ship no admission webhook.

Upstream v1.9 rejects bad PyTorch/TF/XGBoost/Paddle/JAX jobs in a validating webhook
(before defaulting, so on the raw object) and validates MPIJob (and, in v1.8, MXJob)
inside the reconciler. A job applied by hand past the compiler reaches us unchecked, so
`problems(job, kind)` runs the same rules (semantics §3) and returns field-path messages
in Kubernetes' `field.Error` style; the reconciler turns them into a Warning event and,
for webhook kinds, a `Failed` condition with reason `{Kind}FailedValidation`.
"""

from __future__ import annotations

import re
from typing import Any

from controller.kinds import Kind

_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_MANAGED_BY = ("kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue")
# kinds that upstream checks in the reconciler (no webhook): event + backoff, no condition
RECONCILER_VALIDATED = frozenset({"MPIJob", "MXJob"})
_ALLOWED_KEYS: dict[str, tuple[str, ...] | None] = {
    "PyTorchJob": ("Master", "Worker"),
    "TFJob": None,  # upstream does not check TFJob keys
    "XGBoostJob": ("Master", "Worker"),
    "PaddleJob": ("Master", "Worker"),
    "JAXJob": ("Worker",),
    "MPIJob": ("Launcher", "Worker"),
    "MXJob": None,
}


def problems(job: dict[str, Any], kind: Kind) -> list[str]:
    """Every rule the raw job breaks, as `<field path>: <reason>` strings (empty = valid)."""
    facts = kind.facts
    errors: list[str] = []
    name = str((job.get("metadata") or {}).get("name", ""))
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    if facts.kind not in RECONCILER_VALIDATED and (len(name) > 63 or not _DNS1035.match(name)):
        errors.append(
            f'metadata.name: Invalid value: "{name}": a DNS-1035 label must consist of lower case '
            "alphanumeric characters or '-', start with an alphabetic character, and end with an "
            "alphanumeric character"
        )
    root = f"spec.{facts.replica_specs}"
    replicas = spec.get(facts.replica_specs)
    if not isinstance(replicas, dict) or not replicas:
        return [*errors, f"{root}: Required value: must be specified"]
    allowed = _ALLOWED_KEYS[facts.kind]
    for key in sorted(replicas):
        path = f"{root}[{key}]"
        if allowed is not None and key not in allowed:
            quoted = ", ".join(f'"{a}"' for a in allowed)
            errors.append(f'{root}: Unsupported value: "{key}": supported values: {quoted}')
            continue
        errors.extend(_replica_problems(replicas[key], path, kind))
    errors.extend(_kind_rules(spec, replicas, root, kind))
    return errors


def _replica_problems(replica: Any, path: str, kind: Kind) -> list[str]:
    if not isinstance(replica, dict):
        return [f"{path}: Required value: must be specified"]
    containers = ((replica.get("template") or {}).get("spec") or {}).get("containers")
    cpath = f"{path}.template.spec.containers"
    if not isinstance(containers, list) or not containers:
        return [f"{cpath}: Required value: must be specified"]
    errors: list[str] = []
    for i, container in enumerate(containers):
        if not isinstance(container, dict) or not container.get("image"):
            errors.append(f"{cpath}[{i}].image: Required value: must be required")
        if kind.facts.kind == "MPIJob" and not (isinstance(container, dict) and container.get("name")):
            errors.append(f"{cpath}[{i}].name: Required value: must be required")
    if kind.facts.kind != "MPIJob":
        names = [c.get("name") for c in containers if isinstance(c, dict)]
        if kind.facts.container not in names:
            errors.append(f"{cpath}: Invalid value: must have at least one container with name {kind.facts.container}")
    count = replica.get("replicas")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
        errors.append(f"{path}.replicas: Invalid value: {count!r}: must be a non-negative integer")
    return errors


def _kind_rules(spec: dict[str, Any], replicas: dict[str, Any], root: str, kind: Kind) -> list[str]:
    errors: list[str] = []
    name = kind.facts.kind
    run_policy = spec.get("runPolicy") if isinstance(spec.get("runPolicy"), dict) else {}
    managed_by = run_policy.get("managedBy")
    if name in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob") and managed_by is not None and managed_by not in _MANAGED_BY:
        allowed = ", ".join(f'"{v}"' for v in _MANAGED_BY)
        errors.append(f'spec.runPolicy.managedBy: Unsupported value: "{managed_by}": supported values: {allowed}')
    if name in ("PyTorchJob", "XGBoostJob"):
        master = replicas.get("Master")
        if name == "XGBoostJob" and master is None:
            errors.append(f"{root}[Master]: Required value: must be present")
        if isinstance(master, dict) and master.get("replicas") != 1:
            errors.append(f"{root}[Master].replicas: Forbidden: must be 1")
    if name == "PyTorchJob":
        for key, replica in replicas.items():
            if key != "Master" and isinstance(replica, dict) and isinstance(replica.get("replicas"), int) and replica["replicas"] < 1:
                errors.append(f"{root}[{key}].replicas: Forbidden: must be at least 1")
        elastic = spec.get("elasticPolicy")
        if isinstance(elastic, dict):
            if "Worker" not in replicas:
                errors.append(f"{root}[Worker]: Required value: must be configured if elastic policy is used")
            if elastic.get("nProcPerNode") is not None and spec.get("nprocPerNode") is not None:
                errors.append("spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode")
    if name == "TFJob" and sum(1 for key in ("Chief", "Master") if key in replicas) > 1:
        errors.append(f"{root}: Forbidden: must not have more than 1 Chief or Master role")
    if name == "MPIJob":
        launcher = replicas.get("Launcher")
        if launcher is None:
            errors.append(f"{root}[Launcher]: Required value: must be present")
        elif isinstance(launcher, dict) and launcher.get("replicas") not in (None, 1):
            errors.append(f"{root}[Launcher].replicas: Forbidden: must be 1")
    return errors
