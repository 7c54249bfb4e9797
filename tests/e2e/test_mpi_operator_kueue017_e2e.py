"""Kueue v0.17.0 admits and preempts compiled v2beta1 MPIJobs on the real mpi-operator, as v0.19.2 does.

test_mpi_operator_e2e.py runs every mpi-operator scenario under Flux, Argo CD and Kueue
v0.19.2; this module gives Kueue v0.17.0 a world of its own (the mpi-operator, the job
controller, kwok; no engine: the compiled tree is applied as `kubectl apply -k` would) and
the same queue: a low-priority MPI job holds the quota, a high-priority one preempts it
(Kueue suspends it, the mpi-operator deletes its workers) and runs to Succeeded, and the
low one is admitted again and runs. Both releases ship `kubeflow.org/mpijob` enabled, so the
compiled jobs need nothing in Kueue's configuration (kueue_note says nothing for them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from e2e_kit import running as started
from mpi_operator_kit import (MPIJOBS, QUEUE, condition, get, make_world, mpi_spec, namespace, queue_objects,
                              running, train_compile, wait_job, wait_pods, wait_workload, write)

from testworld import kueue

NS = namespace("kubectl", "queued")


@pytest.fixture(scope="module")
def world() -> Iterator:
    with started(make_world(kueue.VERSION, engines=()), "the mpi-operator world (Kueue v0.17.0)") as world:
        yield world


def deploy(world, src, out, *specs: dict) -> None:
    """Compile the specs (environment `queued` of a project targeting mpi-operator) and apply the tree."""
    write(src / "trainforge.yaml", {"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project",
                                    "defaults": {"target": "mpi-operator"}, "environments": {
                                        e: {"namespace": NS, **({"scheduling": {"queue": QUEUE, "kueuePriority": True}}
                                                                if e == "queued" else {})}
                                        for e in ("ok", "bad", "runs", "queued")}})
    for doc in specs:
        write(src / f"{doc['metadata']['name']}.yaml", doc)
    done = train_compile("build", str(src), "-o", str(out), "--env", "queued")
    assert done.returncode == 0, done.stderr
    assert "Kueue:" not in done.stderr  # both releases manage the mpi-operator's MPIJob as shipped
    world.kubectl("apply", "--server-side", "-k", str(out / "queued"))


def test_kueue_v017_admits_and_preempts_compiled_mpijobs(world, tmp_path):
    world.kubectl("create", "namespace", NS)
    world.kubectl("apply", "--server-side", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": queue_objects("kubectl", cpu="2")}))
    low = mpi_spec("q-low", "queued", seconds="20", scheduling={"priority": "low"})
    deploy(world, tmp_path / "src", tmp_path / "out", low)
    wait_workload(world, NS, "q-low", lambda w: condition(w, "Admitted").get("status") == "True", "admitted")
    wait_pods(world, NS, "q-low", "worker", lambda ps: running(ps, 2), "Running")

    deploy(world, tmp_path / "src", tmp_path / "out", low,
           mpi_spec("q-high", "queued", seconds="3", scheduling={"priority": "high"}))
    wait_workload(world, NS, "q-low", lambda w: condition(w, "Evicted").get("reason") == "Preempted", "preempted")
    suspended = wait_job(world, NS, "q-low", "Suspended")
    assert suspended["spec"]["runPolicy"]["suspend"] is True
    wait_job(world, NS, "q-high", "Succeeded")
    # the quota is free again: the low job is admitted anew and runs from the beginning to the end
    wait_job(world, NS, "q-low", "Succeeded", timeout=180)
    assert get(world, MPIJOBS, NS, "q-low")["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == QUEUE
