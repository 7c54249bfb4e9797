"""The pruning world and its instruments: every target's controller beside both engines,
a recorder of pod creations, and a CPU load generator.

Where it sits: `test_prune_e2e.py` removes jobs from git and asserts that no pod is
created afterwards, for each target (kubeflow-v1 under train-controller and under the
upstream operator v1.9.4, trainer-v2 under Kubeflow Trainer v2.3 + JobSet), each engine
(Flux, Argo CD) and each job state (failed, running, finished). Why it is shaped so:
- One world, one project with an environment per target (`ours`, `upstream`, `v2`,
  each its own namespace, which exactly one controller watches), the same job files in
  each, so one base commit and one head commit per engine cover all the cases at once.
  Both engines share the namespaces (names differ: `<engine>-<state>-<round>`); the
  project creates no Namespace objects, the test does (two engines applying one
  Namespace would each see the other's as drift).
- A recorder is one watch on every object of a resource (pods, PyTorchJobs) from a
  listed resourceVersion, resumed from the last event it saw when the stream ends, so no
  creation between two streams is lost (a re-list would miss a pod created and deleted
  meanwhile). `caught_up()` creates a marker and waits for its ADDED event: watch events
  arrive in etcd order, so every creation before the marker has been seen. A creation is
  judged against that positive signal, never after a sleep.
- The load generator is busy-looping processes (two per core), started and stopped by
  their pids, so "a loaded machine" is the same load on any machine.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from e2e_kit import active

from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource
from testworld.argocd import ArgoCD
from testworld.controller_manager import TRAINER_CONTROLLERS, ControllerManager
from testworld.flux import Flux
from testworld.gitserver import GitPart
from testworld.kwok import Kwok, NodePool
from testworld.scheduler import Scheduler
from testworld.train_controller import TrainController
from testworld.trainer import Trainer
from testworld.upstream import Operator
from testworld.watching import RESOURCES, Missing, wait_for
from testworld.world import World

PODS = RESOURCES["Pod"]
TRAINJOBS = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
# environment -> (namespace, the resource its jobs are, what its controller is)
TARGETS = {
    "ours": ("prune-ours", PYTORCHJOBS, "train-controller"),
    "upstream": ("prune-upstream", PYTORCHJOBS, "the upstream operator v1.9.4"),
    "v2": ("prune-v2", TRAINJOBS, "Trainer v2.3 + JobSet"),
}
MARKERS = "prune-markers"
STATES = ("failed", "running", "finished")
RUN_SECONDS = "testworld.trainforge.dev/run-seconds"
EXIT_CODE = "testworld.trainforge.dev/exit-code"
# kubeflow-v1 only (an error under trainer-v2): a failed run ends the job at once
V1_FAIL_FAST = {"policy": {"restart": "Never", "backoffLimit": 0}}
TTL_SECONDS = 5

PROJECT = {
    "apiVersion": "trainforge.dev/v1alpha1", "kind": "Project", "metadata": {"name": "prune-e2e"},
    "defaults": {"labels": {"team": "e2e"}, "namespaces": {"create": False}},
    "environments": {
        "ours": {"namespace": "prune-ours", "controller": "train-controller"},
        "upstream": {"namespace": "prune-upstream", "controller": "training-operator"},
        "v2": {"namespace": "prune-v2", "target": "trainer-v2"},
    },
}


def make_world() -> World:
    return World([ControllerManager(controllers=TRAINER_CONTROLLERS), Scheduler(),
                  Kwok(nodes=(NodePool("cpu", 4, cpu="64", memory="512Gi"),), run_seconds=1.0),
                  GitPart(), Flux(), ArgoCD(), Trainer(), TrainController(TARGETS["ours"][0]),
                  Operator(TARGETS["upstream"][0])])


def create_namespaces(world: World) -> None:
    for ns in [*(t[0] for t in TARGETS.values()), MARKERS]:
        world.client.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def trainjob(name: str, state: str) -> dict[str, Any]:
    """A two-node PyTorch TrainJob that ends `state` (kwok reads the annotations)."""
    annotations = {EXIT_CODE: "1"} if state == "failed" else {RUN_SECONDS: "forever"} if state == "running" else {}
    spec: dict[str, Any] = {"framework": "pytorch", "image": "ghcr.io/acme/train:1.0",
                            "command": ["torchrun", "train.py"], "nodes": 2,
                            "resources": {"cpu": "1", "memory": "1Gi"},
                            "podTemplate": {"metadata": {"annotations": annotations}}}
    if state == "failed":
        spec["environments"] = {"ours": V1_FAIL_FAST, "upstream": V1_FAIL_FAST}
    if state == "ttl":  # finished, then deleted by its controller (kubeflow-v1 only)
        spec["environments"] = {env: {"policy": {"ttlAfterFinished": TTL_SECONDS}} for env in ("ours", "upstream")}
    return {"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob", "metadata": {"name": name}, "spec": spec}


def write_sources(folder: Path, names: dict[str, str]) -> None:
    """The project and one file per job (name -> state); files of other jobs are removed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trainforge.yaml").write_text(yaml.safe_dump(PROJECT, sort_keys=False))
    for old in folder.glob("*.yaml"):
        if old.stem not in names and old.name != "trainforge.yaml":
            old.unlink()
    for name, state in names.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(trainjob(name, state), sort_keys=False))


def reached(job: dict[str, Any], state: str, pods: list[dict[str, Any]]) -> bool:
    """The job is `state` as its controller reports it (running: every pod Running)."""
    conditions = active(job)
    if state == "failed":
        return "Failed" in conditions
    if state == "finished":
        return bool(conditions & {"Succeeded", "Complete"})
    return not conditions & {"Failed", "Succeeded", "Complete"} and len(pods) == 2 \
        and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def job_pods(world: World, env: str, name: str) -> list[dict[str, Any]]:
    label = "jobset.sigs.k8s.io/jobset-name" if env == "v2" else "training.kubeflow.org/job-name"
    pods = world.client.list(PODS, namespace=TARGETS[env][0], label_selector=f"{label}={name}")["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def wait_states(world: World, jobs: dict[str, str], timeout: float = 300) -> None:
    """Every job (name -> state) reached its state in every environment."""
    for env, (ns, res, _) in TARGETS.items():
        def check(objects: dict[tuple[str, str], dict[str, Any]], env: str = env, ns: str = ns) -> Any:
            bad = [f"{n}: {sorted(active(objects[(ns, n)])) if (ns, n) in objects else 'missing'}"
                   for n, state in jobs.items()
                   if (ns, n) not in objects or not reached(objects[(ns, n)], state, job_pods(world, env, n))]
            return Missing(", ".join(bad)) if bad else True
        wait_for(world.client, res, check, namespace=ns, timeout=timeout, what=f"{env} jobs in their states")


def wait_gone(world: World, names: set[str], timeout: float = 240) -> None:
    """Positive signals that a prune is over: no job of `names` in any environment, and
    none of their pods (the garbage collector followed the ownerReferences)."""
    for env, (ns, res, _) in TARGETS.items():
        def jobs_gone(objects: dict[tuple[str, str], dict[str, Any]], ns: str = ns) -> Any:
            left = sorted(n for (n_s, n) in objects if n_s == ns and n in names)
            return Missing(f"left in {ns}: {left}") if left else True
        wait_for(world.client, res, jobs_gone, namespace=ns, timeout=timeout, what=f"{env} jobs pruned")

        def pods_gone(objects: dict[tuple[str, str], dict[str, Any]], env: str = env) -> Any:
            left = sorted(k[1] for k, p in objects.items() if owner_job(env, p) in names)
            return Missing(f"pods left: {left}") if left else True
        wait_for(world.client, PODS, pods_gone, namespace=ns, timeout=timeout, what=f"{env} pods collected")


def owner_job(env: str, pod: dict[str, Any]) -> str:
    labels = pod["metadata"].get("labels") or {}
    return labels.get("jobset.sigs.k8s.io/jobset-name" if env == "v2" else "training.kubeflow.org/job-name", "")


class Recorder:
    """Every ADDED and DELETED event of `res` after it started: one watch, resumed where it
    stopped. `marker(name)` is an object of `res` to create in the markers namespace."""

    def __init__(self, world: World, res: Resource, marker: Callable[[str], dict[str, Any]]) -> None:
        self.world, self.res, self.marker = world, res, marker
        self.client = Client.connect(str(world.kubeconfig), pool_size=2)
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.error = ""
        self.lock = threading.Condition()
        self.stopped = threading.Event()
        self.markers = itertools.count()
        self.version = self.client.list(res)["metadata"]["resourceVersion"]
        self.thread = threading.Thread(target=self._run, name=f"{res.kind}-recorder", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                for event in self.client.watch(self.res, resource_version=self.version, timeout_seconds=30):
                    kind, obj = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":  # "too old resource version": events may be lost
                        with self.lock:
                            self.error = f"the {self.res.kind} watch broke: {obj.get('message')}"
                            self.lock.notify_all()
                        return
                    self.version = obj["metadata"]["resourceVersion"]
                    if kind in ("ADDED", "DELETED"):
                        with self.lock:
                            self.events.append((kind, obj))
                            self.lock.notify_all()
                    if self.stopped.is_set():
                        return
            except errors.Retryable:
                continue  # resume from the last event seen

    def wait(self, done: Callable[[list[tuple[str, dict[str, Any]]]], bool], what: str, timeout: float = 180) -> None:
        """Until `done(events)` holds (checked on every event)."""
        with self.lock:
            held = self.lock.wait_for(lambda: self.error or done(self.events), timeout=timeout)
            assert held and not self.error, self.error or f"{what}: not seen in {timeout:.0f}s"

    def caught_up(self, timeout: float = 120) -> None:
        """Create a marker and wait until the watch has delivered it, and so every event before it."""
        name = f"marker-{next(self.markers)}"
        self.world.client.create(self.res, MARKERS, {**self.marker(name), "metadata": {"name": name}})
        self.wait(lambda events: any(t == "ADDED" and key(o) == (MARKERS, name) for t, o in events),
                  f"the {self.res.kind} marker {name}", timeout)

    def mark(self) -> int:
        with self.lock:
            return len(self.events)

    def created(self, start: int = 0, *, namespace: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        """The objects created after the first `start` events (markers aside), maybe of one namespace/name."""
        with self.lock:
            return [o for t, o in self.events[start:] if t == "ADDED" and key(o)[0] != MARKERS
                    and namespace in (None, key(o)[0]) and name in (None, key(o)[1])]

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=40)
        self.client.close()


def key(obj: dict[str, Any]) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def by_job(pods: list[dict[str, Any]]) -> dict[str, int]:
    """namespace/job -> how many of `pods` it owns (by the controllers' job-name labels)."""
    counts: dict[str, int] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        job = labels.get("training.kubeflow.org/job-name") or labels.get("jobset.sigs.k8s.io/jobset-name") or "?"
        name = f"{pod['metadata']['namespace']}/{job}"
        counts[name] = counts.get(name, 0) + 1
    return counts


def pod_marker(name: str) -> dict[str, Any]:
    """A pod nothing can schedule: it stays Pending and nothing acts on it."""
    return {"apiVersion": "v1", "kind": "Pod",
            "spec": {"nodeSelector": {"testworld.trainforge.dev/pool": "none"},
                     "containers": [{"name": "marker", "image": "example.com/marker:1"}]}}


def pytorchjob_marker(name: str) -> dict[str, Any]:
    """A PyTorchJob in a namespace no controller watches."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {"pytorchReplicaSpecs": {"Master": {
        "replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch", "image": "example.com/marker:1"}]}}}}}}


@contextmanager
def cpu_load(workers: int = 2 * (os.cpu_count() or 2)) -> Iterator[list[int]]:
    """Busy-looping processes for the duration; their pids."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(workers)]
    try:
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
