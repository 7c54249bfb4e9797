"""The world, the repository and the readers of the mpi-operator end-to-end scenarios.

One world: kube-controller-manager with the job controller (the mpi-operator's launcher is
a batch/v1 Job) and the TTL-after-finished controller, the scheduler, kwok on CPU nodes,
the git server, Flux and Argo CD, the real mpi-operator v0.8.0 (which makes
`mpijobs.kubeflow.org` its v2beta1 CRD) and then the real Kueue v0.19.2, confined to the
queued environment's namespaces (tests/testworld/engines/test_kueue_versions_world.py queues
compiled MPIJobs under v0.17.0 and v0.19.2 in the worlds it runs anyway). The repository holds one project per
engine (`<engine>/mpi/jobs`, its trainforge.yaml targeting mpi-operator), one environment
per question, each its own Kustomization / Application so each reports its own health:

    ok      a job that succeeds
    bad     a job whose pods fail, under restart Never and backoffLimit 1
    runs    the plan's cases: a suspended job resumed, a running one reshaped, a running
            one suspended, a job with a TTL
    queued  Kueue's: a low-priority job holding the quota, then a high-priority one

kwok runs every container of a pod for `run-seconds` and exits with `exit-code` (the pod
template's annotations, so launcher and workers alike): a job "runs for ever" when its
pods do, and succeeds once its launcher exits 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import plan_engines_kit as plan_kit
from plan_engines_kit import Found, active, read, write

from foundation.cluster import errors
from foundation.cluster.kube import Resource
from foundation.frameworks import mpi_operator as facts
from testworld import gitops
from testworld.argocd import ArgoCD
from testworld.controller_manager import DEFAULT_CONTROLLERS, JOB_CONTROLLER, ControllerManager
from testworld.flux import Flux
from testworld.gitserver import GitPart
from testworld.kueue import Kueue
from testworld.kwok import Kwok, NodePool
from testworld.mpi_operator import MPIOperator
from testworld.scheduler import Scheduler
from testworld.stages import EXIT_CODE, RUN_SECONDS
from testworld.watching import RESOURCES, Missing, wait_for
from testworld.world import World

API = "trainforge.dev/v1alpha1"
MPIJOBS = Resource(facts.GROUP, facts.VERSION, "mpijobs", facts.KIND)
BATCH_JOBS = Resource("batch", "v1", "jobs", "Job")
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
KUEUE_API = "kueue.x-k8s.io/v1beta2"
TTL_CONTROLLER = "ttl-after-finished-controller"
ENVS = ("ok", "bad", "runs", "queued")
PREFIX = "mpi"
QUEUE = "cpu-queue"
IMAGE = "ghcr.io/acme/mpi-bench:1"
JOB_NAME = "training.kubeflow.org/job-name"
ROLE = "training.kubeflow.org/job-role"


def make_world(kueue_version: str) -> World:
    """The scenarios' world; the mpi-operator before Kueue, which finds v2beta1 served when it starts."""
    queued = [namespace(e, "queued") for e in gitops.ENGINES]
    return World([ControllerManager(controllers=(*DEFAULT_CONTROLLERS, JOB_CONTROLLER, TTL_CONTROLLER)), Scheduler(),
                  Kwok(nodes=(NodePool("cpu", 4, cpu="32", memory="128Gi"),), run_seconds=2.0),
                  GitPart(), Flux(), ArgoCD(), MPIOperator(), Kueue(queued, ("kubeflow.org/mpijob",), version=kueue_version)])


def namespace(engine: str, env: str) -> str:
    return f"{engine}-{env}"


def mpi_spec(name: str, env: str, *, nodes: int = 2, seconds: str = "forever", exit_code: str = "0",
             **fields: Any) -> dict[str, Any]:
    """An MPI TrainJob compiled into environment `env` only; its pods run `seconds` and exit `exit_code`."""
    annotations = {RUN_SECONDS: seconds, EXIT_CODE: exit_code}
    body: dict[str, Any] = {
        "framework": "mpi", "image": IMAGE, "command": ["mpirun", "-n", str(nodes), "/bench/allreduce"],
        "nodes": nodes, "resources": {"cpu": "1", "memory": "1Gi"},
        "podTemplate": {"metadata": {"annotations": annotations}},
        "environments": {e: None for e in ENVS if e != env}, **fields}
    return {"apiVersion": API, "kind": "TrainJob", "metadata": {"name": name}, "spec": body}


def queue_objects(engine: str, cpu: str) -> list[dict[str, Any]]:
    """The platform team's: a flavor, a ClusterQueue of `cpu` that preempts lower priorities,
    the LocalQueue the environment names, two WorkloadPriorityClasses."""
    ns = namespace(engine, "queued")
    quota = {"cpu": cpu, "memory": "64Gi"}
    return [
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "cpu"}},
        {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": f"{ns}-cq"}, "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [{"coveredResources": list(quota), "flavors": [
                {"name": "cpu", "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()]}]}]}},
        {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": QUEUE, "namespace": ns},
         "spec": {"clusterQueue": f"{ns}-cq"}},
        {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 100},
        {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000},
    ]


@dataclass
class Repo:
    """The loop's work tree: one project per engine under `<engine>/mpi/jobs`."""

    loop: gitops.Loop
    engines: tuple[str, ...]
    shas: list[str] = field(default_factory=list)

    def jobs(self, engine: str) -> Path:
        return self.loop.repo.path / engine / PREFIX / "jobs"

    def setup(self) -> None:
        for engine in self.engines:
            envs: dict[str, Any] = {e: {"namespace": namespace(engine, e)} for e in ENVS}
            envs["queued"]["scheduling"] = {"queue": QUEUE, "kueuePriority": True}
            write(self.jobs(engine) / "trainforge.yaml", {"apiVersion": API, "kind": "Project",
                                                          "defaults": {"target": "mpi-operator"}, "environments": envs})

    def write(self, name: str, doc: dict[str, Any]) -> None:
        for engine in self.engines:
            write(self.jobs(engine) / f"{name}.yaml", doc)

    def edit(self, name: str, change: Callable[[dict[str, Any]], None]) -> None:
        for engine in self.engines:
            doc = read(self.jobs(engine) / f"{name}.yaml")
            change(doc)
            write(self.jobs(engine) / f"{name}.yaml", doc)

    def publish_and_commit(self, message: str) -> str:
        for engine in self.engines:
            self.loop.publish(engine, self.jobs(engine), prefix=PREFIX, folder=f"{PREFIX}/", timeout="10s")
        sha = self.loop.commit(message)
        self.shas.append(sha)
        return sha

    def install(self) -> None:
        for engine in self.engines:
            self.loop.install(engine, PREFIX)
        self.loop.poke()

    def plan(self, engine: str, *args: str) -> dict[str, Any]:
        """`train-compile plan` of the engine's project against the first commit, as JSON."""
        exe = Path(sys.executable).with_name("train-compile")
        done = subprocess.run([str(exe), "plan", str(self.jobs(engine)), "--base", self.shas[0], "--format", "json",
                               *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


# ---------------------------------------------------------------------------------------- reading the world

def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return gitops.condition(obj, ctype)


def get(world: World, res: Resource, ns: str, name: str) -> Optional[dict[str, Any]]:
    try:
        return world.client.get(res, ns, name)
    except errors.NotFound:
        return None


def wait_job(world: World, ns: str, name: str, state: str, timeout: float = 240) -> dict[str, Any]:
    """The MPIJob once its condition `state` is True."""
    return plan_kit.wait_job(world, MPIJOBS, ns, name, lambda j: state in active(j), state, timeout)


def pods_of(objects: dict[tuple[str, str], dict[str, Any]], ns: str, job: str, role: str) -> list[dict[str, Any]]:
    return sorted((p for (n, _), p in objects.items() if n == ns and not p["metadata"].get("deletionTimestamp")
                   and (p["metadata"].get("labels") or {}).get(JOB_NAME) == job
                   and (p["metadata"].get("labels") or {}).get(ROLE) == role), key=lambda p: p["metadata"]["name"])


def wait_pods(world: World, ns: str, job: str, role: str, want: Callable[[list[dict[str, Any]]], Any], what: str,
              timeout: float = 180) -> list[dict[str, Any]]:
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        mine = pods_of(objects, ns, job, role)
        return Found(mine) if want(mine) else Missing(
            f"{role} pods of {ns}/{job}: {[(p['metadata']['name'], (p.get('status') or {}).get('phase')) for p in mine]}")
    return wait_for(world.client, RESOURCES["Pod"], check, namespace=ns, timeout=timeout,
                    what=f"{role} pods of {ns}/{job} {what}")


def running(pods: list[dict[str, Any]], count: int) -> bool:
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def image(pod: dict[str, Any]) -> str:
    return pod["spec"]["containers"][0]["image"]


def workload_of(world: World, ns: str, job: str) -> Optional[dict[str, Any]]:
    for wl in world.client.list(WORKLOADS, namespace=ns)["items"]:
        if any(o.get("name") == job for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def wait_workload(world: World, ns: str, job: str, want: Callable[[dict[str, Any]], bool], what: str,
                  timeout: float = 180) -> dict[str, Any]:
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        mine = [w for w in objects.values() if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])]
        hit = next((w for w in mine if want(w)), None)
        return hit if hit is not None else Missing(f"workloads of {job}: {[sorted(active(w)) for w in mine]}")
    return wait_for(world.client, WORKLOADS, check, namespace=ns, timeout=timeout, what=f"{ns}/{job}'s Workload {what}")


def app_resource(app: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    return next((r for r in (app.get("status") or {}).get("resources") or []
                 if r.get("kind") == kind and r.get("name") == name), {})


def train_compile(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("train-compile")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, check=False)
