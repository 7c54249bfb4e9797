"""The unit overlays work on: a lowered job plus its kustomize Components.

A `Bundle` is immutable. The base job is what lowering produced; each overlay adds one
`Component` (new objects such as a ServiceAccount or PVC, and JSON6902 patches against
the job). JSON6902 rather than strategic merge because kustomize treats custom
resources with plain JSON merge semantics, which would replace whole container lists.
`rendered_job()` applies the patches exactly as `kubectl kustomize` does (`patching`), so
`train-compile render` and the kustomize tree in git always agree (a test holds them to
it).

Why it sits in schemas/ although it is no spec model: the compiler builds bundles and the
overlays transform them, and the fixed layout has no package below both but this one;
here neither depends on the other (the import-linter contracts hold overlays to that).
What the compiler puts in a bundle (its resolved Target, framework adapter and target
API) is typed by the small Protocols below: the surface the overlays read, nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Optional, Protocol

from schemas.jsoncopy import json_copy

if TYPE_CHECKING:
    from schemas.loader import Document
    from schemas.project import Environment
    from schemas.trainjob import Resources, TrainJobSpec

JsonObject = dict[str, Any]


class JobTarget(Protocol):
    """One job in one environment (compiler.reading.resolve.Target)."""

    doc: "Document"  # the spec document it came from
    name: str
    namespace: str
    labels: dict[str, str]
    spec: "TrainJobSpec"
    environment: "Environment"


class KindFacts(Protocol):
    kind: str  # e.g. PyTorchJob
    replica_specs: str  # e.g. pytorchReplicaSpecs


class LauncherFacts(Protocol):
    """A launcher replica type (foundation.frameworks.base.Launcher): MPI's."""

    replica_type: str
    names: tuple[str, ...]  # suffixes of what the operator names after the job, the pod's first


class FrameworkAdapter(Protocol):
    """A framework adapter (foundation.frameworks.base.Adapter): the kind's facts."""

    facts: KindFacts
    launcher: Optional[LauncherFacts]


class LoweredApi(Protocol):
    """The target API the job was lowered to (compiler.targets.base.TargetApi)."""

    scheduling_policy: bool

    def pod_templates(self, bundle: "Bundle") -> list[tuple[str, str]]: ...

    def program_container(self, bundle: "Bundle") -> str: ...

    def role_resources(self, bundle: "Bundle") -> dict[str, Optional["Resources"]]: ...


@dataclass(frozen=True)
class Component:
    name: str  # folder name: rbac | storage | scheduling
    resources: tuple[JsonObject, ...] = ()
    patches: tuple[JsonObject, ...] = ()  # JSON6902 operations against the job


@dataclass(frozen=True)
class Bundle:
    target: JobTarget
    adapter: FrameworkAdapter
    job: JsonObject
    api: LoweredApi  # the target the job was lowered to: where its pod templates are
    components: tuple[Component, ...] = field(default_factory=tuple)

    @property
    def kind(self) -> str:
        return self.job["kind"]

    def pod_templates(self) -> list[tuple[str, str]]:
        """(role, JSON pointer to its pod spec) for every pod template of the base job."""
        return self.api.pod_templates(self)

    @property
    def program_container(self) -> str:
        return self.api.program_container(self)

    def with_component(self, component: Component) -> "Bundle":
        """Add or replace a component by name (replacing keeps overlays idempotent)."""
        others = tuple(c for c in self.components if c.name != component.name)
        if not component.resources and not component.patches:
            return replace(self, components=others)
        return replace(self, components=others + (component,))

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)

    def rendered_job(self, *, shared: bool = False) -> JsonObject:
        """The job with every component's patches applied, as kustomize renders it: the
        caller's own copy, or with `shared` one that copies only what the patches change and
        shares the rest with the bundle (read it, never change it; `patching.applied`)."""
        from schemas import patching  # it imports JsonObject from here

        job = self.job if shared else json_copy(self.job)
        for component in self.components:
            if component.patches:  # `job` is our own copy (added values are copied), or copied on write
                job = patching.applied(job, component.patches) if shared else patching.apply(job, component.patches)
        return job

    def objects(self, *, shared: bool = False) -> list[JsonObject]:
        """Every object this bundle puts in the cluster (job last is kustomize's concern): the
        caller's own copies, or with `shared` the bundle's own objects and a job shared as
        `rendered_job(shared=True)` (read them, never change them)."""
        extra = [r if shared else json_copy(r) for c in self.components for r in c.resources]
        return extra + [self.rendered_job(shared=shared)]


def escape(token: str) -> str:
    """JSON pointer escaping of one path token (label keys contain '/')."""
    return token.replace("~", "~0").replace("/", "~1")
