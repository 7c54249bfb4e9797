"""Upstream's controller-side defaulting, applied in memory on a copy: a kind fact.

The Training Operator has no mutating webhook: it defaults the job object it read
(`Scheme.Default`) and never writes the result back, so `kubectl get -o yaml` keeps the
user's spec and GitOps tools see no drift (semantics §2). train-controller defaults every
job it reconciles the same way and only ever writes `/status`; the run spec
(`foundation.runs.spec`) is taken from the defaulted job, so `train-compile plan`, which
compares run specs, defaults both sides here too. The kind's own defaults are its
adapter's (`Adapter.operator.defaults`); this module only walks the job to them.
"""

from __future__ import annotations

from typing import Any

from foundation import jsondata
from foundation.frameworks.base import KindLike


def defaulted(job: dict[str, Any], adapter: KindLike, *, copy: bool = True) -> dict[str, Any]:
    """A defaulted deep copy of `job`; the input is not touched (`copy=False`: `job` itself,
    defaulted in place, for a job the caller has just built)."""
    out = jsondata.copy(job) if copy else job
    spec = out.setdefault("spec", {})
    facts = adapter.facts
    replicas = spec.get(facts.replica_specs)
    if isinstance(replicas, dict):
        spec[facts.replica_specs] = replicas = _canonical_keys(replicas, facts.replica_types)
    else:
        replicas = {}
    run_policy = spec.get("runPolicy")
    if not isinstance(run_policy, dict):
        run_policy = spec["runPolicy"] = {}
    adapter.operator.defaults(facts, spec, replicas, run_policy)
    return out


def _canonical_keys(replicas: dict[str, Any], canonical: tuple[str, ...]) -> dict[str, Any]:
    """`worker`/`WORKER` -> `Worker`, `ps` -> `PS`; unknown keys stay as written."""
    lookup = {name.lower(): name for name in canonical}
    return {lookup.get(str(key).lower(), key): value for key, value in replicas.items()}
