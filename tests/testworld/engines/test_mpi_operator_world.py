"""The mpi-operator v0.8.0 part (testworld.mpi_operator) on kwok: a hand-written v2beta1
MPIJob runs to Succeeded, and what the real operator does with failures, suspension and
spec changes, pinned as it was observed (testworld/FACTS-mpi-operator.md says it in prose)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from engines_kit import (
    JOBS, MPIJOBS, SECRETS, condition, is_true, job_world_parts, mpijob, new_namespace, started, until_true,
    wait_for,
)

from foundation.cluster.kube import CONFIGMAPS, PODS, SERVICES
from testworld import mpi_operator, stages
from testworld.world import World

pytestmark = pytest.mark.controlplane
WORKER_ROLE = "training.kubeflow.org/job-role=worker"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with started(World([*job_world_parts(), "mpi-operator"])) as world:
        yield world


@pytest.fixture
def ns(world: World) -> str:
    return new_namespace(world, "mpi")


def get(world: World, ns: str, name: str) -> dict:
    return world.client.get(MPIJOBS, ns, name)


def finished(world: World, ns: str, name: str, ctype: str, timeout: float = 120) -> dict:
    return until_true(lambda: get(world, ns, name), ctype, f"MPIJob {name} {ctype}", timeout)


def workers(world: World, ns: str, name: str) -> list[dict]:
    selector = f"{WORKER_ROLE},training.kubeflow.org/job-name={name}"
    return sorted(world.client.list(PODS, namespace=ns, label_selector=selector)["items"],
                  key=lambda p: p["metadata"]["name"])


def running_workers(world: World, ns: str, name: str, count: int) -> list[dict]:
    def check() -> list[dict] | None:
        pods = workers(world, ns, name)
        ok = len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        return pods if ok else None
    return wait_for(check, f"{count} running workers of {name}")


def test_the_part_serves_mpijobs_in_v2beta1_only_in_a_world_that_started_with_the_v1_crd(world):
    assert world.upstream_crds
    assert mpi_operator.served_versions(world) == ["v2beta1"]
    pytorch = json.loads(world.kubectl("get", "crd", "pytorchjobs.kubeflow.org", "-o", "json").stdout)
    assert [v["name"] for v in pytorch["spec"]["versions"]] == ["v1"]  # the other v1 kinds stay


def test_a_minimal_mpijob_runs_to_succeeded_through_the_objects_the_operator_makes(world, ns):
    client = world.client
    client.create(MPIJOBS, ns, mpijob("pi"))
    pods = running_workers(world, ns, "pi", 2)
    assert [p["metadata"]["name"] for p in pods] == ["pi-worker-0", "pi-worker-1"]
    worker = pods[0]
    assert worker["metadata"]["labels"] == {
        "training.kubeflow.org/job-name": "pi", "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/operator-name": "mpi-operator", "training.kubeflow.org/replica-index": "0"}
    assert worker["metadata"]["ownerReferences"][0]["kind"] == "MPIJob"  # bare pods, owned by the MPIJob
    spec = worker["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["restartPolicy"]) == ("pi-worker-0", "pi", "Never")
    assert spec["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]  # none given: the operator's
    assert {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"} in spec["containers"][0]["volumeMounts"]

    secret = client.get(SECRETS, ns, "pi-ssh")
    assert secret["type"] == "kubernetes.io/ssh-auth" and set(secret["data"]) == {"ssh-privatekey", "ssh-publickey"}
    config = client.get(CONFIGMAPS, ns, "pi-config")
    assert config["data"]["hostfile"] == "pi-worker-0.pi.{0}.svc slots=2\npi-worker-1.pi.{0}.svc slots=2\n".format(ns)
    assert "discover_hosts.sh" in config["data"]
    service = client.get(SERVICES, ns, "pi")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"training.kubeflow.org/job-name": "pi",
                                           "training.kubeflow.org/operator-name": "mpi-operator"}

    launcher = client.get(JOBS, ns, "pi-launcher")
    template = launcher["spec"]["template"]["spec"]
    assert template["restartPolicy"] == "OnFailure"
    env = {e["name"]: e.get("value") for e in template["containers"][0]["env"]}
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile" and env["OMPI_MCA_orte_set_default_slots"] == "2"

    done = finished(world, ns, "pi", "Succeeded")
    assert [c["type"] for c in done["status"]["conditions"]] == ["Created", "Running", "Succeeded"]
    assert condition(done, "Succeeded")["reason"] == "MPIJobSucceeded"
    assert done["status"]["replicaStatuses"]["Launcher"]["succeeded"] == 1
    # cleanPodPolicy Running: the running workers are deleted once the job is done
    wait_for(lambda: not workers(world, ns, "pi"), "the workers deleted after success")


def test_a_failed_worker_is_not_replaced_and_the_job_fails_when_the_launcher_exhausts_its_backoff_limit(world, ns):
    client = world.client
    body = mpijob("crash", launcher_seconds="6", launcher_exit="1", launcher_restart="Never",
                  worker_annotations={stages.RUN_SECONDS: "1", stages.EXIT_CODE: "1"},
                  run_policy={"backoffLimit": 1})
    client.create(MPIJOBS, ns, body)

    def workers_failed() -> dict | None:
        job = get(world, ns, "crash")
        return job if ((job.get("status") or {}).get("replicaStatuses") or {}).get("Worker", {}).get("failed") == 2 else None

    seen = wait_for(workers_failed, "both workers counted failed")
    # the launcher is still running (6 s): a failed worker alone does not fail the MPIJob
    assert not is_true(seen, "Failed")
    pods = workers(world, ns, "crash")
    assert [p["status"]["phase"] for p in pods] == ["Failed", "Failed"]
    assert all(p["metadata"]["uid"] for p in pods)
    first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}

    done = finished(world, ns, "crash", "Failed", timeout=150)
    # the launcher Job's reason, "/" and the last failed launcher pod's status.reason (none here)
    assert condition(done, "Failed")["reason"] == "BackoffLimitExceeded/"
    assert condition(done, "Running")["status"] == "False"
    assert done["status"]["replicaStatuses"]["Worker"] == {}  # a finished job's worker counts are reset
    launcher = client.get(JOBS, ns, "crash-launcher")
    assert launcher["spec"]["backoffLimit"] == 1 and launcher["status"]["failed"] == 2  # backoffLimit + 1 launcher pods
    assert done["status"]["replicaStatuses"]["Launcher"]["failed"] == 2
    # the failed workers were never recreated (same pods, same uids)
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in workers(world, ns, "crash")} == first


def test_a_suspended_mpijob_makes_no_pods_and_runs_once_resumed(world, ns):
    client = world.client
    client.create(MPIJOBS, ns, mpijob("held", run_policy={"suspend": True}))
    suspended = finished(world, ns, "held", "Suspended")
    assert condition(suspended, "Suspended")["reason"] == "MPIJobSuspended"
    assert condition(suspended, "Running").get("status") == "False"
    launcher = wait_for(lambda: client.list(JOBS, namespace=ns)["items"], "the launcher Job")[0]
    assert launcher["spec"]["suspend"] is True  # created at once (launcherCreationPolicy AtStartup), suspended
    assert "startTime" not in suspended["status"]
    # settled: the Suspended condition is written after the workers would have been made
    assert workers(world, ns, "held") == [] and client.list(PODS, namespace=ns)["items"] == []

    client.patch(MPIJOBS, ns, "held", {"spec": {"runPolicy": {"suspend": False}}})
    running_workers(world, ns, "held", 2)
    done = finished(world, ns, "held", "Succeeded")
    assert condition(done, "Suspended")["status"] == "False" and condition(done, "Suspended")["reason"] == "MPIJobResumed"


def test_suspending_a_running_mpijob_deletes_its_workers_and_suspends_the_launcher(world, ns):
    client = world.client
    client.create(MPIJOBS, ns, mpijob("pause", launcher_seconds="forever"))
    running_workers(world, ns, "pause", 2)
    client.patch(MPIJOBS, ns, "pause", {"spec": {"runPolicy": {"suspend": True}}})
    wait_for(lambda: not client.list(PODS, namespace=ns)["items"], "every pod gone")
    assert client.get(JOBS, ns, "pause-launcher")["spec"]["suspend"] is True
    job = get(world, ns, "pause")
    assert is_true(job, "Suspended") and condition(job, "Running")["status"] == "False"


def test_spec_changes_of_a_running_mpijob_reach_the_hostfile_and_new_pods_only(world, ns):
    client = world.client
    client.create(MPIJOBS, ns, mpijob("live", launcher_seconds="forever"))
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in running_workers(world, ns, "live", 2)}

    def hostfile(expected: str) -> None:
        wait_for(lambda: client.get(CONFIGMAPS, ns, "live-config")["data"]["hostfile"] == expected.format(ns),
                 f"the hostfile {expected!r}")

    client.patch(MPIJOBS, ns, "live", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 3}}}})
    pods = running_workers(world, ns, "live", 3)  # scaled up: worker-2 added, the others kept
    assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods[:2]} == before
    hostfile("".join(f"live-worker-{i}.live.{{0}}.svc slots=2\n" for i in range(3)))

    client.patch(MPIJOBS, ns, "live", {"spec": {"slotsPerWorker": 4}})
    hostfile("".join(f"live-worker-{i}.live.{{0}}.svc slots=4\n" for i in range(3)))
    launcher = client.get(JOBS, ns, "live-launcher")  # made once: its template keeps the first slots
    env = {e["name"]: e.get("value") for e in launcher["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["OMPI_MCA_orte_set_default_slots"] == "2" and launcher["metadata"]["generation"] == 1

    worker = {"name": "worker", "image": "example.com/mpi-train:2"}
    client.patch(MPIJOBS, ns, "live", {"spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": {
        "containers": [worker]}}}}}})
    client.delete(PODS, ns, "live-worker-0")  # only a pod made after the change gets the new image
    renewed = wait_for(lambda: [p for p in running_workers(world, ns, "live", 3)
                                if p["metadata"]["uid"] != before["live-worker-0"]
                                and p["metadata"]["name"] == "live-worker-0"], "live-worker-0 made again")
    assert renewed[0]["spec"]["containers"][0]["image"] == "example.com/mpi-train:2"
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in workers(world, ns, "live")}
    assert images == {"live-worker-0": "example.com/mpi-train:2", "live-worker-1": "example.com/mpi-train:1",
                      "live-worker-2": "example.com/mpi-train:1"}

    client.patch(MPIJOBS, ns, "live", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    running_workers(world, ns, "live", 1)  # scaled down: the highest indexes deleted
    hostfile("live-worker-0.live.{0}.svc slots=4\n")
    assert is_true(get(world, ns, "live"), "Running")
