"""From a validated TrainJob document to one `Target` per environment.

Precedence, lowest first: built-in defaults, project `defaults`, environment settings,
the job's `spec`, the job's `environments.<env>`. The per-environment spec is a deep
merge of raw data (mappings merge, lists and scalars replace), validated again as a
whole, so an override that breaks the spec is reported. `environments.<env>: null` gives
no target there: the job does not exist in that environment (a TFJob stays out of a
trainer-v2 one that cannot run it). `SpecView` answers "where did
this value come from" for the merged spec: a value set by the override points into the
`environments` section, anything else into `spec`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import ValidationError

from compiler.diagnostics import Diagnostic
from compiler.reading.validation import diagnostics_from, format_path
from schemas.loader import Document, Loc, Pos
from schemas.project import (
    DEFAULT_CONTROLLER,
    DEFAULT_TARGET,
    Environment,
    Project,
    ProjectPolicy,
)
from schemas.trainjob import TrainJob, TrainJobSpec

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class SpecView:
    """Positions and display paths for the merged spec of one environment."""

    doc: Document
    env: Optional[str]

    def _source(self, loc: Loc) -> tuple[Loc, Loc]:
        """(document loc, display loc) for a loc relative to the spec."""
        override = ("spec", "environments", self.env) if self.env else None
        for cut in range(len(loc), 0, -1):
            prefix = loc[:cut]
            if override and (override + prefix in self.doc.key_pos):
                return override + prefix, override + loc
            if ("spec",) + prefix in self.doc.key_pos:
                return ("spec",) + prefix, ("spec",) + loc
        return ("spec",), ("spec",) + loc

    def position(self, loc: Loc, prefer_key: bool = True) -> Pos:
        at, _ = self._source(tuple(loc))
        return self.doc.position(at, prefer_key=prefer_key)

    def display(self, loc: Loc) -> str:
        return format_path(self._source(tuple(loc))[1])

    def written(self, loc: Loc) -> bool:
        """The job file sets `loc` itself (in spec or its environment's override), rather
        than a default of the project's trainforge.yaml filling it in."""
        override = ("spec", "environments", self.env) if self.env else None
        return ("spec", *loc) in self.doc.key_pos or bool(override and override + tuple(loc) in self.doc.key_pos)

    def error(self, loc: Loc, message: str, fix: str, *, prefer_key: bool = False) -> Diagnostic:
        line, col = self.position(loc, prefer_key)
        return Diagnostic(self.doc.file, line, col, self.display(loc), message, fix)


@dataclass(frozen=True)
class Target:
    """One job compiled for one environment: everything lowering and overlays need."""

    doc: Document
    env_name: str
    environment: Environment
    policy: ProjectPolicy
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: TrainJobSpec
    view: SpecView
    api: str = DEFAULT_TARGET  # the environment's target (compiler/targets), by name
    # the environment's controller: whose init containers the pod security review adds (kubeflow-v1)
    controller: str = DEFAULT_CONTROLLER
    # the Trainer v2 runtimes written beside the jobs (compiler/reading/runtimes.py), for the
    # trainer-v2 target to find the one `spec.runtime` names
    runtimes: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    # (spec, plan, merged pod template) per replica type, kept by `lowering.pod_template` from
    # the review rules' first ask to lowering's last: it lives and dies with the target
    merged_templates: list[Any] = field(default_factory=list, compare=False, repr=False)


def deep_merge(base: Any, override: Any) -> Any:
    # an override map with `$patch` (delete or replace, in an environment's podTemplate) says
    # what the map is, so the job's own fields must not be mixed into it; with `$retainKeys`
    # the job's fields it does not list are cleared here already
    if isinstance(base, dict) and isinstance(override, dict) and "$patch" not in override:
        retain = override.get("$retainKeys")
        merged = {k: v for k, v in base.items() if not isinstance(retain, list) or k in retain}
        for key, value in override.items():
            merged[key] = deep_merge(merged[key], value) if key in merged else value
        return merged
    return override


def _unset_nulls(spec: dict[str, Any]) -> dict[str, Any]:
    """An environment's `field: null` at the top of spec unsets the field there: it takes
    its default, as if the job never wrote it (`roles: null` drops the extra roles where a
    target has none; before, the empty value itself was validated and refused as "expected
    a mapping, got nothing"). Deeper nulls keep their meaning (`scheduling.queue: null`
    opts out of the default queue; a podTemplate null is a strategic-merge delete). A
    required field (framework) takes no null: the override has no such field. `image: null`
    leaves a trainer-v2 environment's jobs the runtime's image."""
    return {key: value for key, value in spec.items() if value is not None}


def _without_envs(spec: TrainJobSpec) -> TrainJobSpec:
    """The job's spec, validated once already as part of the TrainJob, as a plain TrainJobSpec.

    Without an override the merged spec is the spec itself; validating it a second time
    would cost every build for nothing (bench/README.md, "Figures the compiler's code cites").
    """
    return TrainJobSpec.model_construct(
        _fields_set=spec.model_fields_set - {"environments"},
        **{name: getattr(spec, name) for name in TrainJobSpec.model_fields},
    )


def _with_scheduling_defaults(spec: TrainJobSpec, environment: Environment) -> TrainJobSpec:
    """The environment's default queue, priority and gang where the job has none. A job
    that writes `queue: null` keeps no queue: the way out for a kind Kueue does not
    manage (compiler/targets/kubeflow_v1.py) in an environment with a default queue."""
    own = spec.scheduling
    env = environment.scheduling
    update = {
        name: getattr(env, name)
        for name in ("queue", "priority", "gang")
        if getattr(own, name) is None and getattr(env, name) is not None
        and not (name == "queue" and name in own.model_fields_set)
    }
    if not update:  # nothing to fill in (most jobs): the spec as it is, no copies
        return spec
    # model_copy, not Scheduling(...): both sides are validated already, and
    # re-validating would send a `Gang` model (not a mapping) through the gang
    # discriminator, which rejects it.
    return spec.model_copy(update={"scheduling": own.model_copy(update=update)})


def targets_for(
    doc: Document, job: TrainJob, project: Project, envs: list[str], runtimes: tuple[Any, ...] = ()
) -> tuple[list[Target], list[Diagnostic]]:
    """Merge and validate the job for each environment in `envs`."""
    diagnostics: list[Diagnostic] = []
    declared = project.environment_names()
    for env_name in job.spec.environments:
        if env_name not in declared:
            line, col = doc.position(("spec", "environments", env_name))
            diagnostics.append(
                Diagnostic(
                    doc.file, line, col, f"spec.environments.{env_name}",
                    f"environment '{env_name}' is not declared by the project",
                    f"declared environments: {', '.join(declared)}; rename it or add it"
                    " under environments in trainforge.yaml",
                )
            )
    if diagnostics:
        return [], diagnostics
    raw_spec = {k: v for k, v in doc.data["spec"].items() if k != "environments"}
    targets = []
    for env_name in envs:
        if env_name in job.spec.environments and job.spec.environments[env_name] is None:
            continue  # `environments.<env>: null`: the job leaves that environment, no target there
        override = (doc.data["spec"].get("environments") or {}).get(env_name)
        view = SpecView(doc, env_name if override else None)
        merged = _unset_nulls(deep_merge(raw_spec, override)) if override else raw_spec
        try:
            spec = TrainJobSpec.model_validate(merged) if override else _without_envs(job.spec)
        except ValidationError as exc:
            diagnostics.extend(
                diagnostics_from(
                    exc, doc, root=TrainJobSpec, data=merged,
                    position=view.position, display=view.display,
                )
            )
            continue
        environment = project.environment(env_name)
        meta = job.metadata
        targets.append(
            Target(
                doc=doc,
                env_name=env_name,
                environment=environment,
                policy=project.policy_for(env_name),
                name=meta.name,
                namespace=meta.namespace
                or environment.namespace
                or project.defaults.namespace
                or DEFAULT_NAMESPACE,
                labels={**project.defaults.labels, **meta.labels},
                annotations=dict(meta.annotations),
                spec=_with_scheduling_defaults(spec, environment),
                view=view,
                api=project.target_for(env_name),
                controller=project.controller_for(env_name),
                runtimes=runtimes,
            )
        )
    return targets, diagnostics
