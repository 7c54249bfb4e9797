"""The world and the repository of the plan's engine tests: what the plan says, what the engines do.

One world runs every controller a plan names, each on namespaces of its own: the upstream
operator v1.9.4 and train-controller (Flux), a second train-controller (Argo CD), and the
real Kubeflow Trainer v2.3 + JobSet for the trainer-v2 projects, beside real Flux and Argo
CD, kube-scheduler, the garbage collector (and the job controller JobSet needs) and kwok.

The repository holds projects, each a folder of specs with its `trainforge.yaml`, compiled
into its tree and synced by one engine; a project's environments are its controllers, so
one spec is one case under each of them at once:

    flux/v1    environments up (training-operator, namespace pu) and tc (train-controller, pt)
    flux/v1s   the same two: suspend added and removed (a Kustomization of their own, so a
               refused suspend could never hide the other cases; the engines ignore suspend on
               queued jobs only, issue 40 item 5)
    flux/v2    trainer-v2 (namespace pv): what the Trainer accepts
    flux/v2x   trainer-v2 (namespace px): what it refuses, beside a job it would accept
    argocd/a1  tc (train-controller, namespace at)
    argocd/a2x trainer-v2 (namespace ax): refused, beside a job it would accept

A case is a spec in the base commit and an edit in the head commit. Pods run for ever
(`testworld.trainforge.dev/run-seconds: forever`) unless a case wants its job finished.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from foundation.cluster.kube import Resource
from testworld import gitops
from testworld.argocd import ArgoCD
from testworld.controller_manager import TRAINER_CONTROLLERS, ControllerManager
from testworld.flux import Flux
from testworld.gitserver import GitPart
from testworld.kwok import Kwok, NodePool
from testworld.scheduler import Scheduler
from testworld.stages import RUN_SECONDS
from testworld.train_controller import TrainController
from testworld.trainer import Trainer
from testworld.upstream import Operator
from testworld.watching import RESOURCES, Missing, wait_for
from testworld.world import World

API = "trainforge.dev/v1alpha1"
EVENTS = Resource("", "v1", "events", "Event")
TRAINJOBS = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
FOREVER = {"metadata": {"annotations": {RUN_SECONDS: "forever"}}}


@dataclass(frozen=True)
class Project:
    engine: str
    folder: str  # under <engine>/
    prefix: str  # of its Kustomizations / Applications: <prefix>-<env>
    environments: dict[str, dict[str, Any]]  # env -> its trainforge.yaml entry (namespace, controller, target)

    def namespace(self, env: str) -> str:
        return self.environments[env]["namespace"]

    def object_name(self, env: str) -> str:
        return f"{self.prefix}-{env}"


PROJECTS = {
    "v1": Project("flux", "v1", "v1", {"up": {"namespace": "pu", "controller": "training-operator"},
                                      "tc": {"namespace": "pt", "controller": "train-controller"}}),
    "v1s": Project("flux", "v1s", "v1s", {"up": {"namespace": "pu", "controller": "training-operator"},
                                         "tc": {"namespace": "pt", "controller": "train-controller"}}),
    "v2": Project("flux", "v2", "v2", {"v2": {"namespace": "pv", "target": "trainer-v2"}}),
    "v2x": Project("flux", "v2x", "v2x", {"v2x": {"namespace": "px", "target": "trainer-v2"}}),
    "a1": Project("argocd", "a1", "a1", {"tc": {"namespace": "at", "controller": "train-controller"}}),
    "a2x": Project("argocd", "a2x", "a2x", {"v2x": {"namespace": "ax", "target": "trainer-v2"}}),
}


def make_world() -> World:
    upstream = Operator("pu")
    return World([ControllerManager(controllers=TRAINER_CONTROLLERS), Scheduler(),
                  Kwok(nodes=(NodePool("cpu", 4, cpu="64", memory="512Gi"),), run_seconds=2.0),
                  GitPart(), Flux(), ArgoCD(), Trainer(), upstream,
                  TrainController("pt", workers=2), TrainController("at", workers=2, name="train-controller-argocd")])


def spec(name: str, *, framework: str = "pytorch", nodes: int = 2, forever: bool = True,
         **fields: Any) -> dict[str, Any]:
    """A TrainJob spec on `nodes` one-CPU pods that run for ever (or finish, `forever=False`)."""
    body: dict[str, Any] = {"framework": framework, "image": "ghcr.io/acme/train:1", "command": ["python", "train.py"],
                            "nodes": nodes, "resources": {"cpu": "1", "memory": "1Gi"}, **fields}
    if forever:
        body["podTemplate"] = json.loads(json.dumps(FOREVER))
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": name}, "spec": body}


def write(path: Path, doc: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


@dataclass
class Repo:
    """The loop's git work tree and the projects in it."""

    loop: gitops.Loop
    projects: dict[str, Project] = field(default_factory=lambda: dict(PROJECTS))
    shas: list[str] = field(default_factory=list)

    def jobs(self, key: str) -> Path:
        project = self.projects[key]
        return self.loop.repo.path / project.engine / project.folder / "jobs"

    def setup(self, key: str) -> None:
        project = self.projects[key]
        write(self.jobs(key) / "trainforge.yaml",
              {"apiVersion": API, "kind": "Project", "environments": project.environments})

    def publish(self) -> None:
        for key, project in self.projects.items():
            self.loop.publish(project.engine, self.jobs(key), prefix=project.prefix, folder=f"{project.folder}/",
                              timeout="20s")

    def install(self) -> None:
        for project in self.projects.values():
            self.loop.install(project.engine, project.folder)

    def commit(self, message: str) -> str:
        sha = self.loop.commit(message)
        self.shas.append(sha)
        return sha

    def sync_base(self, cases: dict[str, tuple[str, dict[str, Any], Any]], message: str) -> None:
        """Every project set up, each case's spec written into its project, the base committed
        and the engines' objects installed (and told to look now)."""
        for key in self.projects:
            self.setup(key)
        for case, (project, doc, _) in cases.items():
            write(self.jobs(project) / f"{case}.yaml", doc)
        self.publish()
        self.commit(message)
        self.install()
        self.loop.poke()

    def plan(self, key: str, *args: str) -> dict[str, Any]:
        """`train-compile plan` of a project's working tree against the base commit, as JSON."""
        exe = Path(sys.executable).with_name("train-compile")
        done = subprocess.run([str(exe), "plan", str(self.jobs(key)), "--base", self.shas[0], "--format", "json", *args],
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def planned(plan: dict[str, Any], env: str, name: str) -> dict[str, Any]:
    (job,) = [j for e in plan["environments"] if e["name"] == env for j in e["jobs"] if j["name"] == name]
    return job


# ---------------------------------------------------------------------------------------- reading the world

def active(obj: dict[str, Any]) -> set[str]:
    return {c["type"] for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}


def job_resource(kind: str) -> Resource:
    from controller.jobs.kinds import KINDS
    from controller.jobs.kinds import job_resource as resource

    return TRAINJOBS if kind == "TrainJob" else resource(KINDS[kind])


def get_job(world: World, kind: str, namespace: str, name: str) -> Optional[dict[str, Any]]:
    from foundation.cluster import errors

    try:
        return world.client.get(job_resource(kind), namespace, name)
    except errors.NotFound:
        return None


def pods(world: World, namespace: str, job: str) -> list[dict[str, Any]]:
    """The job's pods (a kubeflow.org job's by its label, a TrainJob's by its JobSet's), not deleted."""
    items = world.client.list(RESOURCES["Pod"], namespace=namespace)["items"]
    labels = ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name")
    return [p for p in items if any((p["metadata"].get("labels") or {}).get(k) == job for k in labels)
            and not p["metadata"].get("deletionTimestamp")]


def env_value(pod: dict[str, Any], name: str) -> Optional[str]:
    container = pod["spec"]["containers"][0]
    values = [e.get("value") for e in container.get("env") or [] if e["name"] == name]
    return values[-1] if values else None  # the operator's entry comes last and wins


def events(world: World, namespace: str, name: str) -> list[dict[str, Any]]:
    items = world.client.list(EVENTS, namespace=namespace)["items"]
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


def wait_job(world: World, kind: str | Resource, namespace: str, name: str, want: Callable[[dict[str, Any]], Any],
             what: str, timeout: float = 240) -> dict[str, Any]:
    """The job once `want(job)`: `kind` a kind the controllers run, or any resource (an MPIJob of v2beta1)."""
    res = kind if isinstance(kind, Resource) else job_resource(kind)

    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        obj = objects.get((namespace, name))
        if obj is None:
            return Missing(f"no {res.kind} {namespace}/{name}")
        return obj if want(obj) else Missing(f"{namespace}/{name}: {sorted(active(obj))}")
    return wait_for(world.client, res, check, namespace=namespace, timeout=timeout,
                    what=f"{res.kind} {namespace}/{name} {what}")


def wait_gone(world: World, kind: str, namespace: str, name: str, *, uid: Optional[str] = None,
              timeout: float = 180) -> None:
    """The job (the one with `uid`, if given) is gone, and so are its pods."""
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        obj = objects.get((namespace, name))
        if obj is not None and (uid is None or obj["metadata"]["uid"] == uid):
            return Missing(f"{namespace}/{name} still there")
        return True
    wait_for(world.client, job_resource(kind), check, namespace=namespace, timeout=timeout,
             what=f"{kind} {namespace}/{name} deleted")
    wait_pods(world, namespace, name, lambda ps: not ps, "gone", timeout=timeout)


class Found(list):
    """The pods a wait found: true even when it found none (a wait for no pods ends with none)."""

    def __bool__(self) -> bool:
        return True


def wait_pods(world: World, namespace: str, job: str, want: Callable[[list[dict[str, Any]]], Any], what: str,
              timeout: float = 180) -> list[dict[str, Any]]:
    labels = ("training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name")

    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        mine = [p for (ns, _), p in objects.items() if ns == namespace and not p["metadata"].get("deletionTimestamp")
                and any((p["metadata"].get("labels") or {}).get(k) == job for k in labels)]
        got = want(mine)
        return Found(mine) if got else Missing(f"pods of {namespace}/{job}: {sorted(p['metadata']['name'] for p in mine)}")
    return wait_for(world.client, RESOURCES["Pod"], check, namespace=namespace, timeout=timeout,
                    what=f"pods of {namespace}/{job} {what}")


def running(pods_: list[dict[str, Any]], count: int) -> bool:
    return len(pods_) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods_)
