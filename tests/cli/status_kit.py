"""Builders for the `status` and `logs` tests: a project of specs in a git repository of
the test's own, its jobs applied as a GitOps engine applies them (server-side, one field
manager, every object marked with the spec it came from), train-controller reconciling
them on the pod world, and the CLI run in-process or as a process.

Jobs are written as specs (what a user commits), not as kubeflow.org objects: the
compiled job is what `status` compares the cluster with. What kwok does with a pod is
chosen by `testworld.stages` annotations put on the pod template (`pod=`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from compiler_builders import run_cli

from schemas.marks import SOURCE
from testworld.paths import REPO_ROOT
from testworld.train_controller import TrainController
from testworld.world import World

ENV = "test"
ENGINE = "argocd-controller"  # the field manager the "engine" applies with


def project(root: Path, namespace: str, *, target: str = "kubeflow-v1", controller: str = "train-controller") -> Path:
    """A git repository holding `jobs/trainforge.yaml` for `namespace` (no Namespace objects:
    the test made it); GPU types a100 (in the pod world) and b200 (no such node)."""
    jobs = root / "jobs"
    jobs.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (jobs / "trainforge.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: trainforge.dev/v1alpha1
        kind: Project
        defaults:
          namespace: {namespace}
          namespaces: {{create: false}}
          target: {target}
        environments:
          {ENV}:
            {f"controller: {controller}" if target == "kubeflow-v1" else ""}
            gpuTypes:
              a100: {{nodeSelector: {{nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}}}}
              b200: {{nodeSelector: {{nvidia.com/gpu.product: NVIDIA-B200}}}}
        """))
    return jobs


def spec(name: str, *, nodes: int = 1, image: str = "example.com/train:1", pod: dict[str, str] | None = None,
         gpu: int = 0, gpu_type: str | None = None, restart: str | None = "OnFailure",
         extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pytorch TrainJob spec; `pod`: annotations on every pod (testworld.stages keys);
    `restart=None` states no policy (Trainer v2 cannot express one)."""
    body: dict[str, Any] = {"framework": "pytorch", "image": image, "command": ["python", "train.py"], "nodes": nodes}
    if restart:
        body["policy"] = {"restart": restart, "backoffLimit": 0}
    if gpu:
        body["resources"] = {"gpu": gpu, **({"gpuType": gpu_type} if gpu_type else {})}
    if pod:
        body["podTemplate"] = {"metadata": {"annotations": pod}}
    body.update(extra or {})
    return {"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob", "metadata": {"name": name}, "spec": body}


def write(jobs: Path, filename: str, *specs: dict[str, Any]) -> Path:
    path = jobs / filename
    path.write_text(yaml.safe_dump_all(list(specs), sort_keys=False))
    return path


def compiled(*sources: Path) -> list[dict[str, Any]]:
    """Every object `build` writes for the sources, each marked with its spec (as build marks them)."""
    from compiler.pipeline import compile_sources

    result = compile_sources(list(sources), env=ENV)
    assert result.ok, [str(d) for d in result.diagnostics]
    out = []
    for bundle in result.bundles[ENV]:
        for obj in bundle.objects():
            obj["metadata"].setdefault("annotations", {})[SOURCE] = bundle.target.doc.origin
            out.append(obj)
    return out


def apply(world: World, *sources: Path, manager: str = ENGINE) -> None:
    """Apply what the sources compile to, server-side, as the engine `manager` would."""
    objects = {"apiVersion": "v1", "kind": "List", "items": compiled(*sources)}
    world.kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={manager}", "-f", "-",
                  input=json.dumps(objects))


@contextmanager
def train_controller(world: World, namespace: str, *args: str) -> Iterator[TrainController]:
    """train-controller as a process for `namespace`, with `args` besides (e.g. its flags)."""
    part = TrainController(namespace, workers=2, name=f"train-controller-{uuid.uuid4().hex[:6]}", extra_args=args)
    part.start(world)
    try:
        yield part
    finally:
        part.stop()


@dataclass
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)


def cli(world: World, *args: str | Path) -> Outcome:
    """`train-compile ARGS --kubeconfig <the world's>` in-process."""
    run = run_cli(*args, "--kubeconfig", str(world.kubeconfig))
    return Outcome(run.exit_code, run.stdout, run.stderr)


def process(world: World, *args: str | Path) -> subprocess.Popen[str]:
    """`train-compile ARGS` as its own process (a follow, read while it runs)."""
    return subprocess.Popen([sys.executable, "-m", "compiler.cli.main", *map(str, args), "--kubeconfig",
                             str(world.kubeconfig)], cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def job_of(outcome: Outcome, name: str) -> dict[str, Any]:
    """The named job's entry of `status --format json`."""
    return next(j for j in outcome.json["jobs"] if j["name"] == name)


def fields_of(outcome: Outcome, name: str) -> list[tuple[str, Any, Any, Any, str]]:
    """A job's drift as the spec's fields: (field, git, the job object, the run, why)."""
    return [(f["field"], f["git"], f["job"], f["run"], f["why"]) for f in job_of(outcome, name)["fields"]]


def spec_line(path: Path, *loc: str, name: str | None = None) -> int:
    """The line of `spec.<loc>` in the spec file `path` as the user wrote it (the document of job
    `name` in a file of several)."""
    from schemas.loader import load_file

    docs, _ = load_file(path)
    doc = next(d for d in docs if name is None or d.data["metadata"]["name"] == name)
    return doc.position(("spec", *loc))[0]
