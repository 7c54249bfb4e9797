"""Progress on the trainer-v2 target: the real Kubeflow Trainer v2.3.0 with TrainJobStatus on.

A compiled TrainJob is applied; the Trainer gives its pods the status server's URL, CA file
and a projected token (its own environment and volume: the compiler adds nothing on this
target). The simulated training process is the client library of `clients/python`, posting
with a token the API server mints for the pod (TokenRequest, bound to the pod, with the
audience the pod's projected volume asks for) and the CA the Trainer put in the pod's
ConfigMap; the Trainer writes `status.trainerStatus`, and `train-compile status` shows it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controller_kit import wait_for
from e2e_kit import running
from progress_kit import SERVICEACCOUNTS, mint
from status_kit import apply, cli, project, spec, write

import trainforge_progress
from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, PODS, Client, Resource
from foundation.progress.protocol import ENV_CA_CERT, ENV_TOKEN, ENV_URL, MOUNT_PATH, VOLUME_NAME
from testworld import stages
from testworld.controller_manager import TRAINER_CONTROLLERS, ControllerManager
from testworld.kwok import Kwok
from testworld.scheduler import Scheduler
from testworld.trainer import Trainer, status_url

from testworld.world import World

TRAINJOBS = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    parts = [ControllerManager(controllers=TRAINER_CONTROLLERS), Scheduler(), Kwok(run_seconds=None), Trainer()]
    with running(World(parts), "the Trainer v2 world") as world:
        yield world


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}


def test_a_training_process_reports_through_the_trainer_and_status_shows_it(world: World, tmp_path: Path) -> None:
    ns = f"v2p-{uuid.uuid4().hex[:6]}"
    world.kubectl("create", "namespace", ns)
    client = Client.connect(str(world.kubeconfig))
    try:
        client.create(SERVICEACCOUNTS, ns, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    except errors.AlreadyExists:
        pass
    jobs = project(tmp_path / "repo", ns, target="trainer-v2")
    write(jobs, "bert.yaml", spec("bert", nodes=2, restart=None, pod={stages.RUN_SECONDS: "forever"}))
    apply(world, jobs)
    try:
        pods = wait_for(lambda: (lambda items: items if len(items) == 2 else None)(
            [p for p in client.list(PODS, namespace=ns)["items"] if p["status"].get("phase") == "Running"]),
            timeout=180, what="both node pods Running")
        pod = pods[0]
        env = _env(pod)
        # the Trainer's own injection (nothing of the compiler's on this target)
        assert env[ENV_CA_CERT] == f"{MOUNT_PATH}/ca.crt" and env[ENV_TOKEN] == f"{MOUNT_PATH}/token"
        assert env[ENV_URL].endswith(f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/bert/status")
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == VOLUME_NAME)
        audience = next(s["serviceAccountToken"]["audience"] for s in volume["projected"]["sources"]
                        if "serviceAccountToken" in s)
        assert audience == f"trainer.kubeflow.org/v1alpha1/namespaces/{ns}/trainjobs/bert/status"
        ca = client.get(CONFIGMAPS, ns, "bert-tls-config")["data"]["ca.crt"]
        (tmp_path / "token").write_text(mint(client, pod, audience=audience))
        (tmp_path / "ca.crt").write_text(ca)
        trainer = world.parts["trainer"]
        reporter = trainforge_progress.Reporter(status_url(trainer, env[ENV_URL]), ca_file=str(tmp_path / "ca.crt"),
                                                token_file=str(tmp_path / "token"))
        assert reporter.report(progress=62, eta=11400, metrics={"loss": 0.2347, "eval_accuracy": "0.91"}), \
            (reporter.last_code, reporter.last_answer)
        job = wait_for(lambda: (lambda j: j if (j.get("status") or {}).get("trainerStatus") else None)(
            client.get(TRAINJOBS, ns, "bert")), timeout=30, what="the TrainJob's trainerStatus")
        status = job["status"]["trainerStatus"]
        assert (status["progressPercentage"], status["estimatedRemainingSeconds"]) == (62, 11400)
        assert status["metrics"] == [{"name": "loss", "value": "0.2347"}, {"name": "eval_accuracy", "value": "0.91"}]
        # a token for another audience (train-controller's) is refused by the Trainer
        (tmp_path / "token").write_text(mint(client, pod))
        assert not reporter.report(progress=70, force=True) and reporter.last_code == 403
        shown = cli(world, "status", jobs, "--format", "json")
        entry = next(j for j in shown.json["jobs"] if j["name"] == "bert")
        assert entry["progress"]["percentage"] == 62 and entry["progress"]["etaSeconds"] == 11400
        assert {"name": "loss", "value": "0.2347"} in entry["progress"]["metrics"]
    finally:
        world.kubectl("delete", "namespace", ns, "--wait=false")
        client.close()
