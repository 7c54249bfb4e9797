"""The plan as data: environments, their jobs, each job's change, fields, hazards and summary.

Built by `compiler.plan.build`, read by the renderers; nothing here computes. The names
follow the contract's JSON keys (`../shared/docs/plan.md`): `to_json` is the document
`--format json` prints, with the contract's keys first and ours (positions, accepted
hazards, GPU-hours, the engine assumptions) after them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

CHANGES = ("create", "delete", "rename", "update", "unchanged")
HAZARDS = ("kills-run", "restarts-run", "reruns-finished", "mixed-run", "sync-refused",
           "ignored-until-next-run", "suspends-run")


@dataclass(frozen=True)
class Position:
    """Where a changed field stands in the head spec (or the head project file)."""

    path: str  # the field in the contract's syntax: spec.nodes, project.environments.prod.target
    file: str
    line: int
    col: int


@dataclass(frozen=True)
class Gpus:
    before: int
    after: int


@dataclass(frozen=True)
class GpuHours:
    """The most GPU-hours the jobs can bill (GPUs x activeDeadline), before and after, and what
    the change can add at most; None where some job has no bound (no activeDeadline, re-runs)."""

    before: Optional[float]
    after: Optional[float]
    added: Optional[float]
    unbounded: tuple[str, ...] = ()  # the jobs (namespace/name) that leave it without a bound


@dataclass
class JobPlan:
    namespace: str
    name: str
    kind: str
    change: str
    renamed_from: Optional[str]
    source: str  # the head spec's path (the base's for a delete)
    line: int  # the document's first line in that file
    fields: list[Position]
    gpus: Gpus
    state: str = "unknown"
    hazards: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)  # hazards a reviewer accepted (not failing --fail-on)
    summary: str = ""
    queue: Optional[str] = None
    anchor: Optional[Position] = None  # where a GitHub annotation goes (None: no head spec)
    live: Optional[dict[str, Any]] = None  # under --live: the job's state and run (compiler.plan.live.Live.to_json)
    throws_away: Optional[str] = None  # --live: `kills nlp/bert at 62%, ...` when the change stops a reporting run

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace, "name": self.name, "kind": self.kind, "change": self.change,
            "renamedFrom": self.renamed_from, "source": self.source, "line": self.line,
            "fields": [p.path for p in self.fields],
            "gpus": {"before": self.gpus.before, "after": self.gpus.after},
            "state": self.state, "hazards": list(self.hazards), "summary": self.summary,
            "accepted": list(self.accepted),
            "positions": [{"field": p.path, "file": p.file, "line": p.line, "col": p.col} for p in self.fields],
            "queue": self.queue,
            **({"live": self.live} if self.live is not None else {}),
            "throwsAway": self.throws_away,
        }


@dataclass(frozen=True)
class Group:
    """GPUs of one namespace or queue of an environment."""

    name: str
    gpus: Gpus
    hours: GpuHours

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "gpus": {"before": self.gpus.before, "after": self.gpus.after},
                "gpuHours": _hours_json(self.hours)}


@dataclass
class EnvironmentPlan:
    name: str
    target: str
    controller: Optional[str]  # None under trainer-v2 (the Trainer makes the pods)
    jobs: list[JobPlan]
    gpus: Gpus
    hours: GpuHours
    namespaces: list[Group] = field(default_factory=list)
    queues: list[Group] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what holds for the whole environment (a refused sync)

    def changed(self) -> list[JobPlan]:
        return [job for job in self.jobs if job.change != "unchanged"]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "gpus": {"before": self.gpus.before, "after": self.gpus.after},
            "jobs": [job.to_json() for job in self.jobs],
            "target": self.target, "controller": self.controller,
            "gpuHours": _hours_json(self.hours),
            "namespaces": [g.to_json() for g in self.namespaces],
            "queues": [g.to_json() for g in self.queues],
            "notes": list(self.notes),
        }


@dataclass
class Plan:
    base: str
    environments: list[EnvironmentPlan]
    live: bool = False
    assumptions: list[str] = field(default_factory=list)  # the engine settings the hazards assume

    def hazards(self) -> set[str]:
        """Every hazard not accepted, across environments (what --fail-on looks at)."""
        return {h for env in self.environments for job in env.jobs for h in job.hazards if h not in job.accepted}

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "environments": [env.to_json() for env in self.environments],
                "live": self.live, "assumptions": list(self.assumptions)}


def _hours_json(hours: GpuHours) -> dict[str, Any]:
    return {"before": hours.before, "after": hours.after, "addedAtMost": hours.added,
            "unbounded": list(hours.unbounded)}
