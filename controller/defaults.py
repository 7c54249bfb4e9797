"""Upstream's controller-side defaulting, applied in memory on a copy at every reconcile.

The Training Operator has no mutating webhook: it defaults the job object it read
(`Scheme.Default`) and never writes the result back, so `kubectl get -o yaml` keeps the
user's spec and GitOps tools see no drift. We do the same: `apply(job, kind)` returns a
defaulted deep copy and the controller only ever writes `/status` (semantics §2).
"""

from __future__ import annotations

from typing import Any

from controller import jsondata
from controller.kinds import Kind


def apply(job: dict[str, Any], kind: Kind) -> dict[str, Any]:
    """A defaulted deep copy of `job`; the input is not touched."""
    out = jsondata.copy(job)
    spec = out.setdefault("spec", {})
    facts = kind.facts
    replicas = spec.get(facts.replica_specs)
    if isinstance(replicas, dict):
        spec[facts.replica_specs] = replicas = _canonical_keys(replicas, facts.replica_types)
    else:
        replicas = {}
    run_policy = spec.get("runPolicy")
    if not isinstance(run_policy, dict):
        run_policy = spec["runPolicy"] = {}
    if facts.kind == "MPIJob":
        _mpi(spec, replicas, run_policy)
        return out
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = "None"
    for replica in _replica_dicts(replicas):
        if replica.get("replicas") is None:
            replica["replicas"] = 1
        if not replica.get("restartPolicy"):
            replica["restartPolicy"] = facts.default_restart
        _default_port(replica, facts.container, facts.port_name, facts.port)
    if facts.kind == "TFJob" and spec.get("successPolicy") is None:
        spec["successPolicy"] = ""
    if facts.kind in ("PyTorchJob", "PaddleJob"):
        _elastic_bounds(spec.get("elasticPolicy"), replicas.get("Worker"))
    if facts.kind == "PyTorchJob":
        elastic = spec.get("elasticPolicy")
        if spec.get("nprocPerNode") is None and (not isinstance(elastic, dict) or elastic.get("nProcPerNode") is None):
            spec["nprocPerNode"] = "auto"
    return out


def _canonical_keys(replicas: dict[str, Any], canonical: tuple[str, ...]) -> dict[str, Any]:
    """`worker`/`WORKER` -> `Worker`, `ps` -> `PS`; unknown keys stay as written."""
    lookup = {name.lower(): name for name in canonical}
    return {lookup.get(str(key).lower(), key): value for key, value in replicas.items()}


def _replica_dicts(replicas: dict[str, Any]) -> list[dict[str, Any]]:
    return [value for value in replicas.values() if isinstance(value, dict)]


def _default_port(replica: dict[str, Any], container_name: str, port_name: str | None, port: int | None) -> None:
    if port_name is None or port is None:
        return
    pod_spec = (replica.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers") or []
    if not containers or not all(isinstance(c, dict) for c in containers):
        return  # validation reports it; upstream's webhook would have rejected it
    target = next((c for c in containers if c.get("name") == container_name), containers[0])
    ports = target.get("ports") or []
    if not any(isinstance(p, dict) and p.get("name") == port_name for p in ports):
        target["ports"] = [*ports, {"name": port_name, "containerPort": port}]


def _elastic_bounds(policy: Any, worker: Any) -> None:
    if not isinstance(policy, dict):
        return
    low, high = policy.get("minReplicas"), policy.get("maxReplicas")
    if low is None and high is not None:
        policy["minReplicas"] = high
    elif high is None and low is not None:
        policy["maxReplicas"] = low
    elif low is None and high is None and isinstance(worker, dict):
        policy["minReplicas"] = policy["maxReplicas"] = worker.get("replicas", 1)


def _mpi(spec: dict[str, Any], replicas: dict[str, Any], run_policy: dict[str, Any]) -> None:
    if spec.get("cleanPodPolicy") is None and run_policy.get("cleanPodPolicy") is None:
        spec["cleanPodPolicy"] = run_policy["cleanPodPolicy"] = "None"
    # the reconciler keeps the legacy field and runPolicy in sync; runPolicy wins if set
    if run_policy.get("cleanPodPolicy") is not None:
        spec["cleanPodPolicy"] = run_policy["cleanPodPolicy"]
    else:
        run_policy["cleanPodPolicy"] = spec["cleanPodPolicy"]
    for name, default_count in (("Launcher", 1), ("Worker", 0)):
        replica = replicas.get(name)
        if isinstance(replica, dict):
            if replica.get("replicas") is None:
                replica["replicas"] = default_count
            if not replica.get("restartPolicy"):
                replica["restartPolicy"] = "Never"
