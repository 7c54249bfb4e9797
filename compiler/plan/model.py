"""The plan as data: environments, their jobs, each job's change, fields, hazards and summary.

Built by `compiler.plan.build`, read by the renderers; nothing here computes. The names
follow the contract's JSON keys (`../shared/docs/plan.md`): `to_json` is the document
`--format json` prints, with the contract's keys first and ours (positions, accepted
hazards, GPU-hours, the engine assumptions, the project folders, the base's errors, the
notices) after them. A plan is one project's (the folder holding its `trainforge.yaml`);
several projects planned at once are several plans rendered as one document.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

CHANGES = ("create", "delete", "rename", "update", "unchanged")
HAZARDS = ("kills-run", "restarts-run", "reruns-finished", "mixed-run", "sync-refused",
           "ignored-until-next-run", "suspends-run", "suspend-ignored")
# The order a reviewer reads them in, worst first: a run lost, an environment whose sync
# fails, a run started over or run again, a run of two shapes, a run stopped, then what
# does not happen though the spec says so.
SEVERITY = ("kills-run", "sync-refused", "restarts-run", "reruns-finished", "mixed-run", "suspends-run",
            "suspend-ignored", "ignored-until-next-run")


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
    renamed_kind: Optional[str] = None  # the old job's kind, for a rename that switches it (framework, target)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def refused(self) -> bool:
        """An update the API server or admission refuses: it never lands (the job keeps its old spec)."""
        return self.change == "update" and "sync-refused" in self.hazards

    @property
    def shown_name(self) -> str:
        """`nlp/t5-v2 (from nlp/t5)`; a switch of kind under one name: `ml/switch (was PyTorchJob)`."""
        if self.renamed_from is None:
            return self.key
        was = f"was {self.renamed_kind}" if self.renamed_kind else ""
        if self.renamed_from == self.key:
            return f"{self.key} ({was})" if was else self.key
        return f"{self.key} (from {self.renamed_from}{', ' + was if was else ''})"

    def open_hazards(self) -> list[str]:
        """Its hazards nobody accepted."""
        return [h for h in self.hazards if h not in self.accepted]

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
            "renamedFromKind": self.renamed_kind,
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


@dataclass(frozen=True)
class BaseError:
    """An error of the base revision's specs (`main` is broken): the head is planned all the
    same, and the jobs of a file with errors are compared with nothing."""

    path: str  # the file's path from the repository's root (where an annotation can stand)
    line: int
    col: int
    text: str  # the whole diagnostic as the compiler prints it, the file named REF:path

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "line": self.line, "col": self.col, "message": self.text}


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

    def to_json(self, project: str = ".") -> dict[str, Any]:
        return {
            "name": self.name,
            "gpus": {"before": self.gpus.before, "after": self.gpus.after},
            "jobs": [job.to_json() for job in self.jobs],
            "target": self.target, "controller": self.controller,
            "gpuHours": _hours_json(self.hours),
            "namespaces": [g.to_json() for g in self.namespaces],
            "queues": [g.to_json() for g in self.queues],
            "notes": list(self.notes),
            "project": project,
        }


@dataclass
class Plan:
    """One project's plan."""

    base: str
    environments: list[EnvironmentPlan]
    live: bool = False
    assumptions: list[str] = field(default_factory=list)  # the engine settings the hazards assume
    project: str = "."  # the project's folder (its trainforge.yaml's) from the repository's root
    base_errors: list[BaseError] = field(default_factory=list)

    def hazards(self) -> set[str]:
        """Every hazard not accepted, across environments (what --fail-on looks at)."""
        return {h for env in self.environments for job in env.jobs for h in job.open_hazards()}

    def to_json(self) -> dict[str, Any]:
        return Plans([self]).to_json()


@dataclass
class Plans:
    """What one run of `plan` says: a plan per project (sorted by folder), and the warnings for
    the reviewer (an accept that matched nothing, a trailer that could not be read)."""

    items: list[Plan]
    notices: list[str] = field(default_factory=list)

    def hazards(self) -> set[str]:
        return {h for plan in self.items for h in plan.hazards()}

    def failing(self, words: set[str]) -> list[tuple[Plan, EnvironmentPlan, JobPlan, str]]:
        """Each hazard of `words` that occurs and nobody accepted, with its project, environment and job."""
        return [(plan, env, job, h) for plan in self.items for env in plan.environments for job in env.jobs
                for h in job.open_hazards() if h in words]

    def to_json(self) -> dict[str, Any]:
        """One document: the contract's keys, each environment naming its project."""
        first = self.items[0]
        return {"base": first.base,
                "environments": [env.to_json(plan.project) for plan in self.items for env in plan.environments],
                "live": first.live, "assumptions": list(first.assumptions),
                "projects": [plan.project for plan in self.items],
                "baseErrors": [e.to_json() for plan in self.items for e in plan.base_errors],
                "notices": list(self.notices)}


def _hours_json(hours: GpuHours) -> dict[str, Any]:
    return {"before": hours.before, "after": hours.after, "addedAtMost": hours.added,
            "unbounded": list(hours.unbounded)}
