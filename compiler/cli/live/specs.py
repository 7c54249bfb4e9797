"""The git side of `status`: each spec's compiled job, and which live job is whose.

A spec's job is what `build` writes for the environment (the base job with its overlay
patches applied, `Bundle.rendered_job`), with the spec's path from the git repository's
root: the value `build` writes into the `trainforge.dev/source` annotation
(`schemas.marks.SOURCE`). A live job is the spec's when kind, namespace and name agree;
the annotation finds what no spec claims any more: a live job in one of the environment's
namespaces whose annotation names a file inside the sources given (a file named, or a
folder's descendant) that no longer exists, or that no longer defines that job (renamed,
moved to another namespace or kind), is an orphan. A live job without the annotation,
from a file outside the sources, or in a namespace the environment does not use (the
path is relative to a repository the annotation does not name: another repository's
`jobs/a.yaml` elsewhere in the cluster is not ours) is someone else's and is left out.
The environment's namespaces are its specs', its default one and the ones its policy
allows.

Which kinds to read is the health table's (`compiler.gitops.health.api_versions()`: the seven
kubeflow.org/v1 kinds, the mpi-operator's v2beta1 MPIJob and Trainer's TrainJob) whatever
the environment's target, so a job left behind by a target or framework switch is found
too; a kind or version the cluster does not serve is skipped by the reader (a cluster
serves `mpijobs.kubeflow.org` at v1 or at v2beta1, from whichever operator installed it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from foundation.cluster.resource import Resource
from schemas.marks import SOURCE

if TYPE_CHECKING:
    from compiler.pipeline import Result


@dataclass(frozen=True)
class SpecJob:
    environment: str
    namespace: str
    name: str
    kind: str
    api_version: str
    source: str  # the spec's path from the repository's root (what trainforge.dev/source holds)
    line: int
    compiled: dict[str, Any] = field(compare=False, repr=False)
    # compiler.reading.resolve.Target: the spec's fields and their positions (a fix's line)
    target: Any = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


def spec_jobs(result: Result, env: str) -> list[SpecJob]:
    out = []
    for bundle in result.bundles.get(env, []):
        job, target = bundle.rendered_job(), bundle.target
        out.append(SpecJob(env, target.namespace, target.name, job["kind"], job["apiVersion"],
                           target.doc.origin or target.doc.file, target.doc.start[0], job, target))
    return out


def kind_of(api_version: str, kind: str) -> Resource:
    """The API resource of a job kind; its plural is the target table's (compiler.targets)."""
    from compiler.targets import plural_of

    group, _, version = api_version.rpartition("/")
    return Resource(group, version, plural_of(kind), kind)


def job_kinds() -> list[Resource]:
    from compiler.gitops.health import api_versions

    return [kind_of(api_version, kind) for api_version, kind in api_versions()]


def source_of(obj: dict[str, Any]) -> Optional[str]:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(SOURCE)


def live_key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj.get("metadata") or {}
    return (str(obj.get("kind")), str(meta.get("namespace")), str(meta.get("name")))


@dataclass(frozen=True)
class Scope:
    """The sources a run was given, as `trainforge.dev/source` spells paths: (path, is a
    folder, the repository root it is relative to, None outside a repository)."""

    entries: tuple[tuple[str, bool, Optional[str]], ...]
    namespaces: frozenset[str] = frozenset()

    def covers(self, source: str, namespace: str) -> bool:
        return namespace in self.namespaces and any(source == path or (folder and (path == "." or source.startswith(path.rstrip("/") + "/")))
                   for path, folder, _ in self.entries)

    def exists(self, source: str) -> bool:
        roots = {root for path, _, root in self.entries}
        return any(os.path.isfile(os.path.join(root, source) if root else source) for root in roots)


def environment_namespaces(result: Result, env: str) -> frozenset[str]:
    from compiler.reading.resolve import DEFAULT_NAMESPACE

    project = result.project
    own = project.environment(env).namespace or project.defaults.namespace or DEFAULT_NAMESPACE
    allowed = project.policy_for(env).allowedNamespaces or []
    return frozenset({own, *allowed, *(t.target.namespace for t in result.bundles.get(env, []))})


def scope_of(paths: list[Path], namespaces: frozenset[str]) -> Scope:
    entries = []
    for given in paths:
        resolved = given.resolve()
        root = _repo_root(resolved if resolved.is_dir() else resolved.parent)
        # outside a repository `build` writes the path as diagnostics name it: from the
        # working folder when the file is under it, else as given
        cwd = Path.cwd().resolve()
        path = (os.path.relpath(resolved, root) if root
                else os.path.relpath(resolved, cwd) if resolved.is_relative_to(cwd) else str(given))
        entries.append((path, resolved.is_dir(), root))
    return Scope(tuple(entries), namespaces)


def _repo_root(folder: Path) -> Optional[str]:
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return None


@dataclass(frozen=True)
class Orphan:
    kind: str
    namespace: str
    name: str
    source: str
    reason: str
    live: dict[str, Any] = field(compare=False, repr=False)


def match(specs: list[SpecJob], live: list[dict[str, Any]], *,
          scope: Scope) -> tuple[list[tuple[SpecJob, Optional[dict[str, Any]]]], list[Orphan]]:
    """Each spec with its live job (None: absent), and the live jobs whose spec is gone."""
    by_key = {live_key(obj): obj for obj in live}
    pairs = [(spec, by_key.get(spec.key)) for spec in specs]
    claimed = {spec.key for spec in specs}
    orphans = []
    for key, obj in sorted(by_key.items()):
        source = source_of(obj)
        if key in claimed or not source or not scope.covers(source, key[1]):
            continue
        reason = (f"{source} no longer defines it" if scope.exists(source)
                  else f"{source} is no longer in git")
        orphans.append(Orphan(*key, source, reason, obj))
    return pairs, orphans
