"""From a job's replica types and counts to the spec's `nodes`, `roles` and `elastic`.

The framework adapter's `plan(spec)` says which replica types a spec becomes (PyTorchJob:
Master x1 + Worker x(nodes-1), or Worker x nodes when elastic; TFJob: Chief + Worker, plus
`ps` and `evaluator` roles...). The importer runs it backwards by asking it: it finds which
replica type each of the kind's roles adds, then tries the few node counts that could give
the manifest's replicas and keeps the first spec whose plan is exactly the manifest's. So no
kind's shape is written down twice, and a shape the spec cannot say (an MXJob's tuner, a
PyTorchJob with two Masters) is found to be one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from pydantic import ValidationError

from foundation.frameworks.base import Adapter, ReplicaPlan
from schemas.trainjob import TrainJobSpec

Obj = dict[str, Any]
PROBE_IMAGE = "probe"  # any image: plans never read it


@dataclass(frozen=True)
class Shape:
    nodes: int
    roles: dict[str, Obj]  # spec.roles entries with their replicas
    extra: Obj  # the spec fields the plan read beside nodes and roles (elastic, mpi)
    plans: tuple[ReplicaPlan, ...]  # what the adapter plans for them, in its order (each with its role)

    def plan(self, replica_type: str) -> ReplicaPlan:
        return next(p for p in self.plans if p.replica_type == replica_type)


def _spec(adapter: Adapter, nodes: int, roles: dict[str, Obj], extra: Optional[Obj]) -> Optional[TrainJobSpec]:
    return probe({"framework": adapter.name, "nodes": nodes, "roles": roles, **(extra or {})})


def probe(fields: Obj) -> Optional[TrainJobSpec]:
    """A spec of these fields (any image), to ask an adapter's plan or job fields; None when
    invalid. Remembered: a thousand jobs ask for a few dozen shapes."""
    import json

    return _validated(json.dumps({"image": PROBE_IMAGE, **fields}, sort_keys=True))


@functools.lru_cache(maxsize=4096)
def _validated(text: str) -> Optional[TrainJobSpec]:
    """The probe spec of that JSON (remembered: a thousand jobs ask for a few dozen shapes)."""
    import json

    data = json.loads(text)
    try:
        return TrainJobSpec.model_validate(data)
    except ValidationError:
        return None


def role_types(adapter: Adapter) -> dict[str, str]:
    """role name -> the replica type it adds (found by asking the adapter's plan)."""
    return dict(_role_types(adapter.name))


@functools.lru_cache(maxsize=None)
def _main_types(framework: str) -> tuple[tuple[str, str], ...]:
    """(role, replica type) of the roles a spec of two nodes plans (`nodes` counts them)."""
    from foundation.frameworks import adapter as adapter_for

    adapter = adapter_for(framework)
    spec = _spec(adapter, 2, {}, None)
    return tuple((p.role, p.replica_type) for p in adapter.plan(spec)) if spec is not None else ()


@functools.lru_cache(maxsize=None)
def _role_types(framework: str) -> tuple[tuple[str, str], ...]:
    from foundation.frameworks import adapter as adapter_for

    adapter = adapter_for(framework)
    base = _spec(adapter, 1, {}, None)
    assert base is not None
    plain = {p.replica_type for p in adapter.plan(base)}
    found: dict[str, str] = {}
    for role in adapter.facts.allowed_roles:
        spec = _spec(adapter, 1, {role: {"replicas": 1}}, None)
        added = {p.replica_type for p in adapter.plan(spec)} - plain if spec is not None else set()
        if len(added) == 1:
            found[role] = added.pop()
    return tuple(found.items())


def _candidates(counts: dict[str, int]) -> Iterator[int]:
    total = sum(counts.values())
    seen: set[int] = set()
    for nodes in (total, total + 1, total - 1, *counts.values(), *(c + 1 for c in counts.values())):
        if nodes >= 1 and nodes not in seen:
            seen.add(nodes)
            yield nodes


def shape(adapter: Adapter, counts: dict[str, int], extra: Optional[Obj] = None) -> Optional[Shape]:
    """The spec shape whose plan has exactly `counts` (replica type -> replicas), or None.
    `extra` holds the spec fields the plan also reads (`elastic`, an MPIJob's `mpi`)."""
    by_role = role_types(adapter)
    roles = {role: {"replicas": counts[rtype]} for role, rtype in by_role.items() if counts.get(rtype)}
    for role, rtype in _main_types(adapter.name):  # a main role the job has none of (tensorflow's chief)
        if role in adapter.facts.removable_roles and rtype not in counts:
            roles[role] = {"replicas": 0}
    program = {t: n for t, n in counts.items() if t not in by_role.values()}
    for nodes in _candidates(program or counts):
        spec = _spec(adapter, nodes, roles, extra)
        if spec is None:
            continue
        plans = tuple(p for p in adapter.plan(spec) if p.replicas > 0)
        if {p.replica_type: p.replicas for p in plans} == counts:
            return Shape(nodes, roles, dict(extra or {}), plans)
    return None
