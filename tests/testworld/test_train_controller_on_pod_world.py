"""train-controller, run as a user runs it, on the pod world: an upstream example job goes
Created -> Running -> Succeeded with pods placed by kube-scheduler and run by kwok; no
test writes a pod status."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from foundation.cluster.kube import PODS
from testworld import stages
from testworld.paths import REPO_ROOT, shared_dir

EXAMPLE = "pytorch__simple.yaml"


@pytest.fixture
def train_controller(pod_world, pod_namespace, tmp_path) -> Iterator[subprocess.Popen[bytes]]:
    log = (tmp_path / "train-controller.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "controller", "--kubeconfig", str(pod_world.kubeconfig), "--namespace", pod_namespace,
         "--workers", "2"],
        stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT,
    )
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def example_job(namespace: str) -> dict[str, Any]:
    job = yaml.safe_load((shared_dir() / "reference" / "upstream-examples" / EXAMPLE).read_text())
    job["metadata"]["namespace"] = namespace
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        # long enough that the controller sees the pods Running before they exit 0
        spec["template"].setdefault("metadata", {}).setdefault("annotations", {})[stages.RUN_SECONDS] = "3"
    return job


def test_an_upstream_pytorchjob_goes_created_running_succeeded_on_pods_run_by_kwok(pod_world, pod_namespace,
                                                                                   train_controller, tmp_path):
    job = example_job(pod_namespace)
    name = job["metadata"]["name"]
    pod_world.kubectl("apply", "-f", "-", input=json.dumps(job))
    seen: list[str] = []
    deadline = time.monotonic() + 90
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        assert train_controller.poll() is None, (tmp_path / "train-controller.log").read_text()[-3000:]
        current = json.loads(pod_world.kubectl("get", "pytorchjob", name, "-n", pod_namespace, "-o", "json").stdout)
        status = current.get("status") or {}
        true = [c["type"] for c in status.get("conditions") or [] if c["status"] == "True"]
        if true and (not seen or seen[-1] != true[-1]):
            seen.append(true[-1])
        if "Succeeded" in true:
            break
        time.sleep(0.2)
    # polled: Created may turn into Running between two looks, so the final list proves the order
    assert seen[-2:] == ["Running", "Succeeded"], (seen, status, Path(tmp_path / "train-controller.log"))
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert status["replicaStatuses"]["Master"].get("succeeded") == 1
    pods = pod_world.client.list(PODS, namespace=pod_namespace)["items"]
    assert sorted(p["metadata"]["name"] for p in pods) == [f"{name}-master-0", f"{name}-worker-0"]
    for p in pods:
        assert p["spec"]["nodeName"]  # bound by kube-scheduler
        [container] = p["status"]["containerStatuses"]
        assert container["state"]["terminated"]["exitCode"] == 0
