"""`--against REF`: another commit's train-compile measured in the same run, on the same specs.

A before/after figure is only worth comparing when both sides ran on the same machine at the
same moment (a busy shared machine moves absolute figures by several times between runs:
bench/README.md). So the benchmark can run a second compiler beside this checkout's,
interleaved repeat by repeat: the commit's tracked files exported with `git archive` into
the work folder and run from there by the same interpreter (`python -m compiler.cli.main`
with that folder first on PYTHONPATH), which also holds what each wrote: a change meant to
be output-neutral must write the same tree and print the same render stream, byte for byte
(`same_tree`).

The interpreter and its site-packages are this checkout's venv: a commit whose dependencies
differ from it is not measured faithfully (the run fails loudly if one is missing).
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schemas", "foundation", "compiler", "overlays")  # what train-compile runs; foundation since issue 44


def export(ref: str, into: Path) -> Path:
    """The tracked files of `ref` in a folder of `into`, their modules byte-compiled."""
    folder = into / f"ref-{ref.replace('/', '_')}"
    folder.mkdir(parents=True)
    with tempfile.TemporaryFile() as archive:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref], stdout=archive, check=True)
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            tar.extractall(folder, filter="data")
    packages = [str(folder / p) for p in PACKAGES if (folder / p).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True)
    return folder


def command(folder: Path) -> tuple[list[str], dict[str, str]]:
    """argv prefix and environment that run the exported commit's train-compile."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return [sys.executable, "-P", "-m", "compiler.cli.main"], env  # -P: not the working folder's packages


def same_tree(ours: Path, theirs: Path) -> tuple[bool, list[str]]:
    """Whether two output folders hold the same files with the same bytes (the differing paths)."""
    differing: list[str] = []

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        differing.extend(prefix + name for name in cmp.left_only + cmp.right_only + cmp.funny_files)
        _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
        differing.extend(prefix + name for name in mismatch + errors)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(ours, theirs), "")
    return not differing, sorted(differing)


def same_file(ours: Path, theirs: Path) -> bool:
    return filecmp.cmp(ours, theirs, shallow=False)
