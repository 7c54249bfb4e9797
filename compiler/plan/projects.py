"""Which project each source belongs to: the folder of the `trainforge.yaml` that governs it.

`plan` given the folders of several projects (one repository, two teams) plans each apart,
with its own project file, environments and base files, and prints one document with a
section per project. The folder, from the repository's root, names the project in the
comment's marker and heading, so the comments of two projects never overwrite each other
(`compiler.plan.markdown`). Sources that no project file governs plan together as one
project named by their common folder, as `build` compiles them.
"""

from __future__ import annotations

import os
from pathlib import Path


def _folder(path: Path, root: Path) -> str:
    rel = Path(os.path.relpath(path, root)).as_posix()
    return "." if rel in ("", ".") else rel


def group(sources: list[Path], root: Path) -> list[tuple[str, list[Path]]]:
    """(the project's folder from `root`, its sources) per project, sorted by folder."""
    from compiler.reading.sources import project_file_for

    governed: dict[str, list[Path]] = {}
    loose: list[Path] = []
    for src in sources:
        found = project_file_for(src)
        if found.is_file():
            governed.setdefault(_folder(found.parent.resolve(), root), []).append(src)
        else:
            loose.append(src)
    if loose:
        common = os.path.commonpath([str((s if s.is_dir() else s.parent).resolve()) for s in loose])
        governed.setdefault(_folder(Path(common), root), []).extend(loose)
    # sorted: the order the folders are named in changes no byte of the plan
    return sorted((folder, sorted(found, key=lambda s: str(s.resolve()))) for folder, found in governed.items())


def describe(folder: str) -> str:
    """How a heading names the project: its folder, or the repository's root."""
    return "the repository's root" if folder == "." else folder

