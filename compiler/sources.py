"""Find the documents of a run and decide which are ours.

Sources are files or folders (searched recursively). A document is ours when its
`apiVersion` is in the `trainforge.dev` group or its kind is `TrainJob`/`Project`; an
unknown kind or version in our group is an error (almost always a typo), anything else
is skipped with a notice. The project file is `trainforge.yaml` at the root of a source
folder (or beside a source file); a `Project` anywhere else is an error because it
would silently apply to nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from compiler.diagnostics import Diagnostic
from schemas.loader import Document, load_file, yaml_files_resolved

GROUP = "trainforge.dev"
VERSION = "v1alpha1"
OUR_KINDS = ("TrainJob", "Project")
PROJECT_FILE = "trainforge.yaml"


@dataclass
class Sources:
    jobs: list[Document] = field(default_factory=list)
    project: Optional[Document] = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def _display(path: Path, resolved: str, cwd: str) -> str:
    """The name diagnostics use: relative to the working folder when the file is under
    it (`cwd` ends with a slash), else as given. Text, not `Path.relative_to`: a monorepo
    has thousands of files."""
    return resolved[len(cwd):] if resolved.startswith(cwd) else str(path)


def _classify(doc: Document, diagnostics: list[Diagnostic]) -> Optional[str]:
    """'TrainJob', 'Project' or None (not ours / broken); adds diagnostics."""
    data = doc.data
    line, col = doc.start
    if not isinstance(data, dict):
        diagnostics.append(
            Diagnostic(doc.file, line, col, "", "document is not a mapping", "skipped", "notice")
        )
        return None
    api_version = data.get("apiVersion")
    kind = data.get("kind")
    ours_group = isinstance(api_version, str) and api_version.split("/")[0] == GROUP
    if not ours_group and kind not in OUR_KINDS:
        diagnostics.append(
            Diagnostic(
                doc.file, line, col, "",
                f"skipped {kind or 'a document without kind'} ({api_version or 'no apiVersion'})",
                "only TrainJob and Project documents are compiled", "notice",
            )
        )
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


def collect(paths: list[Path]) -> Sources:
    """Load every YAML file under `paths` and sort documents into jobs and the project."""
    out = Sources()
    project_files = {
        (p if p.is_dir() else p.parent).resolve() / PROJECT_FILE for p in paths
    }
    project_names = {str(p) for p in project_files}
    seen: set[str] = set()
    cwd = os.path.join(str(Path.cwd().resolve()), "")
    for root in paths:
        for path, resolved in yaml_files_resolved(root):
            if resolved in seen:
                continue
            seen.add(resolved)
            display = _display(path, resolved, cwd)
            _collect_file(path, display, is_project_file=resolved in project_names, out=out)
    for project_file in sorted(project_files):
        if project_file.is_file() and str(project_file) not in seen:
            display = _display(project_file, str(project_file.resolve()), cwd)
            _collect_file(project_file, display, is_project_file=True, out=out)
    return out


def _collect_file(path: Path, display: str, *, is_project_file: bool, out: Sources) -> None:
    documents, problems = load_file(path, display)
    out.diagnostics.extend(
        Diagnostic(p.file, p.line, p.col, "", p.message, p.fix) for p in problems
    )
    for doc in documents:
        kind = _classify(doc, out.diagnostics)
        if kind == "TrainJob":
            out.jobs.append(doc)
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
