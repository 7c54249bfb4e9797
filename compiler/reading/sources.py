"""Find the documents of a run and decide which are ours.

Sources are files or folders (searched recursively). A document is ours when its
`apiVersion` is in the `trainforge.dev` group or its kind is `TrainJob`/`Project`; an
unknown kind or version in our group is an error (almost always a typo), anything else
is skipped with a notice (one notice for the lot when there are more than a few, as when
`validate .` walks a compiled output tree: a Trainer v2 `TrainJob` there is
`trainer.kubeflow.org`'s, not ours), but for a Trainer v2 TrainingRuntime or
ClusterTrainingRuntime written beside the jobs, which is compiled with the jobs that name it
(`compiler/reading/runtimes.py`; a compiled one carries our source mark and is skipped).
The project file is `trainforge.yaml` at the root of
a source folder, beside a source file, or in the nearest folder above them (up to the
git repository's root, as git finds `.git`): `validate jobs/llm/sft.yaml` finds the
project that declares its environments. A `Project` anywhere else is an error because it
would silently apply to nothing. A run that finds no TrainJob at all is an error: a CI
step pointed at the wrong folder must not stay green.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from compiler.diagnostics import Diagnostic
from compiler.reading import runtimes
from foundation.frameworks import stock_runtimes as trainer
from schemas.loader import Document, load_file, yaml_files_resolved

GROUP = "trainforge.dev"
VERSION = "v1alpha1"
OUR_KINDS = ("TrainJob", "Project")
PROJECT_FILE = "trainforge.yaml"
SKIP_NOTICES = 3  # more skipped documents than this are one notice, not one each


@dataclass
class Sources:
    jobs: list[Document] = field(default_factory=list)
    runtimes: list[Document] = field(default_factory=list)  # Trainer v2 runtimes written beside the jobs
    project: Optional[Document] = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    skipped: list[tuple[Diagnostic, str]] = field(default_factory=list)  # each skipped document's notice, its kind


def _display(path: Path, resolved: str, cwd: str) -> str:
    """The name diagnostics use: relative to the working folder when the file is under
    it (`cwd` ends with a slash), else as given. Text, not `Path.relative_to`: a monorepo
    has thousands of files."""
    return resolved[len(cwd):] if resolved.startswith(cwd) else str(path)


def _classify(doc: Document, diagnostics: list[Diagnostic], skipped: list[tuple[Diagnostic, str]]) -> Optional[str]:
    """'TrainJob', 'Project', 'Runtime' or None (not ours / broken); adds diagnostics, and a notice per
    document that is someone else's to `skipped` (summarised once the run is read)."""
    data = doc.data
    line, col = doc.start
    if not isinstance(data, dict):  # a JSON6902 patch file of a compiled tree, say: someone else's too
        what = "a list" if isinstance(data, list) else "a document that is not a mapping"
        skipped.append((Diagnostic(doc.file, line, col, "", "document is not a mapping", "skipped", "notice"), what))
        return None
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    if runtimes.is_runtime(data):
        return "Runtime"  # compiler/reading/runtimes.py checks it; the trainer-v2 target compiles it
    ours_group = isinstance(api_version, str) and api_version.split("/")[0] == GROUP
    if not ours_group and (kind not in OUR_KINDS or _trainer_v2_job(api_version, kind)):
        named = str(kind) if kind else "a document without kind"
        skipped.append((
            Diagnostic(
                doc.file, line, col, "", f"skipped {named} ({api_version or 'no apiVersion'})",
                "only TrainJob and Project documents are compiled", "notice",
            ),
            named,
        ))
        return None
    expected = f"{GROUP}/{VERSION}"
    if kind not in OUR_KINDS:
        at = doc.position(("kind",), prefer_key=False)
        diagnostics.append(
            Diagnostic(doc.file, *at, "kind", f"unknown kind '{kind}' in {GROUP}", "use TrainJob or Project")
        )
        return None
    if api_version != expected:
        at = doc.position(("apiVersion",), prefer_key=False)
        diagnostics.append(
            Diagnostic(
                doc.file, *at, "apiVersion",
                f"{kind} needs apiVersion {expected}, got '{api_version}'", f"write apiVersion: {expected}",
            )
        )
        return None
    return str(kind)


def project_file_for(path: Path) -> Path:
    """The trainforge.yaml that governs `path`: at the folder's root (beside a file), else the
    nearest one above it, looking no higher than the repository root (a folder holding
    `.git`); when there is none, where it would be (the folder itself)."""
    start = (path if path.is_dir() else path.parent).resolve()
    folder = start
    while True:
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists() or folder.parent == folder:
            return start / PROJECT_FILE
        folder = folder.parent


def repo_path(resolved: str) -> Optional[str]:
    """`resolved` (an absolute path) from the root of the git repository holding it (the
    nearest folder above with a `.git`), or None outside one. Folders are looked up once."""
    root = _repo_root(os.path.dirname(resolved))
    return None if root is None else os.path.relpath(resolved, root)


@functools.lru_cache(maxsize=4096)
def _repo_root(folder: str) -> Optional[str]:
    if os.path.exists(os.path.join(folder, ".git")):
        return folder
    parent = os.path.dirname(folder)
    return None if parent == folder else _repo_root(parent)


def _skip_notices(skipped: list[tuple[Diagnostic, str]]) -> list[Diagnostic]:
    """Up to SKIP_NOTICES notices as they are; more become one notice at the first."""
    if len(skipped) <= SKIP_NOTICES:
        return [notice for notice, _ in skipped]
    first = skipped[0][0]
    kinds = sorted({kind for _, kind in skipped})
    files = len({notice.file for notice, _ in skipped})
    shown = ", ".join(kinds[:5]) + (", ..." if len(kinds) > 5 else "")
    return [Diagnostic(
        first.file, first.line, first.col, "",
        f"skipped {len(skipped)} documents in {files} file(s) that are not TrainJob or Project specs ({shown}),"
        " the first here",
        "only TrainJob and Project documents are compiled; name your spec folders, not the compiled output,"
        " to leave them out",
        "notice",
    )]


def _trainer_v2_job(api_version: object, kind: object) -> bool:
    """Kubeflow Trainer's own TrainJob (what `build` writes for a trainer-v2 environment): a
    compiled object, not a mistyped spec. Any other group on our kinds is still a typo."""
    if kind != trainer.TRAINJOB or not isinstance(api_version, str):
        return False
    return api_version.split("/")[0] == trainer.GROUP


def collect(paths: list[Path]) -> Sources:
    """Load every YAML file under `paths` and sort documents into jobs and the project."""
    out = Sources()
    project_files = {project_file_for(p) for p in paths}
    project_names = {str(p) for p in project_files}
    seen: set[str] = set()
    cwd = os.path.join(str(Path.cwd().resolve()), "")
    for root in paths:
        for path, resolved in yaml_files_resolved(root):
            if resolved in seen:
                continue
            seen.add(resolved)
            display = _display(path, resolved, cwd)
            _collect_file(path, display, resolved, is_project_file=resolved in project_names, out=out)
    for project_file in sorted(project_files):
        if project_file.is_file() and str(project_file) not in seen:
            resolved = str(project_file.resolve())
            _collect_file(project_file, _display(project_file, resolved, cwd), resolved, is_project_file=True, out=out)
    out.diagnostics.extend(_skip_notices(out.skipped))
    if not out.jobs and not any(d.severity == "error" for d in out.diagnostics):
        named = ", ".join(str(p) for p in paths)
        out.diagnostics.append(Diagnostic(
            str(paths[0]), 1, 1, "",
            f"found no TrainJob documents in {named} ({len(seen)} YAML file(s) read)",
            f"name the files or folders that hold your specs (apiVersion: {GROUP}/{VERSION}, kind: TrainJob)",
        ))
    return out


def _collect_file(path: Path, display: str, resolved: str, *, is_project_file: bool, out: Sources) -> None:
    documents, problems = load_file(path, display)
    origin = repo_path(resolved) or display
    for doc in documents:
        doc.origin = origin
    out.diagnostics.extend(
        Diagnostic(p.file, p.line, p.col, "", p.message, p.fix) for p in problems
    )
    for doc in documents:
        kind = _classify(doc, out.diagnostics, out.skipped)
        if kind == "TrainJob":
            out.jobs.append(doc)
        elif kind == "Runtime":
            out.runtimes.append(doc)
        elif kind == "Project":
            _add_project(doc, is_project_file=is_project_file, out=out)


def _add_project(doc: Document, *, is_project_file: bool, out: Sources) -> None:
    line, col = doc.start
    if not is_project_file:
        folder = str(Path(doc.file).parent)
        fix = (
            f"compile {folder} as a source of its own (train-compile build {folder} ...)"
            if Path(doc.file).name == PROJECT_FILE
            else f"move it to {PROJECT_FILE} at the root of the folder you compile"
        )
        out.diagnostics.append(
            Diagnostic(
                doc.file, line, col, "kind",
                "a Project document only counts as the trainforge.yaml at the root of a source folder",
                fix,
            )
        )
    elif out.project is not None and out.project.data != doc.data:
        out.diagnostics.append(
            Diagnostic(
                doc.file, line, col, "kind",
                f"a second, different Project (the first is {out.project.file})",
                "compile one project per run",
            )
        )
    else:
        out.project = doc
