"""The Kubeflow Python SDK (`kubeflow-training` 1.9.4), pointed at the test API server,
reads our status exactly as it reads the upstream operator's: conditions, created /
running / succeeded / failed, master pod lookup by label, typed replica statuses.

The SDK pins kubernetes<36, so it runs in a venv of its own (tests/controller/sdk/,
built once by testworld.pyenvs from its locked requirements) as a long-lived process the
tests call one JSON line at a time; the project's own environment resolves like a user's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from controller_kit import job
from testworld import pyenvs

SDK_DIR = Path(__file__).resolve().parent / "sdk"


class SdkError(Exception):
    """An exception the SDK raised, by type name and message."""


class Sdk:
    """`TrainingClient` methods, called in the SDK's own process."""

    def __init__(self, proc: subprocess.Popen[str], config_file: str, namespace: str) -> None:
        self.proc, self.config_file, self.namespace = proc, config_file, namespace

    def __getattr__(self, call: str) -> Any:
        def remote(*args: Any, **kwargs: Any) -> Any:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps({"config_file": self.config_file, "namespace": self.namespace,
                                              "call": call, "args": args, "kwargs": kwargs}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the SDK process ended: {self.proc.stderr.read() if self.proc.stderr else ''}")
            reply = json.loads(line)
            if "error" in reply:
                raise SdkError(f"{reply['error']}: {reply['message']}")
            return reply["value"]
        return remote


@pytest.fixture(scope="module")
def sdk_process():
    root = pyenvs.venv("kubeflow-sdk", (SDK_DIR / "requirements.txt").read_text())
    proc = subprocess.Popen([str(root / "bin" / "python"), str(SDK_DIR / "probe.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=pyenvs.uv_env())
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


SDK_KINDS = [  # (kind, replicas, pods to run, pods that finish the job, master pod)
    ("PyTorchJob", {"Master": 1, "Worker": 1}, ["sdk-master-0", "sdk-worker-0"], ["sdk-master-0"], "sdk-master-0"),
    ("TFJob", {"Chief": 1, "Worker": 1}, ["sdk-chief-0", "sdk-worker-0"], ["sdk-chief-0"], "sdk-chief-0"),
    ("XGBoostJob", {"Master": 1, "Worker": 1}, ["sdk-master-0", "sdk-worker-0"], ["sdk-master-0"], "sdk-master-0"),
    ("PaddleJob", {"Worker": 2}, ["sdk-worker-0", "sdk-worker-1"], ["sdk-worker-0", "sdk-worker-1"], None),
    ("JAXJob", {"Worker": 2}, ["sdk-worker-0", "sdk-worker-1"], ["sdk-worker-0", "sdk-worker-1"], "sdk-worker-0"),
    ("MPIJob", {"Launcher": 1, "Worker": 1}, ["sdk-launcher", "sdk-worker-0"], ["sdk-launcher"], "sdk-launcher"),
]


# The SDK's generated models require spec.runPolicy (the Go field has no omitempty), so
# its get_job fails on any job applied without one, against upstream as against us. Its
# own create_job always sets it; so do these tests.
RUN_POLICY = {"cleanPodPolicy": "None"}


@pytest.fixture
def sdk(sdk_process, control_plane, namespace) -> Sdk:
    return Sdk(sdk_process, str(control_plane.kubeconfig), namespace)


@pytest.mark.parametrize("kind,replicas,run,finish,master", SDK_KINDS, ids=[k[0] for k in SDK_KINDS])
def test_sdk_reports_conditions_and_success(cluster, manager, sdk, kind, replicas, run, finish, master) -> None:
    cluster.apply(job(kind, "sdk", run_policy=RUN_POLICY, **replicas))
    cluster.wait_pods(set(run))
    cluster.wait_condition(kind, "sdk", "Created")
    assert sdk.is_job_created("sdk", job_kind=kind)
    assert not sdk.is_job_running("sdk", job_kind=kind)
    if master:
        assert sdk.get_job_pod_names("sdk", is_master=True) == [master]
    cluster.run_all(*run)
    cluster.wait_condition(kind, "sdk", "Running")
    assert sdk.is_job_running("sdk", job_kind=kind)
    for pod in finish:
        cluster.set_phase(pod, "Succeeded")
    cluster.wait_condition(kind, "sdk", "Succeeded")
    finished = sdk.wait_for_job_conditions("sdk", job_kind=kind, wait_timeout=10, polling_interval=1)
    assert sdk.is_job_succeeded("sdk", job_kind=kind)
    assert not sdk.is_job_running("sdk", job_kind=kind) and not sdk.is_job_failed("sdk", job_kind=kind)
    conditions = sdk.get_job_conditions("sdk", job_kind=kind)
    assert [(c["type"], c["status"], c["reason"]) for c in conditions] == [
        ("Created", "True", f"{kind}Created"), ("Running", "False", f"{kind}Running"), ("Succeeded", "True", f"{kind}Succeeded")]
    assert finished["status"]["startTime"] and finished["status"]["completionTime"]
    assert set(finished["status"]["replicaStatuses"]) == set(replicas)


def test_sdk_reports_failure(cluster, manager, sdk) -> None:
    cluster.apply(job("PyTorchJob", "sdk", Master=1, Worker=1, restart="Never", run_policy=RUN_POLICY))
    cluster.wait_pods({"sdk-master-0", "sdk-worker-0"})
    cluster.run_all("sdk-master-0", "sdk-worker-0")
    cluster.set_phase("sdk-master-0", "Failed", exit_code=3)
    cluster.wait_condition("PyTorchJob", "sdk", "Failed")
    assert sdk.is_job_failed("sdk") and not sdk.is_job_succeeded("sdk")
    with pytest.raises(SdkError, match=r"RuntimeError: .*PyTorchJob .*/sdk is Failed"):
        sdk.wait_for_job_conditions("sdk", wait_timeout=5, polling_interval=1)
    pods = sdk.get_job_pod_names("sdk", replica_type="worker")
    assert pods == ["sdk-worker-0"]


def test_job_created_through_the_sdk_is_reconciled(cluster, manager, sdk) -> None:
    sdk.create_pytorchjob("via-sdk", "example.com/pt:1")  # built from the SDK's own models, sent by create_job
    cluster.wait_pods({"via-sdk-master-0", "via-sdk-worker-0"})
    cluster.run_all("via-sdk-master-0", "via-sdk-worker-0")
    cluster.set_phase("via-sdk-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "via-sdk", "Succeeded")
    assert sdk.is_job_succeeded("via-sdk")
    assert sdk.get_job_pod_names("via-sdk", is_master=True) == ["via-sdk-master-0"]
