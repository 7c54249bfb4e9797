"""Both Kueue parts (``kueue``: v0.17.0, ``kueue-0.19``: v0.19.2) admit queued Kubeflow jobs:
a ``kubeflow.org/v1`` PyTorchJob (upstream CRD; no operator needs to run for Kueue to make
its Workload and unsuspend it) and, beside the mpi-operator part, a ``kubeflow.org/v2beta1``
MPIJob that then runs to Succeeded. Every Kueue object here is ``kueue.x-k8s.io/v1beta2``,
which both releases serve (as storage; v1beta1 is served, deprecated)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from engines_kit import (
    MPIJOBS, PYTORCHJOBS, QUEUE_LABEL, WORKLOADS, condition, job_world_parts, mpijob, pytorchjob, queue_objects, started,
    until_true, wait_for,
)

from testworld import kueue
from testworld.kueue import Kueue
from testworld.world import World

pytestmark = pytest.mark.controlplane
FRAMEWORKS = ("kubeflow.org/pytorchjob", "kubeflow.org/mpijob")
MANAGED = ("kq-torch", "kq-mpi", "kq-inside")  # Kueue(namespaces=...): the namespaces it manages


@pytest.fixture(scope="module", params=[kueue.VERSION, kueue.V0_19], ids=["kueue v0.17.0", "kueue v0.19.2"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    # the mpi-operator first: Kueue finds the v2beta1 MPIJob served when it sets its integrations up
    parts = [*job_world_parts(), "mpi-operator", Kueue(MANAGED, FRAMEWORKS, version=request.param)]
    with started(World(parts)) as world:
        yield world


def queued(world: World, ns: str) -> str:
    """Namespace ``ns`` with a LocalQueue ``q`` of its own ClusterQueue."""
    world.kubectl("create", "namespace", ns)
    world.kubectl("apply", "--server-side", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": queue_objects(ns)}))
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
    client.create(PYTORCHJOBS, ns, pytorchjob("torch", "q"))
    created = client.get(PYTORCHJOBS, ns, "torch")
    assert created["spec"]["runPolicy"]["suspend"] is True  # Kueue's webhook holds a queued job at create
    wl = admitted(world, ns, "PyTorchJob", "torch")
    assert wl["spec"]["queueName"] == "q" and wl["status"]["admission"]["clusterQueue"] == f"cq-{ns}"
    assert [p["name"] for p in wl["spec"]["podSets"]] == ["master", "worker"]
    wait_for(lambda: client.get(PYTORCHJOBS, ns, "torch")["spec"]["runPolicy"]["suspend"] is False,
             "the PyTorchJob unsuspended by Kueue")


def test_a_queued_v2beta1_mpijob_is_admitted_and_runs_to_succeeded(world):
    client, ns = world.client, queued(world, "kq-mpi")
    client.create(MPIJOBS, ns, mpijob("mpi", labels={QUEUE_LABEL: "q"}))
    assert client.get(MPIJOBS, ns, "mpi")["spec"]["runPolicy"]["suspend"] is True
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
