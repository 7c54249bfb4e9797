"""A git repository of specs for `train-compile plan` tests: write, commit, edit, plan.

A test states the base (files, then `commit()`), edits the working tree as a user would
(`write`, `edit`, `remove`, `move`), and reads the plan through the real CLI: `plan(...)`
returns the JSON document (the contract's keys), `run(...)` the raw run for the other
formats and the exit codes. Specs are written as JSON (which is YAML) by the compiler
tests' `write_docs`, or as text where a test reads positions.

(The module has a distinctive name because pytest puts every test folder on sys.path.)
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from compiler_builders import Run, job_doc, project_doc, run_cli, write_docs

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass
class Repo:
    root: Path

    def git(self, *args: str) -> str:
        import os

        done = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True, check=True,
                              env={**os.environ, **GIT_ENV})
        return done.stdout.strip()

    def write(self, rel: str, *docs: dict[str, Any]) -> Path:
        return write_docs(self.root / rel, *docs)

    def text(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def edit(self, rel: str, change: Callable[[list[dict[str, Any]]], None]) -> None:
        """Change the documents of a file written by `write` (as data), and write them back."""
        path = self.root / rel
        docs = [json.loads(chunk) for chunk in path.read_text().split("---\n") if chunk.strip()]
        change(docs)
        write_docs(path, *docs)

    def remove(self, rel: str) -> None:
        (self.root / rel).unlink()

    def move(self, rel: str, to: str) -> None:
        (self.root / to).parent.mkdir(parents=True, exist_ok=True)
        (self.root / rel).rename(self.root / to)

    def commit(self, message: str = "base") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def run(self, *args: str | Path, src: str = "jobs", base: str = "HEAD") -> Run:
        return run_cli("plan", self.root / src, "--base", base, *args)

    def plan(self, *args: str | Path, src: str = "jobs", base: str = "HEAD") -> dict[str, Any]:
        run = self.run("--format", "json", *args, src=src, base=base)
        assert run.exit_code == 0, run.stderr
        return json.loads(run.stdout)


def new_repo(tmp_path: Path, *, project: dict[str, Any] | None = None) -> Repo:
    repo = Repo(tmp_path / "repo")
    repo.root.mkdir(parents=True)
    repo.git("init", "-q", "-b", "main")
    if project is not None:
        repo.write("jobs/trainforge.yaml", project)
    return repo


def env_of(plan: dict[str, Any], name: str = "default") -> dict[str, Any]:
    return next(e for e in plan["environments"] if e["name"] == name)


def job_of(plan: dict[str, Any], name: str, env: str = "default") -> dict[str, Any]:
    (job,) = [j for j in env_of(plan, env)["jobs"] if j["name"] == name]
    return job


def running_job(name: str = "bert", **spec: Any) -> dict[str, Any]:
    """A PyTorchJob spec on 2 nodes of 8 GPUs, namespace nlp (what most cases edit)."""
    fields: dict[str, Any] = {"nodes": 2, "resources": {"gpu": 8}, **spec}
    return job_doc("pytorch", name=name, namespace="nlp", **fields)


def project(**environments: dict[str, Any]) -> dict[str, Any]:
    return project_doc(environments=environments or {"default": {}})
