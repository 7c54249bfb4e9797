"""The controller-side table of the seven kinds: what upstream fixes per kind beyond `Facts`.

`compiler/frameworks/` owns the facts and the rendezvous environment shared with the
compiler; this module adds the few per-kind rules only the controller needs (which pods
carry `job-role: master`, which containers receive the environment, whether
`replicaStatuses[*].selector` is filled). They live in one table so the rest of the
controller never branches on the kind name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.frameworks import ADAPTERS
from compiler.frameworks.base import Adapter, Facts

MasterRole = Callable[[Mapping[str, Any], str, int], bool]


def _master_or_worker0(*masters: str) -> MasterRole:
    def rule(replicas: Mapping[str, Any], replica_type: str, index: int) -> bool:
        if any(m in replicas for m in masters):
            return replica_type in masters
        return replica_type == "Worker" and index == 0

    return rule


def _only(*types: str) -> MasterRole:
    return lambda replicas, replica_type, index: replica_type in types


@dataclass(frozen=True)
class Kind:
    """One enabled job kind as the controller sees it."""

    adapter: Adapter
    master_role: MasterRole
    env_default_container_only: bool = False  # TFJob: TF_CONFIG goes to `tensorflow` only
    fills_selector: bool = False  # replicaStatuses[*].selector (PyTorch, Paddle, JAX)

    @property
    def facts(self) -> Facts:
        return self.adapter.facts

    @property
    def name(self) -> str:
        return self.adapter.facts.kind


_PROFILES: dict[str, dict[str, Any]] = {
    "PyTorchJob": {"master_role": _master_or_worker0("Master"), "fills_selector": True},
    "TFJob": {"master_role": _master_or_worker0("Chief", "Master"), "env_default_container_only": True},
    "XGBoostJob": {"master_role": _only("Master")},
    "PaddleJob": {"master_role": _only("Master"), "fills_selector": True},
    "JAXJob": {"master_role": lambda replicas, replica_type, index: index == 0, "fills_selector": True},
    "MPIJob": {"master_role": _only("Launcher")},
    "MXJob": {"master_role": _only("Server")},  # sic: upstream marks the servers
}

KINDS: dict[str, Kind] = {
    adapter.facts.kind: Kind(adapter=adapter, **_PROFILES[adapter.facts.kind]) for adapter in ADAPTERS.values()
}
BY_NAME: dict[str, Kind] = {kind.adapter.name: kind for kind in KINDS.values()}


def select(frameworks: str | None) -> list[Kind]:
    """Kinds named by `--frameworks` (comma list of framework or kind names; empty = all)."""
    if not frameworks:
        return list(KINDS.values())
    chosen: list[Kind] = []
    for item in (part.strip() for part in frameworks.split(",")):
        if not item:
            continue
        kind = BY_NAME.get(item.lower()) or KINDS.get(item) or _by_plural(item)
        if kind is None:
            names = ", ".join(sorted(BY_NAME))
            raise ValueError(f"unknown framework {item!r}; choose from {names}")
        if kind not in chosen:
            chosen.append(kind)
    return chosen


def _by_plural(item: str) -> Kind | None:
    for kind in KINDS.values():
        if item.lower() in (kind.facts.plural, kind.facts.kind.lower()):
            return kind
    return None
