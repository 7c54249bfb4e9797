"""Both sides of a plan, compiled by the head's compiler: per environment, one `Job` per namespace/name.

The head is the working tree, compiled as `build` would. The base is the revision's files
that the head changed (or all of them when a project file changed), compiled from a
temporary copy (`compiler.plan.revision`); every other head job is the base's job too, the
same object, so matching and comparing skip it at once. The head's invalid input is the
usual positioned diagnostics (nothing is planned). A base with errors (a `main` that a pull
request fixes) is planned all the same: its files with errors are left out and compiled
again without them, so their jobs are compared with nothing, and its diagnostics, naming
their file as `REF:path`, go into the plan.

A `Job` reads its compiled objects lazily (the render stream's objects, source annotation
included): only the jobs a change touches are rendered twice.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from compiler.diagnostics import Diagnostic
from compiler.emit.source import bundle_objects, source_of
from compiler.pipeline import Result, UnknownEnvironment, compile_sources
from compiler.plan import revision
from compiler.targets.base import PlanFacts
from schemas.bundle import Bundle
from schemas.loader import Document, load_file

NO_JOBS = "found no TrainJob documents"


@dataclass(eq=False)
class Job:
    """One compiled job of one side in one environment."""

    env: str
    bundle: Bundle

    @property
    def namespace(self) -> str:
        return self.bundle.target.namespace

    @property
    def name(self) -> str:
        return self.bundle.target.name

    @property
    def kind(self) -> str:
        return self.bundle.kind

    @property
    def origin(self) -> str:
        return source_of(self.bundle)

    @property
    def doc(self) -> Document:
        return self.bundle.target.doc

    @property
    def target(self) -> Any:
        return self.bundle.target

    @cached_property
    def objects(self) -> list[dict[str, Any]]:
        """What the job puts in the cluster (the job last), as `render` writes it."""
        return bundle_objects(self.bundle)

    @property
    def rendered(self) -> dict[str, Any]:
        return self.objects[-1]

    @property
    def plan_facts(self) -> PlanFacts:
        """What the plan reads about jobs of this one's target (compiler.targets)."""
        return self.bundle.api.plan

    @cached_property
    def pods(self) -> list[tuple[str, int, int]]:
        """(role, pods, GPUs per pod), as the target lays the job out."""
        return self.bundle.api.pods(self.bundle)

    @cached_property
    def gpus(self) -> int:
        return sum(count * each for _, count, each in self.pods)

    @property
    def queue(self) -> Optional[str]:
        """The Kueue queue (the scheduling overlay's queue-name label), the environment's default included."""
        return self.target.spec.scheduling.queue

    @property
    def deadline(self) -> Optional[int]:
        """activeDeadline in seconds, or None."""
        seconds = self.target.spec.policy.activeDeadline
        return None if seconds is None else int(seconds)


@dataclass
class Side:
    label: str  # "the working tree" or the base revision as given
    result: Result
    jobs: dict[str, dict[tuple[str, str], Job]] = field(default_factory=dict)  # env -> (ns, name) -> Job
    project_doc: Optional[Document] = None
    compiled: set[str] = field(default_factory=set)  # the spec files this side compiled itself
    errors: list[Diagnostic] = field(default_factory=list)  # the base's errors, files named REF:path
    broken: set[str] = field(default_factory=set)  # the base's files left out for their errors ("*": all)


class SideInvalid(Exception):
    """A side's input has errors: its (renamed) diagnostics to print, exit 1."""

    def __init__(self, side: str, diagnostics: list[Diagnostic]) -> None:
        super().__init__(side)
        self.side = side
        self.diagnostics = diagnostics


def _jobs(result: Result) -> dict[str, dict[tuple[str, str], Job]]:
    return {env: {(b.target.namespace, b.target.name): Job(env, b) for b in bundles}
            for env, bundles in result.bundles.items()}


def _project_doc(paths: list[Path]) -> Optional[Document]:
    """The project file's document (its `origin` the path from the repository root, as a spec's)."""
    from compiler.reading.sources import project_file_for, repo_path

    for path in paths:
        candidate = project_file_for(path)
        if candidate.is_file():
            docs, _ = load_file(candidate)
            for doc in docs:
                if isinstance(doc.data, dict) and doc.data.get("kind") == "Project":
                    doc.origin = repo_path(str(candidate.resolve())) or str(candidate)
                    return doc
    return None


def head(sources: list[Path], env: Optional[str]) -> Side:
    """The working tree, compiled; UnknownEnvironment propagates (a usage error)."""
    result = compile_sources(sources, env=env)
    if any(d.severity == "error" and not d.message.startswith(NO_JOBS) for d in result.diagnostics):
        raise SideInvalid("the working tree", result.diagnostics)  # no job left is a plan: every job deleted
    side = Side("the working tree", result, _jobs(result), _project_doc(sources))
    side.compiled = {job.origin for env_jobs in side.jobs.values() for job in env_jobs.values()}
    return side


def base(repo: revision.Repo, commit: str, ref: str, rel_sources: list[str], env: Optional[str],
         head_side: Side) -> Side:
    """The revision, compiled where it differs from the head; the head's jobs elsewhere."""
    candidates = revision.project_candidates(rel_sources)
    in_base = revision.tree_files(repo, commit, [*rel_sources, *candidates])
    changed = revision.changed_files(repo, commit, [*rel_sources, *candidates])
    projects = [p for p in candidates if p in in_base]
    whole = any(Path(p).name == revision.PROJECT_FILE for p in changed)
    specs = sorted(p for p in in_base if p not in candidates and p.endswith((".yaml", ".yml"))
                   and (whole or p in changed))
    scratch = Path(tempfile.mkdtemp(prefix="trainforge-plan-base-", dir=_scratch_root()))
    try:
        (scratch / ".git").mkdir()  # the repository root for the compiler's project and source lookups
        revision.extract(repo, commit, [*specs, *projects], scratch)
        paths = [scratch / rel for rel in rel_sources if (scratch / rel).exists()]
        side = _compile_base(paths, env, ref, scratch) if specs else Side(ref, Result())
        side.project_doc = _project_doc(paths) if paths else None
        if side.project_doc is not None:
            side.project_doc.file = f"{ref}:{_strip(side.project_doc.file, scratch)}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    side.compiled = set(specs)
    if not whole:  # an unchanged file's jobs are the head's own
        for env_name, jobs in head_side.jobs.items():
            mine = side.jobs.setdefault(env_name, {})
            for key, job in jobs.items():
                if job.origin in in_base and job.origin not in changed:
                    mine.setdefault(key, job)
    return side


def _scratch_root() -> Optional[str]:
    """Where the base's files are written to be compiled: memory (/dev/shm) where there is one
    and TMPDIR does not say otherwise. Creating a thousand small files on a disk's filesystem
    cost more CPU than compiling them (0.75 s against 0.05 s on tmpfs, a project-level change of
    1,000 specs: bench/README.md)."""
    shm = "/dev/shm"
    return shm if "TMPDIR" not in os.environ and os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _compile_base(paths: list[Path], env: Optional[str], ref: str, scratch: Path) -> Side:
    """The base compiled; a file with errors is left out and the rest compiled again (a
    project file with errors, or errors no file can be blamed for, leave no job)."""
    try:
        result = compile_sources(paths, env=env)
    except UnknownEnvironment:  # the environment is new in the head: the base had no jobs there
        return Side(ref, Result())
    errors = _errors(result, ref, scratch)
    seen, broken = list(errors), set()
    while errors:
        files = {_strip(d.file, scratch) for d in result.diagnostics if d.severity == "error"}
        if any(Path(f).name == revision.PROJECT_FILE or not f.endswith((".yaml", ".yml")) for f in files) \
                or files <= broken:
            return Side(ref, Result(), errors=seen, broken={"*"})
        broken |= files
        rest = [f for f in _spec_files(paths) if _strip(str(f), scratch) not in broken]
        if not rest:
            return Side(ref, Result(), errors=seen, broken=broken)
        result = compile_sources(rest, env=env)
        errors = _errors(result, ref, scratch)
        seen += [d for d in errors if d not in seen]
    for bundles in result.bundles.values():
        for bundle in bundles:  # documents name their file as REF:path in what the plan prints
            doc = bundle.target.doc
            doc.file = f"{ref}:{_strip(doc.file, scratch)}"
    return Side(ref, result, _jobs(result), errors=seen, broken=broken)


def _errors(result: Result, ref: str, scratch: Path) -> list[Diagnostic]:
    return [_renamed(d, ref, scratch) for d in result.diagnostics
            if d.severity == "error" and not d.message.startswith(NO_JOBS)]


def _spec_files(paths: list[Path]) -> list[Path]:
    """The YAML files under `paths` (a folder's, sorted), the project files left for the compiler to find."""
    out = []
    for path in paths:
        found = sorted(path.rglob("*")) if path.is_dir() else [path]
        out += [f for f in found if f.is_file() and f.suffix in (".yaml", ".yml") and f.name != revision.PROJECT_FILE]
    return out


def _strip(name: str, scratch: Path) -> str:
    prefix = str(scratch) + "/"
    return name[len(prefix):] if name.startswith(prefix) else name


def _renamed(d: Diagnostic, ref: str, scratch: Path) -> Diagnostic:
    prefix = str(scratch) + "/"
    return Diagnostic(f"{ref}:{_strip(d.file, scratch)}", d.line, d.col, d.path,
                      d.message.replace(prefix, f"{ref}:"), d.fix.replace(prefix, f"{ref}:"), d.severity)
