"""`train-compile status` and `logs` on a trainer-v2 environment: TrainJobs the real Kubeflow
Trainer v2.3.0 turned into a JobSet, batch/v1 Jobs and pods that kube-scheduler places and
kwok runs (no GitOps engine: the test applies the compiled tree as one would). A TrainJob
reads Running while its child Jobs are active (Trainer writes no condition for it) and
Succeeded once Complete; its pods are grouped by replicated job with their completion
index; one that no node fits says so with the scheduler's message. Pods run until the
test ends them (`run-seconds` on the pods), so the Running state is seen for certain."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_kit import running
from status_kit import apply, cli, project, spec, write

from testworld import podlogs, stages
from testworld.controller_manager import TRAINER_CONTROLLERS, ControllerManager
from testworld.kwok import Kwok
from testworld.scheduler import Scheduler
from testworld.trainer import Trainer
from testworld.world import World


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    parts = [ControllerManager(controllers=TRAINER_CONTROLLERS), Scheduler(), Kwok(run_seconds=None), Trainer()]
    with running(World(parts), "the Trainer v2 world") as world:
        yield world


@pytest.fixture
def repo(world: World, tmp_path: Path) -> tuple[Path, str]:
    ns = f"v2-{uuid.uuid4().hex[:6]}"
    world.kubectl("create", "namespace", ns)
    return project(tmp_path / "repo", ns, target="trainer-v2"), ns


def job(outcome: Any, name: str) -> dict[str, Any]:
    return next(j for j in outcome.json["jobs"] if j["name"] == name)


def test_a_trainjob_runs_to_succeeded_with_its_node_pods_and_their_logs(world, repo, tmp_path):
    jobs, ns = repo
    source = write(jobs, "llm.yaml", spec("llm", nodes=2, restart=None))
    log = tmp_path / "node.log"
    podlogs.serve_namespace(world.client, log, namespace=ns)
    podlogs.write(log, ["torchrun: 2 nodes", "step 1 loss 1.2"])
    apply(world, jobs)
    assert cli(world, "status", jobs, "--wait", "Running", "--timeout", "3m").code == 0
    running_now = cli(world, "status", jobs, "--format", "json")
    entry = job(running_now, "llm")
    assert (entry["kind"], entry["source"], entry["state"]) == ("TrainJob", "jobs/llm.yaml", "Running")
    assert entry["message"] == "child Jobs are active (jobsStatus)"
    printed = cli(world, "logs", source, "--index", "1")
    assert printed.code == 0 and printed.stdout == "torchrun: 2 nodes\nstep 1 loss 1.2\n"
    # the program ends: kwok exits each pod (pods run until their run-seconds say otherwise here)
    world.kubectl("annotate", "pods", "-n", ns, "-l", "jobset.sigs.k8s.io/jobset-name=llm", f"{stages.RUN_SECONDS}=0")
    done = cli(world, "status", jobs, "--wait", "Succeeded", "--timeout", "3m", "--format", "json")
    assert done.code == 0, done.stderr
    entry = job(done, "llm")
    assert (entry["state"], entry["pods"], entry["drift"]) == ("Succeeded", {"node": {"Succeeded": 2}}, [])
    printed = cli(world, "logs", source, "--tail", "1")
    lines = printed.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("[llm-node-0-") and line.endswith("] step 1 loss 1.2")
                                   for line in lines), lines


def test_a_trainjob_no_node_fits_is_stuck_unschedulable_on_each_node_pod(world, repo):
    jobs, ns = repo
    write(jobs, "huge.yaml", spec("huge", nodes=2, gpu=8, gpu_type="b200", restart=None))
    apply(world, jobs)
    deadline = time.monotonic() + 180
    # stuck once a pod has waited the threshold (foundation.runs.stuck: 3 min by default; 0 calls
    # none stuck): one second, so the scheduler's verdict is stuck at the first read that shows it
    while len(job(outcome := cli(world, "status", jobs, "--format", "json", "--stuck-pod-threshold", "1s"),
                  "huge").get("waiting", [])) < 2 or not all(w["stuck"] for w in job(outcome, "huge")["waiting"]):
        assert time.monotonic() < deadline, outcome
        time.sleep(1)
    assert outcome.code == 3, outcome
    waiting = job(outcome, "huge")["waiting"]
    assert sorted((w["replicaType"], w["index"], w["reason"], w["stuck"]) for w in waiting) == [
        ("node", 0, "Unschedulable", True), ("node", 1, "Unschedulable", True)]
    assert all(w["message"].startswith("0/14 nodes are available:") for w in waiting), waiting
