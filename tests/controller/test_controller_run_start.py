"""A run starts when its first container starts (issue 48): on the real control plane with kwok.

Until then an edit of the job is not held: nothing of the run is lost by building its pods
again, so they are created again from the new spec (a job stuck in `ImagePullBackOff` on a
typo'd image takes the fix from git), with one Normal Event `{Kind}SpecChangeApplied`. Once
one container of one pod ran, the edit is held as before (`{Kind}SpecChangeHeld`), even if
another pod is stuck. And when the edit arrives while the first containers start, whichever
wins, the job's live pods are never of two shapes (sampled every 200 ms as
test_controller_run_integrity.py does), also with the controller restarted in the middle.
The rule itself (which container states count) is foundation.runs.started's,
tests/foundation/test_run_started.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from controller_kit import Cluster, job, settled, wait_for
from test_controller_resume import Managers
from test_controller_run_integrity import (
    NEW_IMAGE, Sampler, events, forever, live, running, server_side_apply, shape,
)

from controller.jobs import run_record
from foundation.cluster import errors
from foundation.cluster.kube import PODS
from testworld import stages

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

TYPO = "example.com/train:typo"  # the test world's kubelet fails to pull it (testworld.kubelet_rules)
APPLIED, HELD = "PyTorchJobSpecChangeApplied", "PyTorchJobSpecChangeHeld"


def pytorch(name: str, namespace: str, *, workers: int = 1, image: str | None = None,
            worker_image: str | None = None, waiting: str | None = None) -> dict[str, Any]:
    body = forever(job("PyTorchJob", name, restart="ExitCode", Master=1, **({"Worker": workers} if workers else {})))
    body["metadata"]["namespace"] = namespace
    for rtype, spec in body["spec"]["pytorchReplicaSpecs"].items():
        container = spec["template"]["spec"]["containers"][0]
        container["image"] = (worker_image if rtype == "Worker" and worker_image else image) or container["image"]
        if waiting:  # kwok keeps the pods waiting with this reason until the annotation is taken off
            spec["template"]["metadata"]["annotations"][stages.WAITING_REASON] = waiting
    return body


def fixed(body: dict[str, Any], *, workers: int) -> dict[str, Any]:
    """The commit that fixes the image (and asks for `workers` workers), without kwok's hold."""
    return pytorch(body["metadata"]["name"], body["metadata"]["namespace"], workers=workers, image=NEW_IMAGE)


def waiting_reasons(cluster: Cluster, name: str) -> set[str]:
    found = set()
    for pod in cluster.pods().values():
        if pod["metadata"]["name"].startswith(f"{name}-"):
            for status in (pod.get("status") or {}).get("containerStatuses") or []:
                found.add(((status.get("state") or {}).get("waiting") or {}).get("reason", ""))
    return found


def uids(cluster: Cluster, name: str) -> dict[str, str]:
    return {n: p["metadata"]["uid"] for n, p in cluster.pods().items() if n.startswith(f"{name}-")}


PULLING = {"ErrImagePull", "ImagePullBackOff"}


@contextmanager
def applied(world: Any, namespace: str, body: dict[str, Any]) -> Iterator[Managers]:
    """train-controller running (restartable), `body` applied as a GitOps engine applies it."""
    managers = Managers(str(world.kubeconfig), namespace)
    managers.start()
    try:
        server_side_apply(world, namespace, body)
        yield managers
    finally:
        managers.stop()


def test_a_job_whose_pods_never_started_takes_the_image_fix_from_git(pod_world, pod_namespace) -> None:
    name = "typo"
    cluster = Cluster(pod_world.client, pod_namespace)
    body = pytorch(name, pod_namespace, image=TYPO)
    with applied(pod_world, pod_namespace, body):
        wait_for(lambda: waiting_reasons(cluster, name) & PULLING, timeout=60, what="the pods failing to pull the image")
        before = uids(cluster, name)
        assert set(before) == {f"{name}-master-0", f"{name}-worker-0"}
        sampler = Sampler(cluster, "PyTorchJob", name)
        with sampler.running():
            server_side_apply(pod_world, pod_namespace, fixed(body, workers=2))
            new_names = {f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1"}
            now = wait_for(lambda: running(cluster, new_names), timeout=60, what="the fixed run running")
        assert not sampler.mixed(), sampler.mixed()[:3]
        assert all(now[n]["metadata"]["uid"] != uid for n, uid in before.items())  # created again, not kept
        assert {shape(p, "PyTorchJob") for p in now.values()} == {
            (NEW_IMAGE, "3", now[f"{name}-master-0"]["metadata"]["annotations"][run_record.RECORD])}
        taken = events(cluster, name, APPLIED)
        assert len(taken) == 1 and taken[0].get("count", 1) == 1 and taken[0]["type"] == "Normal", taken
        assert f'image "{TYPO}" -> "{NEW_IMAGE}"' in taken[0]["message"], taken[0]["message"]
        assert "Worker.replicas 1 -> 2" in taken[0]["message"]
        assert not events(cluster, name, HELD)
        # the run has started now: a later edit is held, as ever
        server_side_apply(pod_world, pod_namespace, fixed(body, workers=3))
        wait_for(lambda: events(cluster, name, HELD), what="the next edit held")
        assert set(uids(cluster, name)) == new_names


def test_one_container_that_ran_is_a_started_run_its_edit_is_held(pod_world, pod_namespace) -> None:
    """The master runs, the worker is stuck on a typo: the run has started, the fix waits for the
    next run, and no pod is replaced."""
    name = "half"
    cluster = Cluster(pod_world.client, pod_namespace)
    body = pytorch(name, pod_namespace, worker_image=TYPO)
    with applied(pod_world, pod_namespace, body) as managers:
        wait_for(lambda: (cluster.pods().get(f"{name}-master-0") or {}).get("status", {}).get("phase") == "Running"
                 and waiting_reasons(cluster, name) & PULLING, timeout=60,
                 what="the master running, the worker failing to pull")
        before = uids(cluster, name)
        server_side_apply(pod_world, pod_namespace, fixed(body, workers=1))
        held = wait_for(lambda: events(cluster, name, HELD), what="the fix held")
        mgr = managers.current()
        settled(mgr, mgr.reconciles - 1)
        assert len(held) == 1 and NEW_IMAGE in held[0]["message"]
        assert uids(cluster, name) == before and not events(cluster, name, APPLIED)


RACERS = 6  # jobs, each with its edit at another moment around its pods' start


def test_an_edit_racing_the_first_container_start_never_leaves_two_shapes(pod_world, pod_namespace) -> None:
    cluster = Cluster(pod_world.client, pod_namespace)
    names = [f"race-{i}" for i in range(RACERS)]
    # a master alone: kwok starts a held pod once its hold is taken off unless it has init containers
    bodies = {n: pytorch(n, pod_namespace, workers=0, waiting="ContainerCreating") for n in names}
    managers = Managers(str(pod_world.kubeconfig), pod_namespace)
    managers.start()
    samplers = {n: Sampler(cluster, "PyTorchJob", n) for n in names}

    def start_pods(name: str) -> None:  # kwok starts a pod once its hold is taken off
        for pod in [p for n, p in cluster.pods().items() if n.startswith(f"{name}-")]:
            try:
                cluster.client.patch(PODS, pod_namespace, pod["metadata"]["name"], {"metadata": {
                    "uid": pod["metadata"]["uid"], "annotations": {stages.WAITING_REASON: None}}})
            except (errors.NotFound, errors.Conflict):
                pass  # deleted meanwhile: the edit won

    def race(i: int, name: str) -> None:
        offset = (i - RACERS / 2) * 0.15  # the edit from 0.45 s before the start to 0.3 s after it
        edit = lambda: server_side_apply(pod_world, pod_namespace, fixed(bodies[name], workers=1))  # noqa: E731
        first, second = (start_pods, edit) if offset > 0 else (edit, start_pods)
        first(name) if first is start_pods else first()
        time.sleep(abs(offset))
        second(name) if second is start_pods else second()

    def settled_run(name: str) -> Any:
        pods = {n: p for n, p in cluster.pods().items() if n.startswith(f"{name}-")}
        live_pods = {n: p for n, p in pods.items() if live(p)}
        if not live_pods or len(pods) != len(live_pods):
            return None  # pods of a replaced run still going
        if not all(p["status"].get("phase") == "Running" for p in live_pods.values()):
            return None
        return live_pods if events(cluster, name, APPLIED) or events(cluster, name, HELD) else None

    final: dict[str, dict[str, Any]] = {}
    try:
        for body in bodies.values():
            server_side_apply(pod_world, pod_namespace, body)
        wait_for(lambda: all(waiting_reasons(cluster, n) == {"ContainerCreating"} for n in names), timeout=60,
                 what="every job's pods created and waiting")
        with ExitStack() as sampling:
            for sampler in samplers.values():
                sampling.enter_context(sampler.running())
            threads = [threading.Thread(target=race, args=(i, n)) for i, n in enumerate(names)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            managers.restart()  # a new controller reads the run's start and the records from the cluster
            for name in names:
                final[name] = wait_for(lambda name=name: settled_run(name), timeout=90, what=f"{name} settled")
    finally:
        managers.stop()
    outcomes = {}
    for name in names:
        assert not samplers[name].mixed(), (name, samplers[name].mixed()[:3])
        shapes = {shape(p, "PyTorchJob") for p in final[name].values()}
        assert len(shapes) == 1, (name, shapes)
        (image, size, _), = shapes
        applied, held = events(cluster, name, APPLIED), events(cluster, name, HELD)
        assert len(applied) + len(held) == 1, (name, applied, held)  # one Event, whichever won
        outcomes[name] = "applied" if applied else "held"
        assert (image, size, len(final[name])) == ((NEW_IMAGE, "2", 2) if applied else ("example.com/pytorch:1", "1", 1))
    print("race outcomes:", outcomes)
