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
repository, a revision git does not know, a shallow or single-branch clone that lacks it),
with the contract's exit code: 2. A base the clone lacks comes with the command that fetches
it, as git takes it: a remote-tracking name (`origin/main`, what CI passes) is fetched into
itself (`git fetch origin main:refs/remotes/origin/main`; `git fetch origin origin/main`
names no branch of the remote), a `HEAD~N` of a shallow clone by deepening it.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

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
    return Repo(root), [relative(src, root) for src in sources]


def relative(src: Path, root: Path) -> str:
    rel = os.path.relpath(src.resolve(), root)
    if rel.startswith(".."):
        raise PlanInputError(f"{src} is outside the repository at {root}; name specs inside it")
    return Path(rel).as_posix()


def resolve(repo: Repo, ref: str) -> str:
    """The commit `ref` names; a name git does not know, or one the clone lacks, is an error
    that says how to fetch it."""
    try:
        return repo.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}").decode().strip()
    except _GitFailed:
        pass
    shallow = repo.git("rev-parse", "--is-shallow-repository").decode().strip() == "true"
    fetch = fetch_command(repo, ref, shallow=shallow)
    if fetch is not None:
        raise PlanInputError(
            f"the base '{ref}' is not in this {'shallow ' if shallow else ''}clone of {repo.root}; fetch it ({fetch},"
            " or actions/checkout with fetch-depth: 0) and plan again")
    raise PlanInputError(f"unknown base revision '{ref}' in {repo.root}; name a branch, tag or commit that git"
                         " knows (git log --oneline shows them; in CI fetch the base branch first)")


def _remotes(repo: Repo) -> list[str]:
    return repo.git("remote").decode().split()


def fetch_command(repo: Repo, ref: str, *, shallow: bool) -> Optional[str]:
    """The git command that brings `ref` into this clone, or None when nothing points to a
    missing fetch (not shallow, and not a remote's branch)."""
    remotes = _remotes(repo)
    name = ref.removeprefix("refs/remotes/")
    remote, _, branch = name.partition("/")
    if branch and remote in remotes:  # a remote-tracking name, as CI passes the base: fetch it into itself
        return f"git fetch {remote} {branch}:refs/remotes/{remote}/{branch}"
    if not shallow:
        return None
    steps_back = re.fullmatch(r"HEAD(?:~(\d*)|(\^+))", ref)
    if steps_back:
        steps = int(steps_back[1] or 1) if steps_back[2] is None else len(steps_back[2])
        return f"git fetch --deepen={steps}"
    origin = "origin" if "origin" in remotes else (remotes[0] if remotes else "origin")
    if re.fullmatch(r"[0-9a-f]{7,40}", ref):
        return f"git fetch {origin} {ref}"
    return f"git fetch {origin} {ref}:refs/remotes/{origin}/{ref}, then plan with --base {origin}/{ref}"


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


@dataclass(frozen=True)
class Trailer:
    """A `Trainforge-Accept:` trailer and the commit that carries it."""

    commit: str
    subject: str
    value: str


def accept_trailers(repo: Repo, commit: str) -> list[Trailer]:
    """The `Trainforge-Accept:` trailers of the commits after the base up to HEAD, oldest first."""
    try:
        out = repo.git("log", "--reverse", "-z",
                       f"--format=%H%x01%s%x01%(trailers:key={ACCEPT_TRAILER},valueonly,separator=%x02)",
                       f"{commit}..HEAD")
    except _GitFailed:  # no HEAD yet (a repository without commits has no base either)
        return []
    found = []
    for record in out.decode(errors="replace").split("\0"):
        if record.count("\x01") < 2:
            continue
        sha, subject, values = record.strip("\n").split("\x01", 2)
        found += [Trailer(sha, subject, v.strip()) for v in values.split("\x02") if v.strip()]
    return found
