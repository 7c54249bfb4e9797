"""The framework table: one adapter module per Kubeflow kind, registered here once.

Everything that needs per-framework facts (lowering, rules, the controller, health
checks) looks them up through `ADAPTERS` / `by_kind`, never through `if kind == ...`.
Adapters are imported eagerly because they are tiny and pure.
"""

from __future__ import annotations

from foundation.frameworks import jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost
from foundation.frameworks.base import Adapter

ADAPTERS: dict[str, Adapter] = {
    module.ADAPTER.name: module.ADAPTER
    for module in (pytorch, tensorflow, mpi, xgboost, paddle, jax, mxnet)
}
BY_KIND: dict[str, Adapter] = {adapter.facts.kind: adapter for adapter in ADAPTERS.values()}


def adapter(name: str) -> Adapter:
    return ADAPTERS[name]


def by_kind(kind: str) -> Adapter:
    return BY_KIND[kind]
