"""Elastic PyTorchJob autoscaling: the `autoscaling/v2` HorizontalPodAutoscaler `{job}`.

Upstream's ReconcileHPA (semantics §5), run at step 0 of every PyTorchJob reconcile,
before the finished/suspended branches: when `elasticPolicy.metrics` is given, an HPA
named after the job scales `Worker.replicas` through the job's scale subresource
between `minReplicas` and `maxReplicas` (both defaulted in memory). It is owned by the
job, rewritten when its spec drifts, and deleted (or not created) while the job is
suspended. The API server rewrites the quantities in `metrics` canonically (`1000m` ->
`1`), so drift is judged by value, otherwise every pass would rewrite it.

Two departures, both where upstream has no observable contract: `metrics: []` counts as
no metrics (upstream would create an HPA the server defaults to 80% CPU and then rewrite
it on every pass), and our HPA is deleted when the metrics are removed from the job
(upstream leaves it scaling the job on the old metrics). An HPA `{job}` that the job does
not control is never touched.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from controller.jobs.desired import owner_reference
from controller.jobs.kinds import Kind
from controller.jobs.run_policy import is_suspended
from controller.jobs.status import Ctx
from controller.runtime.informer import Informer
from foundation.cluster.kube import Resource
from controller.runtime.writes import Writes
from schemas import quantity

log = logging.getLogger(__name__)

HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
SPEC_KEYS = ("scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior")
QUANTITY_KEYS = frozenset({"value", "averageValue"})  # MetricTarget fields that are quantities


def desired(job: Mapping[str, Any], kind: Kind) -> dict[str, Any] | None:
    """The HPA for a defaulted job of an autoscaled kind (PyTorchJob), or None when it asks for none."""
    elastic = (job.get("spec") or {}).get("elasticPolicy") or {}
    if not kind.facts.autoscaled or not elastic.get("metrics"):
        return None
    meta = job["metadata"]
    spec: dict[str, Any] = {
        "scaleTargetRef": {"kind": kind.name, "name": meta["name"], "apiVersion": kind.facts.api_version},
        "maxReplicas": int(elastic["maxReplicas"]),
        "metrics": copy.deepcopy(elastic["metrics"]),
    }
    if elastic.get("minReplicas") is not None:
        spec["minReplicas"] = int(elastic["minReplicas"])
    return {
        "apiVersion": HPAS.api_version,
        "kind": HPAS.kind,
        "metadata": {"name": meta["name"], "namespace": meta.get("namespace", "default"),
                     "ownerReferences": [owner_reference(dict(job), kind)]},
        "spec": spec,
    }


def _by_value(value: Any, key: str = "") -> Any:
    if isinstance(value, Mapping):
        return {k: _by_value(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_by_value(v) for v in value]
    return quantity.amount(value) if key in QUANTITY_KEYS else value


def spec_differs(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Semantic inequality of two HPA specs (the server defaults minReplicas to 1)."""
    def comparable(spec: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: _by_value(spec[k], k) for k in SPEC_KEYS if spec.get(k) is not None}
        out.setdefault("minReplicas", 1)
        return out
    return comparable(current) != comparable(wanted)


def _controlled_by(obj: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    return any(r.get("controller") and r.get("uid") == job["metadata"].get("uid")
               for r in obj["metadata"].get("ownerReferences") or [])


class Autoscalers:
    """Keeps each elastic PyTorchJob's HPA as its spec says, reading HPAs from a cache."""

    def __init__(self, informer: Informer) -> None:
        self.informer = informer

    def informers(self) -> list[Informer]:
        return [self.informer]

    def reconcile(self, writes: Writes, ctx: Ctx) -> None:
        wanted = desired(ctx.job, ctx.kind)
        current = self.informer.get(ctx.namespace, ctx.name)
        if current is not None and (current["metadata"].get("deletionTimestamp") or not _controlled_by(current, ctx.job)):
            if current["metadata"].get("deletionTimestamp") is None:
                log.debug("%s/%s: HorizontalPodAutoscaler %s is not controlled by the job; leaving it",
                         ctx.namespace, ctx.name, ctx.name)
            return
        if current is None:
            if wanted is not None and not is_suspended(ctx.job):
                self._remember(writes.create_unexpected(HPAS, wanted))
        elif wanted is None or is_suspended(ctx.job):
            writes.delete_unexpected(HPAS, current)
        elif spec_differs(current.get("spec") or {}, wanted["spec"]):
            self._remember(writes.update(HPAS, {**current, "spec": wanted["spec"]}))

    def _remember(self, written: dict[str, Any] | None) -> None:
        if written is not None and written.get("metadata"):
            self.informer.remember(written)
