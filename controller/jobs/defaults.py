"""Upstream's controller-side defaulting, applied in memory on a copy at every reconcile.

The Training Operator has no mutating webhook: it defaults the job object it read
(`Scheme.Default`) and never writes the result back, so `kubectl get -o yaml` keeps the
user's spec and GitOps tools see no drift. We do the same: `apply(job, kind)` returns a
defaulted deep copy and the controller only ever writes `/status` (semantics §2).
"""

from __future__ import annotations

from typing import Any

from controller.jobs.kinds import Kind
from foundation import jsondata


def apply(job: dict[str, Any], kind: Kind, *, copy: bool = True) -> dict[str, Any]:
    """A defaulted deep copy of `job`; the input is not touched (`copy=False`: `job` itself,
    defaulted in place, for a job the caller has just built). The kind's own defaults are its
    adapter's (`Adapter.operator.defaults`)."""
    out = jsondata.copy(job) if copy else job
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
    kind.operator.defaults(facts, spec, replicas, run_policy)
    return out


def _canonical_keys(replicas: dict[str, Any], canonical: tuple[str, ...]) -> dict[str, Any]:
    """`worker`/`WORKER` -> `Worker`, `ps` -> `PS`; unknown keys stay as written."""
    lookup = {name.lower(): name for name in canonical}
    return {lookup.get(str(key).lower(), key): value for key, value in replicas.items()}
