"""The kinds the controller runs: each one's adapter (`foundation/frameworks/<kind>.py`).

The adapter holds every fact about a kind, for the compiler and the controller alike: its
layout (`Facts`), its rendezvous environment, and what the Training Operator does with it
(`Adapter.operator`: defaulting, master role, status rule, validation). The controller
reads them through `Kind` and never branches on a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from foundation.frameworks import ADAPTERS
from foundation.frameworks.base import GROUP, VERSION, Adapter, Facts
from foundation.frameworks.operator import Operator
from foundation.cluster.kube import Resource
from schemas import upstream


@dataclass(frozen=True)
class Kind:
    """One enabled job kind as the controller sees it: its adapter, which holds every fact."""

    adapter: Adapter

    @property
    def facts(self) -> Facts:
        return self.adapter.facts

    @property
    def operator(self) -> Operator:
        return self.adapter.operator

    @property
    def name(self) -> str:
        return self.adapter.facts.kind


def job_resource(kind: Kind) -> Resource:
    """The API resource of the kind's jobs (kubeflow.org/v1, its plural)."""
    return Resource(GROUP, VERSION, kind.facts.plural, kind.name)


KINDS: dict[str, Kind] = {adapter.facts.kind: Kind(adapter=adapter) for adapter in ADAPTERS.values()}
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


def child_index(obj: dict[str, Any]) -> list[str]:
    """Index children by (namespace, operator, job-name label): the owning job's slot (the
    manager's pod and service informers)."""
    labels = obj["metadata"].get("labels") or {}
    operator, job = labels.get(upstream.OPERATOR_LABEL), labels.get(upstream.JOB_NAME_LABEL)
    if not operator or not job:
        return []
    return [f"{obj['metadata'].get('namespace', '')}/{operator}/{job}"]
