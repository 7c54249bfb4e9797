"""A run is one shape from start to end (issue 40): on the real control plane with kwok.

A running job's nodes and image are changed by a server-side apply, as Argo CD or Flux sync
an edit from git, while its pods fail and are re-created (an exit kwok plays, a pod deleted
by hand). A sampler lists the job's pods every 200 ms: among the live ones (not being
deleted, not finished) there is never more than one shape (image, world size, revision),
also with the controller restarted in the middle; the change is announced by one Event,
never repeated, and runs once the job is suspended and resumed. Upstream v1.9.4 would
create `worker-1` with `WORLD_SIZE=3` beside pods that count 2 and re-create a failed pod
from the new image (tests/parity shows it side by side). A finished job edited stays
finished with one Event.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml
from controller_kit import PODS_FIRST, Cluster, env_of, job, running_manager, settled, wait_for
from test_controller_resume import Managers

from foundation.frameworks import by_kind
from controller.jobs import run_record
from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster.kube import EVENTS, PODS
from testworld import stages

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

NEW_IMAGE = "example.com/train:2"


# ---------------------------------------------------------------------------------- the job and its edit
def forever(body: dict[str, Any]) -> dict[str, Any]:
    for spec in body["spec"][KINDS[body["kind"]].facts.replica_specs].values():
        spec["template"]["metadata"] = {"annotations": {stages.RUN_SECONDS: "forever"}}
    return body


def edited(body: dict[str, Any], *, workers: int) -> dict[str, Any]:
    """`body` with one more worker and a new image in every template: a commit of nodes and image."""
    out = json.loads(json.dumps(body))
    specs = out["spec"][KINDS[out["kind"]].facts.replica_specs]
    specs["Worker"]["replicas"] = workers
    for spec in specs.values():
        spec["template"]["spec"]["containers"][0]["image"] = NEW_IMAGE
    return out


def server_side_apply(world: Any, namespace: str, body: dict[str, Any]) -> None:
    """What Argo CD and Flux do with a commit (the field manager owns what it applies)."""
    world.kubectl("apply", "--server-side", "--field-manager=gitops", "-n", namespace, "-f", "-",
                  input=yaml.safe_dump(body))


def world_size(pod: dict[str, Any], kind: str) -> Any:
    env = env_of(pod, by_kind(kind).facts.container)
    if "WORLD_SIZE" in env:
        return env["WORLD_SIZE"]
    if "TF_CONFIG" in env:
        return sum(len(v) for v in json.loads(env["TF_CONFIG"])["cluster"].values())
    return None  # MPI's workers: the hostfile is the launcher's, the job's revision says the rest


def shape(pod: dict[str, Any], kind: str) -> tuple[Any, ...]:
    """What tells two pods of one job built from different specs apart."""
    container = pod["spec"]["containers"][0]
    annotations = pod["metadata"].get("annotations") or {}
    return container["image"], world_size(pod, kind), annotations.get(run_record.RECORD)


def live(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and (pod.get("status") or {}).get("phase") in (
        None, "Pending", "Running")


# ---------------------------------------------------------------------------------- the sampler
class Sampler:
    """Lists the job's pods every `every` s; keeps the distinct shapes of the live ones per sample."""

    def __init__(self, cluster: Cluster, kind: str, name: str, every: float = 0.2) -> None:
        self.cluster, self.kind, self.name, self.every = cluster, kind, name, every
        self.samples: list[set[tuple[Any, ...]]] = []
        self.names: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()
        self._sample()  # the last one after the test's last step

    def _sample(self) -> None:
        selector = f"training.kubeflow.org/job-name={self.name}"
        pods = self.cluster.client.list(PODS, namespace=self.cluster.namespace, label_selector=selector)["items"]
        self.names |= {p["metadata"]["name"] for p in pods}
        self.samples.append({shape(p, self.kind) for p in pods if live(p)})

    @contextmanager
    def running(self) -> Iterator[Sampler]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(10)

    def mixed(self) -> list[set[tuple[Any, ...]]]:
        return [s for s in self.samples if len(s) > 1]

    def shapes(self) -> set[tuple[Any, ...]]:
        return set().union(*self.samples)


# ---------------------------------------------------------------------------------- helpers
def events(cluster: Cluster, name: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in cluster.client.list(EVENTS, namespace=cluster.namespace)["items"]
            if e["involvedObject"]["name"] == name and e["reason"] == reason]


def running(cluster: Cluster, names: set[str]) -> dict[str, dict[str, Any]] | None:
    pods = {n: p for n, p in cluster.pods().items() if live(p)}
    return pods if set(pods) == names and all(p["status"].get("phase") == "Running" for p in pods.values()) else None


def end(cluster: Cluster, name: str, code: int) -> str:
    """kwok ends the pod's containers now with `code`; the old uid."""
    pod = cluster.pods()[name]
    cluster.client.patch(PODS, cluster.namespace, name, {"metadata": {"annotations": {
        stages.RUN_SECONDS: "0", stages.EXIT_CODE: str(code)}}})
    return str(pod["metadata"]["uid"])


def replaced_and_running(cluster: Cluster, name: str, old_uid: str) -> Any:
    return wait_for(lambda: (lambda p: p if p and p["metadata"]["uid"] != old_uid and live(p) and
                             p["status"].get("phase") == "Running" else None)(cluster.pods().get(name)),
                    timeout=60, what=f"{name} re-created and running")


def names_of(name: str, kind: str, workers: int) -> set[str]:
    first = {"PyTorchJob": "master-0", "TFJob": "chief-0", "MPIJob": "launcher"}[kind]
    return {f"{name}-{first}", *(f"{name}-worker-{i}" for i in range(workers))}


# ---------------------------------------------------------------------------------- the scenario
CASES = [("PyTorchJob", False), ("PyTorchJob", True), ("TFJob", False), ("MPIJob", False)]
# how each kind's pods fail and come back, as upstream's rules have them: a TFJob fails when a
# pod is deleted (its status rule counts the pod as failed, whatever the policy), MPI's pass
# re-creates only missing pods (an exit would fail or hold it)
DISRUPTIONS = {
    "PyTorchJob": [("exit", "worker-0"), ("delete", "master-0"), ("delete", "worker-0")],
    "TFJob": [("exit", "worker-0"), ("exit", "chief-0")],
    "MPIJob": [("delete", "worker-0"), ("delete", "launcher")],
}


@pytest.mark.parametrize("kind, restart_between", CASES, ids=[
    "a PyTorchJob", "a PyTorchJob with the controller restarted in the middle", "a TFJob", "an MPIJob"])
def test_an_edit_of_a_running_job_never_mixes_two_shapes_among_its_live_pods(
        pod_world, pod_namespace, kind: str, restart_between: bool) -> None:
    name = "ri"
    cluster = Cluster(pod_world.client, pod_namespace)
    first = {"PyTorchJob": "Master", "TFJob": "Chief", "MPIJob": "Launcher"}[kind]
    body = forever(job(kind, name, restart="ExitCode", **{first: 1, "Worker": 1}))
    body["metadata"]["namespace"] = pod_namespace
    managers = Managers(str(pod_world.kubeconfig), pod_namespace)
    managers.start()
    try:
        server_side_apply(pod_world, pod_namespace, body)
        old_names = names_of(name, kind, 1)
        wait_for(lambda: running(cluster, old_names), timeout=60, what="the run's pods running")
        sampler = Sampler(cluster, kind, name)
        with sampler.running():
            server_side_apply(pod_world, pod_namespace, edited(body, workers=2))
            wait_for(lambda: events(cluster, name, f"{kind}SpecChangeHeld"), what="the change announced")
            if restart_between:
                managers.restart()
            # pods fail and are re-created: a retryable exit kwok plays, a pod deleted by hand
            for action, pod_name in DISRUPTIONS[kind]:
                if action == "exit":
                    uid = end(cluster, f"{name}-{pod_name}", 137)
                else:
                    uid = cluster.pods()[f"{name}-{pod_name}"]["metadata"]["uid"]
                    cluster.client.delete(PODS, pod_namespace, f"{name}-{pod_name}")
                replaced_and_running(cluster, f"{name}-{pod_name}", uid)
            mgr = managers.current()
            settled(mgr, mgr.reconciles - 1)
            kept = running(cluster, old_names)
            assert kept is not None, cluster.pods()
            held = events(cluster, name, f"{kind}SpecChangeHeld")
            assert len(held) == 1 and held[0].get("count", 1) == 1, held  # once, also across the restart
            assert "Worker.replicas 1 -> 2" in held[0]["message"] and NEW_IMAGE in held[0]["message"]
            created_in_the_run = set(sampler.names)
            # suspended and resumed: the next run, on the new spec
            cluster.client.patch(job_resource(KINDS[kind]), pod_namespace, name, {"spec": {"runPolicy": {"suspend": True}}})
            wait_for(lambda: not [p for p in cluster.pods().values() if live(p)], timeout=60, what="the run's pods gone")
            cluster.client.patch(job_resource(KINDS[kind]), pod_namespace, name, {"spec": {"runPolicy": {"suspend": False}}})
            new_names = names_of(name, kind, 2)
            resumed = wait_for(lambda: running(cluster, new_names), timeout=60, what="the next run running")
        assert not sampler.mixed(), sampler.mixed()[:3]
        assert created_in_the_run == old_names  # no worker-1 beside pods that count one worker
        old_shapes = {shape(p, kind) for p in kept.values()}
        new_shapes = {shape(p, kind) for p in resumed.values()}
        assert len(old_shapes) == len(new_shapes) == 1, (old_shapes, new_shapes)
        (old_image, old_size, old_revision), = old_shapes
        (new_image, new_size, new_revision), = new_shapes
        assert (old_image, new_image) == (image_of(kind), NEW_IMAGE) and old_revision != new_revision
        assert (old_size, new_size) == ((None, None) if kind == "MPIJob" else (2, 3) if kind == "TFJob" else ("2", "3"))
        assert sampler.shapes() == old_shapes | new_shapes, sampler.shapes()
        assert len(events(cluster, name, f"{kind}SpecChangeHeld")) == 1
    finally:
        managers.stop()


def image_of(kind: str) -> str:
    return job(kind, "x", Worker=1)["spec"][KINDS[kind].facts.replica_specs]["Worker"]["template"]["spec"][
        "containers"][0]["image"]


def test_a_finished_job_edited_stays_finished_with_one_event(pod_world, pod_namespace) -> None:
    cluster = Cluster(pod_world.client, pod_namespace)
    body = job("PyTorchJob", "fin", Master=1, Worker=1)
    body["metadata"]["namespace"] = pod_namespace
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["metadata"] = {"annotations": {stages.RUN_SECONDS: "0.5"}}
    with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST) as mgr:
        server_side_apply(pod_world, pod_namespace, body)
        done = cluster.wait_condition("PyTorchJob", "fin", "Succeeded", timeout=60)
        pods = {n: p["metadata"]["uid"] for n, p in cluster.pods().items()}
        for n, change in enumerate(({"workers": 2}, {"workers": 3})):
            since = mgr.reconciles
            server_side_apply(pod_world, pod_namespace, edited(body, **change))
            wait_for(lambda n=n: len(events(cluster, "fin", "PyTorchJobSpecChangeNotRun")) == n + 1, what="the Event")
            settled(mgr, since)
        told = events(cluster, "fin", "PyTorchJobSpecChangeNotRun")
        assert [e.get("count", 1) for e in told] == [1, 1]
        assert {e["message"] for e in told} >= {
            "PyTorchJob fin has succeeded and does not run again; this change will not run: Master.template.spec."
            f'containers[pytorch].image "example.com/pytorch:1" -> "{NEW_IMAGE}"; Worker.replicas 1 -> 3; '
            f'Worker.template.spec.containers[pytorch].image "example.com/pytorch:1" -> "{NEW_IMAGE}". '
            "To run it, delete the job and create it again"}
        assert {n: p["metadata"]["uid"] for n, p in cluster.pods().items()} == pods  # nothing ran
        assert cluster.get_job("PyTorchJob", "fin")["status"] == done["status"]  # type: ignore[index]
    # a new controller (a restart, a new leader) reads what was announced: no Event again
    with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST) as mgr:
        settled(mgr, 0)
        assert len(events(cluster, "fin", "PyTorchJobSpecChangeNotRun")) == 2
        assert mgr.client.writes() == 0
