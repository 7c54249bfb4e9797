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
from foundation.frameworks.operator import defaulted


def apply(job: dict[str, Any], kind: Kind, *, copy: bool = True) -> dict[str, Any]:
    """A defaulted deep copy of `job`; the input is not touched (`copy=False`: `job` itself,
    defaulted in place, for a job the caller has just built). The kind's own defaults are its
    adapter's (`Adapter.operator.defaults`), applied by `foundation.frameworks.operator.defaulted`."""
    return defaulted(jsondata.copy(job) if copy else job, kind.facts, kind.operator)
