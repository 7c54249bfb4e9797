"""Progress on the kubeflow-v1 target: train-controller serving the Trainer's protocol, pods on kwok.

A PyTorchJob compiled for `controller: train-controller` is applied; train-controller (the
process a user runs, the project's CRDs, progress on) makes its pods and kwok runs them. The
compiler gave each pod the Trainer's environment pointing at train-controller's Service and a
projected token volume; the controller wrote its CA into the namespace. The simulated training
process is `clients/python/examples/train.py` run as a process with the pod's environment (the URL's
host made 127.0.0.1, as a Service would route it), the CA the controller published, and a token
the API server mints for the pod with the audience the pod's volume asks for. Then
`train-compile status` shows the progress (text and JSON), and `plan --live` prices removing
the job: what the kill throws away.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from controller_kit import wait_for
from e2e_kit import running
from progress_kit import SERVICEACCOUNTS, mint
from status_kit import apply, cli, project, spec, write

from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, PODS, Client
from foundation.progress.endpoint import AUDIENCE, CA_CONFIGMAP, CA_KEY
from foundation.progress.protocol import ENV_CA_CERT, ENV_TOKEN, ENV_URL, VOLUME_NAME
from testworld import stages
from testworld.controlplane import free_port
from testworld.kwok import Kwok
from testworld.paths import REPO_ROOT
from testworld.scheduler import Scheduler
from testworld.train_controller import TrainController
from testworld.world import World

pytestmark = pytest.mark.both_orders
CRDS = REPO_ROOT / "controller" / "install" / "crds"
TRAIN = REPO_ROOT / "clients" / "python" / "examples" / "train.py"


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[World, int]]:
    with running(World([Scheduler(), Kwok(run_seconds=None)], upstream_crds=False, crds=[CRDS]),
                 "the train-controller progress world") as world:
        world.kubectl("create", "namespace", "trainforge-system")
        port = free_port()
        part = TrainController(None, workers=2, name="train-controller-progress", extra_args=(
            f"--progress-bind-address=127.0.0.1:{port}", "--progress-interval=1s",
            "--leader-election-namespace=trainforge-system",
            *(["--no-pods-first"] if os.environ.get("TRAINFORGE_TEST_UPSTREAM_ORDER") == "1" else [])))
        part.start(world)
        try:
            yield world, port
        finally:
            part.stop()


def _env(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}


def test_a_training_script_reports_through_train_controller_and_status_and_plan_show_it(world, tmp_path: Path) -> None:
    world, port = world
    ns = f"v1p-{uuid.uuid4().hex[:6]}"
    world.kubectl("create", "namespace", ns)
    client = Client.connect(str(world.kubeconfig))
    try:
        try:  # no service-account controller here: the account the compiled pods name
            client.create(SERVICEACCOUNTS, ns, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                "metadata": {"name": "default"}})
        except errors.AlreadyExists:
            pass
        jobs = project(tmp_path / "repo", ns)
        write(jobs, "bert.yaml", spec("bert", nodes=2, gpu=0, pod={stages.RUN_SECONDS: "forever"}))
        write(jobs, "keep.yaml", spec("keep", nodes=1, pod={stages.RUN_SECONDS: "forever"}))  # git keeps a job
        subprocess.run(["git", "-C", str(jobs.parent), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(jobs.parent), "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm",
                        "bert"], check=True)
        apply(world, jobs)
        pods = wait_for(lambda: (lambda items: items if len(items) == 2 else None)(
            [p for p in client.list(PODS, namespace=ns)["items"]
             if p["status"].get("phase") == "Running" and p["metadata"]["name"].startswith("bert-")]),
            timeout=120, what="both pods Running")
        master = next(p for p in pods if p["metadata"]["name"] == "bert-master-0")
        env = _env(master)
        assert urlsplit(env[ENV_URL]).netloc == "train-controller.trainforge-system.svc:10443"
        volume = next(v for v in master["spec"]["volumes"] if v["name"] == VOLUME_NAME)
        audience = next(s["serviceAccountToken"]["audience"] for s in volume["projected"]["sources"]
                        if "serviceAccountToken" in s)
        assert audience == AUDIENCE
        ca = wait_for(lambda: _maybe(client, ns), what="the CA ConfigMap")["data"][CA_KEY]
        (tmp_path / "ca.crt").write_text(ca)
        (tmp_path / "token").write_text(mint(client, master, audience=audience))
        url = f"https://127.0.0.1:{port}{urlsplit(env[ENV_URL]).path}"
        done = subprocess.run(
            [sys.executable, str(TRAIN), "--steps", "50", "--step-seconds", "0.02", "--stop-at", "62"],
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "clients" / "python"), ENV_URL: url,
                 ENV_CA_CERT: str(tmp_path / "ca.crt"), ENV_TOKEN: str(tmp_path / "token"), "RANK": "0"},
            capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "refused" not in done.stderr and "could not" not in done.stderr, done.stderr
        stored = wait_for(lambda: (lambda s: s if s and s.get("progressPercentage") == 62 else None)(
            (client.get(_pytorchjobs(), ns, "bert").get("status") or {}).get("trainerStatus")),
            timeout=30, what="the last report stored (the interval is 1 s)")
        assert stored["estimatedRemainingSeconds"] >= 0
        assert {m["name"] for m in stored["metrics"]} == {"loss", "step", "epoch"}

        shown = cli(world, "status", jobs, "--format", "json")
        entry = next(j for j in shown.json["jobs"] if j["name"] == "bert")
        assert entry["progress"]["percentage"] == 62
        assert {"name": "step", "value": "31"} in entry["progress"]["metrics"]
        text = cli(world, "status", jobs).stdout
        assert "  progress: 62%, " in text and "step 31" in text, text

        (jobs / "bert.yaml").unlink()  # the merge under review removes the job
        plan = cli(world, "plan", jobs, "--base", "HEAD", "--live", "--format", "json")
        assert plan.code in (0, 1) and isinstance(plan.json, dict), (plan.stdout[:1500], plan.stderr)
        job = next(j for env in plan.json["environments"] for j in env["jobs"] if j["name"] == "bert")
        assert job["hazards"] == ["kills-run"]
        assert job["throwsAway"].startswith(f"kills {ns}/bert at 62%, ") and "left" in job["throwsAway"], job
        assert "kills bert at 62%" in job["summary"]
        markdown = cli(world, "plan", jobs, "--base", "HEAD", "--live", "--format", "markdown").stdout
        assert f"**Throws away:** kills {ns}/bert at 62%" in markdown
    finally:
        world.kubectl("delete", "namespace", ns, "--wait=false")
        client.close()


def _pytorchjobs():
    from controller.jobs.kinds import KINDS, job_resource

    return job_resource(KINDS["PyTorchJob"])


def _maybe(client: Client, ns: str) -> dict[str, Any] | None:
    try:
        return client.get(CONFIGMAPS, ns, CA_CONFIGMAP)
    except errors.NotFound:
        return None
