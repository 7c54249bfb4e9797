"""The base of a plan: a git revision of the repository that holds the sources, read-only.

Plain `git` in a subprocess (no library: the CLI already needs git to be where the specs
live). Only what the head changed is read from the revision: the files `git diff REV`
names under the sources (and every `trainforge.yaml` that could govern them), copied out
of the object store (`git cat-file --batch`) into a temporary folder at their paths from
the repository's root, with an empty `.git` beside them so the compiler finds the same
project file and names the same `trainforge.dev/source` paths as for the head. A file the
head did not change compiles to the same jobs on both sides (one compiler, one project
file), so the head's jobs stand for it: the plan of a large repository costs about one
compile, not two.

Every way this can go wrong is a `PlanInputError` naming the thing (a source outside the
repository, a revision git does not know, a shallow clone that lacks it), with the
contract's exit code: 2.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

PROJECT_FILE = "trainforge.yaml"  # compiler.reading.sources.PROJECT_FILE (imported lazily there)
ACCEPT_TRAILER = "Trainforge-Accept"


class PlanInputError(Exception):
    """The plan's input is unusable; `code` is the exit code (2: usage, per the contract)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Repo:
    root: Path

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        try:
            done = subprocess.run(["git", "-C", str(self.root), *args], input=stdin, capture_output=True, check=False)
        except FileNotFoundError:
            raise PlanInputError("git is not installed; plan reads the base from git") from None
        if done.returncode != 0:
            raise _GitFailed(done.stderr.decode(errors="replace").strip())
        return done.stdout


class _GitFailed(Exception):
    pass


def repository(sources: list[Path]) -> tuple[Repo, list[str]]:
    """The repository holding every source, and each source's path from its root ("." for the root)."""
    roots: dict[Path, list[Path]] = {}
    for src in sources:
        folder = (src if src.is_dir() else src.parent).resolve()
        try:
            top = Repo(folder).git("rev-parse", "--show-toplevel").decode().strip()
        except _GitFailed:
            raise PlanInputError(f"{src} is not inside a git repository; plan compares the working tree with a"
                                 " revision of the repository that holds the specs") from None
        roots.setdefault(Path(top).resolve(), []).append(src)
    if len(roots) > 1:
        first, second = list(roots)[:2]
        raise PlanInputError(f"{roots[second][0]} is outside the repository at {first} that holds"
                             f" {roots[first][0]}; plan one repository at a time")
    (root,) = roots
    return Repo(root), [_relative(src, root) for src in sources]


def _relative(src: Path, root: Path) -> str:
    rel = os.path.relpath(src.resolve(), root)
    if rel.startswith(".."):
        raise PlanInputError(f"{src} is outside the repository at {root}; name specs inside it")
    return Path(rel).as_posix()


def resolve(repo: Repo, ref: str) -> str:
    """The commit `ref` names; a name git does not know, or one a shallow clone lacks, is an error."""
    try:
        return repo.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").decode().strip()
    except _GitFailed:
        pass
    shallow = repo.git("rev-parse", "--is-shallow-repository").decode().strip() == "true"
    if shallow:
        raise PlanInputError(
            f"the base '{ref}' is not in this shallow clone of {repo.root}; fetch it (git fetch origin {ref},"
            " or actions/checkout with fetch-depth: 0) and plan again")
    raise PlanInputError(f"unknown base revision '{ref}' in {repo.root}; name a branch, tag or commit that git"
                         " knows (git log --oneline shows them; in CI fetch the base branch first)")


def project_candidates(rel_sources: list[str]) -> list[str]:
    """Every place a project file governing the sources can be: each source's folder and those
    above it, up to the repository's root (compiler.reading.sources.project_file_for's walk)."""
    out: set[str] = set()
    for rel in rel_sources:
        parts = [] if rel == "." else rel.split("/")
        for cut in range(len(parts), -1, -1):
            out.add("/".join([*parts[:cut], PROJECT_FILE]))
    return sorted(out)


def tree_files(repo: Repo, commit: str, paths: list[str]) -> set[str]:
    """The files of `commit` under `paths` (root-relative)."""
    listed = repo.git("ls-tree", "-r", "-z", "--name-only", commit, "--", *paths)
    return {name for name in listed.decode().split("\0") if name}


def changed_files(repo: Repo, commit: str, paths: list[str]) -> set[str]:
    """Files under `paths` that differ between `commit` and the working tree (tracked files;
    an untracked file is in the head only, which is what the plan calls a create)."""
    listed = repo.git("diff", "--name-only", "--no-renames", "-z", commit, "--", *paths)
    return {name for name in listed.decode().split("\0") if name}


def extract(repo: Repo, commit: str, files: list[str], dest: Path) -> None:
    """Write `files` as they are in `commit` under `dest`, at their root-relative paths."""
    if not files:
        return
    stream = repo.git("cat-file", "--batch", stdin="".join(f"{commit}:{name}\n" for name in files).encode())
    at = 0
    for name in files:
        header_end = stream.index(b"\n", at)
        _, kind, size = stream[at:header_end].decode().rsplit(" ", 2)
        body = stream[header_end + 1:header_end + 1 + int(size)]
        at = header_end + 1 + int(size) + 1
        if kind != "blob":
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)


def accept_trailers(repo: Repo, commit: str) -> list[str]:
    """The `Trainforge-Accept:` trailers of the commits after the base up to HEAD."""
    try:
        out = repo.git("log", f"--format=%(trailers:key={ACCEPT_TRAILER},valueonly,separator=%x00)",
                       f"{commit}..HEAD")
    except _GitFailed:  # no HEAD yet (a repository without commits has no base either)
        return []
    return [v.strip() for line in out.decode().splitlines() for v in line.split("\0") if v.strip()]
