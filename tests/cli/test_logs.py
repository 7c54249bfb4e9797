"""`train-compile logs` through the API server's `pods/log`, on pods train-controller made and
kwok runs, whose logs kwok serves (from files the test writes, `testworld.podlogs`, or the
test world's own lines): real text, the pod as prefix when several pods show, `--replica`,
`--index`, `--tail`, a selection the job cannot have refused at once (exit 1, never a wait),
the project's namespace for a bare name, and a `--follow` started before the job exists that
waits for its pods, follows both at once and ends when the job has finished, even when its
pods are kept running."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from status_kit import apply, cli, process, project, spec, train_controller, write

from testworld import podlogs, stages


def serve(world: Any, ns: str, tmp_path: Path, *pods: str) -> dict[str, Path]:
    paths = {}
    for pod in pods:
        paths[pod] = tmp_path / "logs" / f"{pod}.log"
        podlogs.serve(world.client, paths[pod], namespace=ns, pod=pod)
    return paths


def test_logs_of_a_job_print_each_pod_in_replica_order_with_its_name(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path / "repo", pod_namespace)
    source = write(jobs, "talk.yaml", spec("talk", nodes=3, pod={stages.RUN_SECONDS: "forever"}))
    logs = serve(pod_world, pod_namespace, tmp_path, "talk-master-0", "talk-worker-0", "talk-worker-1")
    podlogs.write(logs["talk-worker-1"], ["w1 step 1", "w1 step 2"])
    podlogs.write(logs["talk-worker-0"], ["w0 step 1", "w0 step 2"])
    podlogs.write(logs["talk-master-0"], ["rendezvous at talk-master-0:23456", "step 1 loss 0.93", "step 2 loss 0.71"])
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2m").code == 0
        everything = cli(pod_world, "logs", source)
        assert (everything.code, everything.stderr) == (0, "")
        assert everything.stdout.splitlines() == [
            "[talk-master-0] rendezvous at talk-master-0:23456", "[talk-master-0] step 1 loss 0.93",
            "[talk-master-0] step 2 loss 0.71", "[talk-worker-0] w0 step 1", "[talk-worker-0] w0 step 2",
            "[talk-worker-1] w1 step 1", "[talk-worker-1] w1 step 2"]
        tail = cli(pod_world, "logs", f"{pod_namespace}/talk", "--replica", "worker", "--tail", "1")
        assert tail.stdout.splitlines() == ["[talk-worker-0] w0 step 2", "[talk-worker-1] w1 step 2"]
        one = cli(pod_world, "logs", "talk", "-n", pod_namespace, "--replica", "Worker", "--index", "1")
        assert one.stdout == "w1 step 1\nw1 step 2\n"  # one pod: no prefix


def test_logs_of_a_pod_that_never_started_say_why(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path / "repo", pod_namespace)
    source = write(jobs, "pulls.yaml", spec("pulls", image="ghcr.io/acme/none:1",
                                            pod={stages.WAITING_REASON: "ImagePullBackOff"}))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        deadline = time.monotonic() + 60
        while "ImagePullBackOff" not in (outcome := cli(pod_world, "logs", source)).stderr:
            assert time.monotonic() < deadline, outcome
            time.sleep(0.5)
    assert outcome.code == 1 and outcome.stdout == ""
    assert outcome.stderr == ("train-compile: pulls-master-0 has no log yet (pytorch has not started): "
                              'ImagePullBackOff: Back-off pulling image "ghcr.io/acme/none:1"\n')


def test_an_unknown_job_is_one_line_and_exit_1(pod_world, pod_namespace):
    outcome = cli(pod_world, "logs", f"{pod_namespace}/nobody")
    assert outcome.code == 1 and outcome.stdout == ""
    assert outcome.stderr.startswith(f"train-compile: no job {pod_namespace}/nobody in the cluster at https://")


def test_follow_waits_for_the_job_follows_every_pod_and_ends_when_the_job_has_finished(pod_world, pod_namespace,
                                                                                      tmp_path):
    jobs = project(tmp_path / "repo", pod_namespace)
    source = write(jobs, "long.yaml", spec("long", nodes=2, pod={stages.RUN_SECONDS: "forever"}))
    logs = serve(pod_world, pod_namespace, tmp_path, "long-master-0", "long-worker-0")
    podlogs.write(logs["long-master-0"], ["master starts"])
    follower = process(pod_world, "logs", source, "--follow")  # before the job exists (kubeflow/sdk#182)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.extend(iter(follower.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        with train_controller(pod_world, pod_namespace):
            apply(pod_world, jobs)
            _until(lambda: got == ["[long-master-0] master starts\n"], got, "the first line")
            podlogs.write(logs["long-worker-0"], ["worker joins"])
            podlogs.write(logs["long-master-0"], ["epoch 1 done"])
            _until(lambda: sorted(got) == sorted(["[long-master-0] master starts\n", "[long-worker-0] worker joins\n",
                                                  "[long-master-0] epoch 1 done\n"]), got, "the appended lines")
            for pod in ("long-master-0", "long-worker-0"):  # the programs end: each pod exits 0
                pod_world.kubectl("annotate", "pod", pod, "-n", pod_namespace, f"{stages.RUN_SECONDS}=0",
                                  "--overwrite")
            assert follower.wait(timeout=120) == 0, follower.stderr.read()
    finally:
        if follower.poll() is None:
            follower.kill()
    reader.join(10)
    assert got.index("[long-master-0] master starts\n") < got.index("[long-master-0] epoch 1 done\n")
    assert len(got) == 3
    assert cli(pod_world, "status", jobs, "--format", "json").json["jobs"][0]["state"] == "Succeeded"


def _until(check: Any, got: list[str], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: {got}"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def talk(pod_world, tmp_path_factory) -> Any:
    """One PyTorchJob on two nodes (a Master, one Worker), running, in a namespace of its own."""
    import uuid

    ns = f"logs-{uuid.uuid4().hex[:6]}"
    pod_world.kubectl("create", "namespace", ns)
    root = tmp_path_factory.mktemp("repo")
    jobs = project(root, ns)
    source = write(jobs, "talk.yaml", spec("talk", nodes=2, pod={stages.RUN_SECONDS: "forever"}))
    with train_controller(pod_world, ns):
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2m").code == 0
        yield root, ns, source
    pod_world.kubectl("delete", "namespace", ns, "--wait=false", check=False)


@pytest.mark.parametrize(("args", "said"), [
    (("--replica", "chief"), "PyTorchJob has no replica type chief (its types: Master, Worker); {ns}/talk has "
                             "Master x1, Worker x1"),
    (("--index", "5"), "{ns}/talk has 1 Master pod (index 0), 1 Worker pod (index 0); no index 5"),
    (("--replica", "worker", "--index", "1"), "{ns}/talk has 1 Worker pod (index 0); no index 1"),
    (("-c", "sidecar"), "{ns}/talk's pods have no container sidecar (containers: init-pytorch, pytorch)"),
], ids=["a replica type the kind does not have", "an index past every replica type's",
        "an index past the worker's", "a container the pods do not have"])
@pytest.mark.parametrize("follow", [(), ("--follow",)], ids=["printed", "followed"])
def test_a_selection_the_job_cannot_have_is_one_line_and_exit_1_never_a_wait(pod_world, talk, args, said, follow):
    _, ns, source = talk
    started = time.monotonic()
    outcome = cli(pod_world, "logs", f"{ns}/talk", *args, *follow)
    assert (outcome.code, outcome.stdout) == (1, "")
    assert outcome.stderr == f"train-compile: {said.format(ns=ns)}\n"
    assert time.monotonic() - started < 30  # no wait for pods that cannot come


def test_a_spec_path_that_does_not_exist_is_one_line_and_exit_1(pod_world, talk):
    root, _, _ = talk
    outcome = cli(pod_world, "logs", root / "jobs" / "nope.yaml")
    assert (outcome.code, outcome.stdout) == (1, "")
    assert outcome.stderr == (f"train-compile: no spec file or folder {root / 'jobs' / 'nope.yaml'}; give JOB as "
                              "[namespace/]name, or an existing spec file or folder\n")


def test_a_job_name_alone_is_looked_up_in_the_projects_namespace(pod_world, talk, monkeypatch):
    root, ns, _ = talk
    monkeypatch.chdir(root)  # the repository holding jobs/trainforge.yaml, whose namespace is ns
    outcome = cli(pod_world, "logs", "talk", "--replica", "master", "--tail", "1")
    assert (outcome.code, outcome.stderr) == (0, "")
    assert outcome.stdout == "container pytorch started: python train.py\n"
    missing = cli(pod_world, "logs", "nobody")
    assert missing.code == 1
    assert missing.stderr.startswith(f"train-compile: no job {ns}/nobody in the cluster at https://")
    assert "; the namespace is the project's, jobs/trainforge.yaml)" in missing.stderr


def test_follow_ends_when_the_job_has_finished_though_its_pods_are_kept_running(pod_world, pod_namespace, tmp_path):
    """activeDeadline fails the job; cleanPods None keeps its pods, still Running (kwok follows their
    log files for ever): the follow stops on the job's Failed condition."""
    jobs = project(tmp_path / "repo", pod_namespace)
    source = write(jobs, "late.yaml", spec("late", pod={stages.RUN_SECONDS: "forever"},
                                           extra={"policy": {"restart": "OnFailure", "backoffLimit": 0,
                                                             "activeDeadline": "5s", "cleanPods": "None"}}))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        follower = process(pod_world, "logs", source, "--follow")
        try:
            code = follower.wait(timeout=120)
        finally:
            if follower.poll() is None:
                follower.kill()
        outcome = cli(pod_world, "status", jobs, "--format", "json")
    assert code == 0, follower.stderr.read()
    assert follower.stdout.read() == "container pytorch started: python train.py\n"
    [job] = outcome.json["jobs"]
    assert job["state"] == "Failed" and job["pods"] == {"Master": {"Running": 1}}, job
