"""Both Kueue parts (``kueue``: v0.17.0, ``kueue-0.19``: v0.19.2) admit queued Kubeflow jobs:
a ``kubeflow.org/v1`` PyTorchJob (upstream CRD; no operator needs to run for Kueue to make
its Workload and unsuspend it) and, beside the mpi-operator part, a ``kubeflow.org/v2beta1``
MPIJob that then runs to Succeeded; and what ``train-compile`` writes for the mpi-operator
target is admitted and preempted by both (the GitOps e2e of that target runs v0.19.2 only, so
v0.17.0's turn is here, in a world already running). Every Kueue object here is
``kueue.x-k8s.io/v1beta2``, which both releases serve (as storage; v1beta1 is served, deprecated)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engines_kit import (
    IMAGE, KUEUE_API, MPIJOBS, PYTORCHJOBS, QUEUE_LABEL, WORKLOADS, condition, job_world_parts, mpijob, pytorchjob,
    queue_objects, started, until_true, wait_for,
)

from testworld import kueue, stages
from testworld.kueue import Kueue
from testworld.world import World

pytestmark = pytest.mark.controlplane
FRAMEWORKS = ("kubeflow.org/pytorchjob", "kubeflow.org/mpijob")
MANAGED = ("kq-torch", "kq-mpi", "kq-inside", "kq-compiled")  # Kueue(namespaces=...): the namespaces it manages


@pytest.fixture(scope="module", params=[kueue.VERSION, kueue.V0_19], ids=["kueue v0.17.0", "kueue v0.19.2"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    # the mpi-operator first: Kueue finds the v2beta1 MPIJob served when it sets its integrations up
    parts = [*job_world_parts(), "mpi-operator", Kueue(MANAGED, FRAMEWORKS, version=request.param)]
    with started(World(parts)) as world:
        yield world


def queued(world: World, ns: str, **quota: Any) -> str:
    """Namespace ``ns`` with a LocalQueue ``q`` of its own ClusterQueue (``queue_objects``' options)."""
    world.kubectl("create", "namespace", ns)
    world.kubectl("apply", "--server-side", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": queue_objects(ns, **quota)}))
    return ns


def kueue_part(world: World) -> Kueue:
    return next(p for p in world.parts.values() if isinstance(p, Kueue))


def workload_of(world: World, ns: str, kind: str, name: str) -> dict | None:
    for wl in world.client.list(WORKLOADS, namespace=ns)["items"]:
        if any(o.get("kind") == kind and o.get("name") == name for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    return None


def admitted(world: World, ns: str, kind: str, name: str) -> dict:
    return until_true(lambda: workload_of(world, ns, kind, name), "Admitted", f"{kind} {name}'s Workload admitted")


def test_the_part_runs_the_release_it_was_asked_for_under_its_row_name(world):
    part = kueue_part(world)
    assert part.name == {kueue.VERSION: "kueue", kueue.V0_19: "kueue-0.19"}[part.version]
    assert part.configuration()["integrations"]["frameworks"] == list(FRAMEWORKS)  # exactly what the test asked
    crd = json.loads(world.kubectl("get", "crd", "workloads.kueue.x-k8s.io", "-o", "json").stdout)
    served = {v["name"]: v["storage"] for v in crd["spec"]["versions"] if v["served"]}
    assert served == {"v1beta1": False, "v1beta2": True}


def test_a_queued_pytorchjob_gets_a_workload_and_is_admitted_and_unsuspended(world):
    client, ns = world.client, queued(world, "kq-torch")
    # the create's answer is the object as admitted, before any controller: a GET after it can see
    # the job already admitted and unsuspended (make test caught that race for the MPIJob below)
    created = client.create(PYTORCHJOBS, ns, pytorchjob("torch", "q"))
    assert created["spec"]["runPolicy"]["suspend"] is True  # Kueue's webhook holds a queued job at create
    wl = admitted(world, ns, "PyTorchJob", "torch")
    assert wl["spec"]["queueName"] == "q" and wl["status"]["admission"]["clusterQueue"] == f"cq-{ns}"
    assert [p["name"] for p in wl["spec"]["podSets"]] == ["master", "worker"]
    wait_for(lambda: client.get(PYTORCHJOBS, ns, "torch")["spec"]["runPolicy"]["suspend"] is False,
             "the PyTorchJob unsuspended by Kueue")


def test_a_queued_v2beta1_mpijob_is_admitted_and_runs_to_succeeded(world):
    client, ns = world.client, queued(world, "kq-mpi")
    created = client.create(MPIJOBS, ns, mpijob("mpi", labels={QUEUE_LABEL: "q"}))
    assert created["spec"]["runPolicy"]["suspend"] is True  # held at create (the answer: see the PyTorchJob's)
    wl = admitted(world, ns, "MPIJob", "mpi")
    assert [(p["name"], p["count"]) for p in wl["spec"]["podSets"]] == [("launcher", 1), ("worker", 2)]
    done = until_true(lambda: client.get(MPIJOBS, ns, "mpi"), "Succeeded", "the MPIJob Succeeded", timeout=120)
    assert done["spec"]["runPolicy"]["suspend"] is False
    finished = until_true(lambda: workload_of(world, ns, "MPIJob", "mpi"), "Finished", "its Workload Finished")
    # WaitForPodsReady: on by default from v0.19 (a PodsReady condition), off in v0.17 (none)
    if kueue_part(world).version == kueue.V0_19:
        assert condition(finished, "PodsReady")["status"] == "True"
    else:
        assert condition(finished, "PodsReady") == {}


def test_a_queued_job_outside_the_managed_namespaces_is_left_alone_without_any_feature_gate(world):
    # managedJobsNamespaceSelector binds queued jobs too: beta and on in v0.17, GA in v0.19
    client, outside, inside = world.client, queued(world, "kq-outside"), queued(world, "kq-inside")
    client.create(PYTORCHJOBS, outside, pytorchjob("stray", "q"))
    client.create(PYTORCHJOBS, inside, pytorchjob("kept", "q"))
    admitted(world, inside, "PyTorchJob", "kept")  # Kueue has handled the jobs created before it
    assert workload_of(world, outside, "PyTorchJob", "stray") is None
    assert "runPolicy" not in client.get(PYTORCHJOBS, outside, "stray")["spec"]  # never suspended by Kueue


def _compile_and_apply(world: World, src: Path, ns: str, *jobs: dict[str, Any]) -> None:
    """The jobs compiled for the mpi-operator target and applied as `kubectl apply -k` of the tree."""
    project = {"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project", "defaults": {
        "target": "mpi-operator", "namespace": ns, "namespaces": {"create": False}},
        "environments": {"default": {"scheduling": {"queue": "q", "kueuePriority": True}}}}
    (src / "trainforge.yaml").write_text(json.dumps(project))
    for job in jobs:
        (src / f"{job['metadata']['name']}.yaml").write_text(json.dumps(job))
    exe = Path(sys.executable).with_name("train-compile")
    done = subprocess.run([str(exe), "build", str(src), "-o", str(src.parent / "out")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    world.kubectl("apply", "--server-side", "-k", str(src.parent / "out" / "default"))


def _compiled(name: str, priority: str, seconds: str) -> dict[str, Any]:
    return {"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob", "metadata": {"name": name}, "spec": {
        "framework": "mpi", "image": IMAGE, "command": ["mpirun", "/bench"], "nodes": 2,
        "resources": {"cpu": "1", "memory": "1Gi"}, "scheduling": {"priority": priority},
        "podTemplate": {"metadata": {"annotations": {stages.RUN_SECONDS: seconds}}}}}


def test_compiled_mpijobs_are_admitted_and_a_higher_priority_one_preempts_a_lower(world, tmp_path):
    """The mpi-operator target's output under this release: Kueue admits a queued MPIJob, a
    higher-priority one preempts it (Kueue suspends it, the mpi-operator deletes its workers),
    runs, and the preempted one is admitted again and runs to the end (tests/e2e/
    test_mpi_operator_e2e.py syncs the same through Flux and Argo CD under v0.19.2)."""
    client, ns = world.client, queued(world, "kq-compiled", cpu="2", preemption=True)
    for name, value in (("low", 100), ("high", 1000)):
        world.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(
            {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}))
    src = tmp_path / "src"
    src.mkdir()
    low = _compiled("low", "low", "20")
    _compile_and_apply(world, src, ns, low)
    admitted(world, ns, "MPIJob", "low")
    _compile_and_apply(world, src, ns, low, _compiled("high", "high", "3"))
    preempted = wait_for(lambda: next((w for w in client.list(WORKLOADS, namespace=ns)["items"]
                                       if condition(w, "Evicted").get("reason") == "Preempted"), None),
                         "the low job's Workload preempted")
    assert preempted["metadata"]["ownerReferences"][0]["name"] == "low"
    until_true(lambda: client.get(MPIJOBS, ns, "low"), "Suspended", "the preempted MPIJob suspended")
    until_true(lambda: client.get(MPIJOBS, ns, "high"), "Succeeded", "the preemptor Succeeded", timeout=120)
    until_true(lambda: client.get(MPIJOBS, ns, "low"), "Succeeded", "the preempted job admitted again, to the end",
               timeout=180)
