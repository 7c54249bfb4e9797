"""The compile pipeline, end to end and free of I/O but reading the sources.

sources -> documents with positions -> validated models -> per-environment targets ->
cross-field rules -> lowered bundles (through the environment's target API,
`compiler/targets`) -> overlay steps. The CLI calls `compile_sources`
and decides what to print or write; nothing here touches stdout or the output folder,
which keeps every stage testable on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pydantic import ValidationError

from compiler.diagnostics import Diagnostic, has_errors, ordered
from compiler.reading.resolve import Target, targets_for
from compiler.reading.runtimes import read as read_runtimes
from compiler.reading.sources import Sources, collect
from compiler.reading.validation import diagnostics_from
from compiler.review import policy, rules
from compiler.targets import api
from schemas.bundle import Bundle
from schemas.project import DEFAULT_PROJECT, Project
from schemas.trainjob import TrainJob


@dataclass
class Result:
    bundles: dict[str, list[Bundle]] = field(default_factory=dict)  # env -> bundles
    diagnostics: list[Diagnostic] = field(default_factory=list)
    environments: list[str] = field(default_factory=list)
    project: Project = field(default_factory=lambda: DEFAULT_PROJECT)

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


class UnknownEnvironment(ValueError):
    """`--env` named an environment the project does not declare (a usage error)."""


def _project(sources_project, diagnostics: list[Diagnostic]) -> Optional[Project]:
    if sources_project is None:
        return DEFAULT_PROJECT
    try:
        project = Project.model_validate(sources_project.data)
    except ValidationError as exc:
        diagnostics.extend(diagnostics_from(exc, sources_project, root=Project))
        return None
    diagnostics.extend(policy.project_diagnostics(project, sources_project))
    return project


def _apply_overlays(bundle: Bundle) -> Bundle:
    from overlays import STEPS

    for step in STEPS:
        bundle = step(bundle)
    return bundle


def _duplicates(bundles: list[Bundle]) -> list[Diagnostic]:
    seen: dict[tuple[str, str], Target] = {}
    out = []
    for bundle in bundles:
        t = bundle.target
        key = (t.namespace, t.name)
        if key in seen:
            first = seen[key]
            line, col = t.doc.position(("metadata", "name"), prefer_key=False)
            out.append(
                Diagnostic(
                    t.doc.file, line, col, "metadata.name",
                    f"job {t.namespace}/{t.name} is also defined in {first.doc.file}:{first.doc.start[0]}",
                    "give each job a unique name within its namespace",
                )
            )
        else:
            seen[key] = t
    return out


# where in a job an object it creates gets its name (the first written wins), for the error
_NAMED_AT = {
    "ServiceAccount": (("spec", "serviceAccount", "name"), ("spec", "serviceAccount")),
    "Role": (("spec", "serviceAccount", "name"), ("spec", "serviceAccount")),
    "RoleBinding": (("spec", "serviceAccount", "name"), ("spec", "serviceAccount")),
    "PersistentVolumeClaim": (("spec", "storage"),),
}


def _shared_objects(bundles: list[Bundle]) -> list[Diagnostic]:
    """Two jobs creating the same object (a ServiceAccount both name `trainer`, say): kustomize
    refuses the tree ("already registered id") and in the cluster the second would overwrite
    the first, so it is an error at the field that names it in the later job (one per field:
    an account's Role and RoleBinding go with it)."""
    seen: dict[tuple[str, str, str, str], Target] = {}
    clashes: dict[tuple[int, tuple[str, ...], str], tuple[Target, Target, list[str]]] = {}
    for bundle in bundles:
        t = bundle.target
        for component in bundle.components:
            for obj in component.resources:
                meta = obj.get("metadata") or {}
                key = (str(obj.get("apiVersion", "")).split("/")[0], str(obj.get("kind")),
                       str(meta.get("namespace", t.namespace)), str(meta.get("name")))
                first = seen.setdefault(key, t)
                if first is not t:
                    loc = next((loc for loc in _NAMED_AT.get(key[1], ()) if loc in t.doc.key_pos), ("metadata", "name"))
                    clashes.setdefault((id(t), loc, f"{key[2]}/{key[3]}"), (t, first, []))[2].append(key[1])
    out = []
    for (_, loc, name), (t, first, kinds) in clashes.items():
        line, col = t.doc.position(loc, prefer_key=loc[-1] != "name")
        what = " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
        out.append(Diagnostic(
            t.doc.file, line, col, ".".join(loc),
            f"job {t.namespace}/{t.name} creates {what} {name}, which job {first.name} "
            f"({first.doc.file}:{first.doc.start[0]}) creates too",
            "give it a name of its own, or create it in one job and have the other use it"
            " (serviceAccount: {name: ..., create: false})",
        ))
    return out


def compile_sources(paths: list[Path], *, env: Optional[str] = None, lower_jobs: bool = True) -> Result:
    """Validate (and, with `lower_jobs`, lower) every job under `paths`."""
    return compile_documents(collect(paths), env=env, lower_jobs=lower_jobs)


def compile_documents(sources: Sources, *, env: Optional[str] = None, lower_jobs: bool = True,
                      review: bool = True, project: Optional[Project] = None) -> Result:
    """`compile_sources` on documents already read: what `train-compile import` compiles its
    specs with in memory, before anything is written. `review=False` leaves the cross-field
    rules out (the importer's first lowering of a spec it will change, reviewed once final);
    `project` is the sources' project document, validated already."""
    result = Result(diagnostics=list(sources.diagnostics))
    if project is None:
        project = _project(sources.project, result.diagnostics)
    if project is None:
        result.diagnostics = ordered(result.diagnostics)
        return result
    result.project = project
    declared = project.environment_names()
    if env is not None and env not in declared:
        raise UnknownEnvironment(f"unknown environment '{env}'; the project declares {', '.join(declared)}")
    result.environments = [env] if env else declared
    runtimes, problems = read_runtimes(sources.runtimes)
    result.diagnostics.extend(problems)
    targets: list[Target] = []
    for doc in sources.jobs:
        try:
            job = TrainJob.model_validate(doc.data)
        except ValidationError as exc:
            result.diagnostics.extend(diagnostics_from(exc, doc, root=TrainJob))
            continue
        found, problems = targets_for(doc, job, project, result.environments, tuple(runtimes))
        result.diagnostics.extend(problems)
        if review:
            for target in found:
                result.diagnostics.extend(rules.check(target))
        targets.extend(found)
    if lower_jobs and not has_errors(result.diagnostics):
        for env_name in result.environments:
            bundles = [_apply_overlays(api(t.api).lower(t)) for t in targets if t.env_name == env_name]
            bundles = api(project.target_for(env_name)).with_runtimes(bundles)
            result.diagnostics.extend(_duplicates(bundles))
            result.diagnostics.extend(_shared_objects(bundles))
            result.bundles[env_name] = bundles
    result.diagnostics = ordered(result.diagnostics)
    return result
