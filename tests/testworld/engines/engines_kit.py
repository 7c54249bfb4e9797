"""Builders and waits shared by the tests of the late engines in the test world (the
mpi-operator, both Kueue releases): a v2beta1 MPIJob as a user writes it, a PyTorchJob, the
platform team's queue objects, and a poll that says what it waited for."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from controller_kit import wait_for as poll

from foundation.cluster.kube import Resource
from testworld import stages
from testworld.controller_manager import DEFAULT_CONTROLLERS, JOB_CONTROLLER, ControllerManager
from testworld.kwok import Kwok, NodePool
from testworld.world import World

MPIJOBS = Resource("kubeflow.org", "v2beta1", "mpijobs", "MPIJob")
PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
JOBS = Resource("batch", "v1", "jobs", "Job")
SECRETS = Resource("", "v1", "secrets", "Secret")
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
KUEUE_API = "kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
IMAGE = "example.com/mpi-train:1"


def job_world_parts() -> list[Any]:
    """gc with the job controller (the launcher is a batch/v1 Job), the scheduler, kwok on
    a few CPU nodes: what every world here starts before its engines."""
    return [ControllerManager(controllers=(*DEFAULT_CONTROLLERS, JOB_CONTROLLER)), "scheduler",
            Kwok(nodes=(NodePool("cpu", 3, cpu="16", memory="64Gi"),))]


@contextmanager
def started(world: World) -> Iterator[World]:
    world.start()
    try:
        yield world
    finally:
        world.stop()


def new_namespace(world: World, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    world.kubectl("create", "namespace", name)
    return name


def wait_for(check: Callable[[], Any], what: str, timeout: float = 90) -> Any:
    """Poll ``check`` until it returns something true, and return that."""
    return poll(check, timeout=timeout, interval=0.2, what=what)


def until_true(fetch: Callable[[], dict[str, Any] | None], ctype: str, what: str, timeout: float = 90) -> dict[str, Any]:
    """The object ``fetch`` returns once its condition ``ctype`` is True."""
    def check() -> dict[str, Any] | None:
        obj = fetch()
        return obj if obj and is_true(obj, ctype) else None
    return wait_for(check, what, timeout)


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


def is_true(obj: dict[str, Any], ctype: str) -> bool:
    return condition(obj, ctype).get("status") == "True"


def _template(container: str, annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations},
            "spec": {"containers": [{"name": container, "image": IMAGE, **spec,
                                     "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}


def mpijob(name: str, *, workers: int = 2, slots: int = 2, launcher_seconds: str = "3", launcher_exit: str = "0",
           worker_annotations: dict[str, str] | None = None, worker_restart: str = "Never",
           launcher_restart: str = "OnFailure", run_policy: dict[str, Any] | None = None,
           labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A minimal OpenMPI MPIJob: a launcher that runs ``mpirun`` for ``launcher_seconds`` and
    exits ``launcher_exit``, ``workers`` workers running sshd (kwok keeps them Running until
    deleted unless ``worker_annotations`` say otherwise); cleanPodPolicy Running, as the
    mpi-operator's own examples set it, so the workers go when the launcher is done."""
    launcher = {stages.RUN_SECONDS: launcher_seconds, stages.EXIT_CODE: launcher_exit}
    return {
        "apiVersion": MPIJOBS.api_version, "kind": "MPIJob", "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "slotsPerWorker": slots, "sshAuthMountPath": "/home/mpiuser/.ssh", "mpiImplementation": "OpenMPI",
            "runPolicy": {"cleanPodPolicy": "Running", **(run_policy or {})},
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "restartPolicy": launcher_restart, "template": _template(
                    "launcher", launcher, command=["mpirun", "-n", str(workers * slots), "python3", "/train.py"])},
                "Worker": {"replicas": workers, "restartPolicy": worker_restart, "template": _template(
                    "worker", worker_annotations or {stages.RUN_SECONDS: "forever"})},
            },
        },
    }


def pytorchjob(name: str, queue: str) -> dict[str, Any]:
    """A queued PyTorchJob (master + 1 worker), as the upstream kubeflow.org/v1 CRD takes it."""
    replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": _template("pytorch", {})}
    return {"apiVersion": PYTORCHJOBS.api_version, "kind": "PyTorchJob",
            "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
            "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}}}


def queue_objects(namespace: str, *, cpu: str = "32", preemption: bool = False) -> list[dict[str, Any]]:
    """A flavor, a ClusterQueue for ``namespace`` covering cpu and memory (that preempts lower
    priorities, with ``preemption``), its LocalQueue ``q``."""
    quota = {"cpu": cpu, "memory": "128Gi"}
    preempts = {"preemption": {"withinClusterQueue": "LowerPriority"}} if preemption else {}
    return [
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "default"}},
        {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": f"cq-{namespace}"}, "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}, **preempts,
            "resourceGroups": [{"coveredResources": list(quota), "flavors": [
                {"name": "default", "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()]}]}]}},
        {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": "q", "namespace": namespace},
         "spec": {"clusterQueue": f"cq-{namespace}"}},
    ]
