"""What the parity test compares: each object reduced to what an operator decides, and a
deep diff of two such views.

Normalised only for what must differ between two namespaces on one API server: uids,
resourceVersions, timestamps, the node kube-scheduler picked, and the namespace itself
(replaced by `<ns>` wherever it appears, e.g. in TF_CONFIG hosts or an MPI RoleBinding
subject). Everything else an operator writes is compared as the API server returns it,
server defaults included (both sides get the same ones). TF_CONFIG and MX_CONFIG are
parsed so that key order inside the JSON does not count; a Service's ports are sorted by
name (upstream builds them from a Go map: their order is random there).
"""

from __future__ import annotations

import json
from typing import Any

NS = "<ns>"
JSON_ENV = ("TF_CONFIG", "MX_CONFIG")


def scrub(value: Any, ns: str) -> Any:
    """`value` with the namespace `ns` replaced by `<ns>` in every string."""
    if isinstance(value, dict):
        return {k: scrub(v, ns) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, ns) for v in value]
    if isinstance(value, str):
        return value.replace(ns, NS)
    return value


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    out: dict[str, Any] = {"name": meta["name"]}
    for key in ("labels", "annotations", "finalizers"):
        if meta.get(key):
            out[key] = meta[key]
    out["ownerReferences"] = [{k: v for k, v in ref.items() if k != "uid"} for ref in meta.get("ownerReferences") or []]
    return out


def _container(c: dict[str, Any]) -> dict[str, Any]:
    c = dict(c)
    if c.get("env"):
        env = []
        for e in c["env"]:
            if e.get("name") in JSON_ENV and "value" in e:
                e = {**e, "value": json.loads(e["value"])}
            env.append(e)
        c["env"] = env
    return c


def pod_view(pod: dict[str, Any], ns: str) -> dict[str, Any]:
    spec = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
    for key in ("containers", "initContainers"):
        if key in spec:
            spec[key] = [_container(c) for c in spec[key]]
    return scrub({"metadata": _meta(pod), "spec": spec}, ns)


def service_view(svc: dict[str, Any], ns: str) -> dict[str, Any]:
    spec = dict(svc["spec"])
    spec["ports"] = sorted(spec.get("ports") or [], key=lambda p: (p.get("name", ""), p.get("port", 0)))
    return scrub({"metadata": _meta(svc), "spec": spec}, ns)


def helper_view(obj: dict[str, Any], ns: str) -> dict[str, Any]:
    """MPI's ConfigMap, ServiceAccount, Role and RoleBinding, an elastic job's HPA: everything
    but server fields (and the HPA's status, which the HPA controller would own)."""
    body = {k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind", "status")}
    return scrub({"metadata": _meta(obj), **body}, ns)


def status_view(job: dict[str, Any], ns: str) -> dict[str, Any]:
    """Conditions in order (type, status, reason, message), replicaStatuses as written, and
    which times are present."""
    status = job.get("status") or {}
    return scrub({
        "conditions": [{k: c.get(k) for k in ("type", "status", "reason", "message")} for c in status.get("conditions") or []],
        "replicaStatuses": status.get("replicaStatuses"),
        "startTime": "startTime" in status,
        "completionTime": "completionTime" in status,
    }, ns)


def conditions_of(view: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((c["type"], c["status"]) for c in view["conditions"])


def diff(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, a's value, b's value) for every place the two views differ; `<missing>` for an absent key."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            out += diff(a.get(key, "<missing>"), b.get(key, "<missing>"), f"{path}.{key}" if path else str(key))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            label = x.get("name") if isinstance(x, dict) and isinstance(x.get("name"), str) and \
                isinstance(y, dict) and x.get("name") == y.get("name") else str(i)
            out += diff(x, y, f"{path}[{label}]")
        return out
    return [] if a == b else [(path, a, b)]
