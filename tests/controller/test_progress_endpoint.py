"""train-controller's progress endpoint against a real API server, with real pod-bound tokens.

One control plane with the project's CRDs (which keep `status.trainerStatus`; upstream's
prune it), the controller in this process serving HTTPS on 127.0.0.1, PyTorchJobs whose pods
it creates, and tokens the API server mints for those pods (tests/controller/progress_kit.py).
Each refusal is checked where it matters: the answer, the job's stored status unchanged,
and the refusal counted in the metrics.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controller_kit import PODS_FIRST, job, wait_for
from progress_kit import SERVICEACCOUNTS, Poster, claims, expired, mint, report, resigned
from prometheus_client import generate_latest

import trainforge_progress
from controller.jobs.kinds import select
from controller.manager import Manager
from controller.progress import certs
from controller.progress.server import serve
from controller.progress.service import ProgressOptions
from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, PODS, Client
from foundation.progress.endpoint import CA_CONFIGMAP, CA_KEY, path
from testworld.controlplane import ControlPlane
from testworld.world import World

pytestmark = pytest.mark.both_orders
CRDS = Path(__file__).parents[2] / "controller" / "install" / "crds"
NS, OWN_NS = "train", "trainforge-system"
INTERVAL = 2.0
PYTORCHJOBS = "pytorchjobs"


class Env:
    def __init__(self, world: World, client: Client, manager: Manager, poster: Poster, ca: bytes) -> None:
        self.world, self.client, self.manager, self.poster, self.ca = world, client, manager, poster, ca

    def job(self, name: str, workers: int = 1) -> dict[str, Any]:
        body = job("PyTorchJob", name, restart="OnFailure", Master=1, Worker=workers)
        for spec in body["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["serviceAccountName"] = "trainer"
        created = self.client.create(self.jobs, NS, body)
        names = {f"{name}-master-0", *(f"{name}-worker-{i}" for i in range(workers))}
        wait_for(lambda: names <= set(self.pods()), what=f"the pods of {name}")
        return created

    @property
    def jobs(self):
        return self.manager.progress.endpoint.kinds[PYTORCHJOBS].resource  # type: ignore[union-attr]

    def pods(self) -> dict[str, dict[str, Any]]:
        return {p["metadata"]["name"]: p for p in self.client.list(PODS, namespace=NS)["items"]}

    def token(self, pod: str, **kwargs: Any) -> str:
        return mint(self.client, self.pods()[pod], **kwargs)

    def stored(self, name: str) -> dict[str, Any] | None:
        return (self.client.get(self.jobs, NS, name).get("status") or {}).get("trainerStatus")

    def post(self, name: str, token: str | None, body: Any, **kwargs: Any) -> tuple[int, dict[str, Any]]:
        return self.poster.post(path(NS, PYTORCHJOBS, name), token, body, **kwargs)

    def counted(self, code: int, reason: str) -> float:
        value = self.manager.metrics.registry.get_sample_value(
            "trainforge_progress_reports_total", {"code": str(code), "reason": reason})
        return value or 0.0


@pytest.fixture(scope="module")
def env(envtest_assets) -> Iterator[Env]:
    world = World([], upstream_crds=False, crds=[CRDS], plane=ControlPlane(assets=envtest_assets))
    world.start()
    client = Client.connect(str(world.kubeconfig))
    try:
        for ns in (NS, OWN_NS):
            world.kubectl("create", "namespace", ns)
        for sa in ("default", "trainer"):
            try:
                client.create(SERVICEACCOUNTS, NS, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}})
            except errors.AlreadyExists:
                pass
        cert = certs.self_managed(client, OWN_NS)
        manager = Manager(Client.connect(str(world.kubeconfig)), select("pytorch"), namespace=NS, workers=2,
                          watch_timeout=60, pods_first=PODS_FIRST,
                          progress=ProgressOptions(interval=INTERVAL, ca_pem=cert.ca_pem))
        manager.start()
        assert manager.progress is not None
        server, (_, port) = serve(manager.progress.endpoint, ("127.0.0.1", 0), cert.context())
        try:
            yield Env(world, client, manager, Poster(port, cert.ca_pem), cert.ca_pem)
        finally:
            server.shutdown()
            manager.stop()
            manager.client.close()
    finally:
        client.close()
        world.stop()


def test_a_report_from_the_jobs_pod_lands_in_the_jobs_status_as_kubectl_shows_it(env: Env, tmp_path) -> None:
    env.job("bert")
    (tmp_path / "token").write_text(env.token("bert-worker-0"))
    (tmp_path / "ca.crt").write_bytes(env.ca)
    reporter = trainforge_progress.Reporter(f"https://127.0.0.1:{env.poster.port}{path(NS, PYTORCHJOBS, 'bert')}",
                                            ca_file=str(tmp_path / "ca.crt"), token_file=str(tmp_path / "token"))
    assert reporter.report(progress=62, eta=11400, metrics={"loss": 0.2347, "accuracy": 0.9876}, force=True)
    assert reporter.last_code == 200
    stored = env.stored("bert")
    assert stored is not None and stored["progressPercentage"] == 62
    assert stored["estimatedRemainingSeconds"] == 11400
    assert stored["metrics"] == [{"name": "loss", "value": "0.2347"}, {"name": "accuracy", "value": "0.9876"}]
    shown = env.world.kubectl("get", "pytorchjob", "bert", "-n", NS, "-o", "yaml").stdout
    assert "trainerStatus:" in shown and "progressPercentage: 62" in shown
    # the controller's own status writes keep it (a reconcile after the report changes the status)
    pods = env.pods()
    for name in pods:
        env.client.patch(PODS, NS, name, {"status": {"phase": "Running"}}, sub="status")
    wait_for(lambda: any(c["type"] == "Running" for c in (env.client.get(env.jobs, NS, "bert")["status"].get("conditions") or [])),
             what="bert Running")
    assert env.stored("bert") == stored
    # and the metrics endpoint exports it per job
    text = generate_latest(env.manager.metrics.registry).decode()
    assert 'trainforge_job_progress_percentage{controller="pytorchjob",name="bert",namespace="train"} 62.0' in text
    assert 'trainforge_job_estimated_remaining_seconds{controller="pytorchjob",name="bert",namespace="train"} 11400.0' in text


def test_the_ca_the_pods_mount_is_published_in_the_jobs_namespace(env: Env) -> None:
    env.job("ca-check")
    cm = wait_for(lambda: _get(env.client, CONFIGMAPS, NS, CA_CONFIGMAP), what="the CA ConfigMap")
    assert cm["data"][CA_KEY] == env.ca.decode()


def _get(client: Client, res, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return client.get(res, ns, name)
    except errors.NotFound:
        return None


def test_a_burst_of_reports_costs_one_write_per_interval_and_the_last_one_wins(env: Env) -> None:
    env.job("burst", workers=3)
    tokens = [env.token(p) for p in ("burst-master-0", "burst-worker-0", "burst-worker-1", "burst-worker-2")]
    writes = lambda: env.manager.metrics.registry.get_sample_value("trainforge_progress_writes_total",  # noqa: E731
                                                                    {"result": "ok"}) or 0.0
    before = writes()
    started = time.monotonic()
    codes = []
    for i in range(40):
        when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{i:06d}Z"
        codes.append(env.post("burst", tokens[i % 4], report(i + 1, eta=1000 - i, when=when))[0])
    sent_in = time.monotonic() - started
    assert codes[0] == 200 and set(codes[1:]) <= {200, 202} and codes.count(200) <= 1 + int(sent_in / INTERVAL) + 1
    wait_for(lambda: (env.stored("burst") or {}).get("progressPercentage") == 40, timeout=INTERVAL * 3,
             what="the last report written")
    windows = (time.monotonic() - started) / INTERVAL
    assert writes() - before <= windows + 1, (writes() - before, windows)
    assert env.stored("burst")["estimatedRemainingSeconds"] == 961


@pytest.mark.parametrize("case", [
    "no token", "a forged token", "an expired token", "an expired token the controller's cache has not seen expire",
    "a token for another audience", "a token of another job's pod", "an oversized report", "300 metrics",
    "a metric value sent as a number", "a percentage past 100", "no lastUpdatedTime", "not JSON",
])
def test_a_bad_report_is_refused_with_its_reason_and_nothing_is_stored(env: Env, case: str) -> None:
    name = "victim"
    if _get(env.client, env.jobs, NS, name) is None:
        env.job(name)
        env.job("other")
        code, _ = env.post(name, env.token(f"{name}-master-0"), report(7))
        assert code == 200
    before = env.stored(name)
    good = env.token(f"{name}-master-0")
    key = env.world.plane._sa.key
    token, body, raw = good, report(55), None
    if case == "no token":
        token = None
        want = (401, "no-token")
    elif case == "a forged token":
        head, payload, sig = good.split(".")
        token = resigned(good, key, sub="system:serviceaccount:train:admin").rsplit(".", 1)[0] + "." + sig
        want = (401, "unauthenticated")
    elif case == "an expired token":
        token = expired(good, key)
        want = (401, "expired")
    elif case == "an expired token the controller's cache has not seen expire":
        token = expired(good, key)
        auth = env.manager.progress.auth  # type: ignore[union-attr]
        clock = auth.clock
        auth.clock = lambda: claims(token)["exp"] - 60.0  # the controller's clock behind: the API server decides
        want = (401, "unauthenticated")
    elif case == "a token for another audience":
        token = env.token(f"{name}-master-0", audience="https://kubernetes.default.svc")
        want = (401, "audience")
    elif case == "a token of another job's pod":
        token = env.token("other-master-0")
        want = (403, "not-the-jobs-pod")
    elif case == "an oversized report":
        raw = b'{"trainerStatus": {"metrics": [' + b'{"name": "x", "value": "1"},' * 3000 + b"]}}"
        want = (413, "too-large")
    elif case == "300 metrics":
        body = report(55, metrics={f"m{i}": "1" for i in range(300)})
        want = (422, "invalid")
    elif case == "a metric value sent as a number":
        body = report(55)
        body["trainerStatus"]["metrics"] = [{"name": "loss", "value": 0.5}]
        want = (422, "invalid")
    elif case == "a percentage past 100":
        body = report(101)
        want = (422, "invalid")
    elif case == "no lastUpdatedTime":
        body = {"trainerStatus": {"progressPercentage": 55}}
        want = (422, "invalid")
    else:
        raw = b"{not json"
        want = (422, "invalid")
    counted = env.counted(*want)
    try:
        code, answer = env.post(name, token, body, raw=raw)
    finally:
        if case.startswith("an expired token the"):
            env.manager.progress.auth.clock = clock  # type: ignore[union-attr]
    assert (code, answer.get("status")) == (want[0], "Failure"), answer
    assert answer.get("message")
    assert env.counted(*want) == counted + 1
    assert env.stored(name) == before  # refused before the store: nothing to wait for


def test_reports_for_a_finished_or_deleted_job_change_nothing(env: Env) -> None:
    env.job("done")
    master = env.token("done-master-0")
    assert env.post("done", master, report(99))[0] == 200
    for pod in ("done-master-0", "done-worker-0"):
        env.client.patch(PODS, NS, pod, {"status": {"phase": "Succeeded"}}, sub="status")
    wait_for(lambda: any(c["type"] == "Succeeded" and c["status"] == "True"
                         for c in env.client.get(env.jobs, NS, "done")["status"].get("conditions") or []),
             what="done Succeeded")
    wait_for(lambda: (lambda j: j and any(c["type"] == "Succeeded" for c in (j.get("status") or {}).get("conditions") or []))(
        env.manager.job_informers["PyTorchJob"].get(NS, "done")), what="the controller's cache sees it finished")
    code, answer = env.post("done", master, report(100))
    assert code == 409 and "has finished" in answer["message"]
    assert env.stored("done")["progressPercentage"] == 99
    env.client.delete(env.jobs, NS, "done")
    wait_for(lambda: env.manager.job_informers["PyTorchJob"].get(NS, "done") is None, what="the deletion seen")
    code, answer = env.post("done", master, report(100))
    assert code in (401, 403), answer  # its pods may linger (no garbage collector here): the job is gone either way
    assert _get(env.client, env.jobs, NS, "done") is None


def test_the_hugging_face_callback_reports_end_to_end(env: Env, tmp_path) -> None:
    """The callback driven as transformers drives it (tests/clients' stand-in loop), through a real
    Reporter, train-controller's endpoint and the API server."""
    from test_progress_callbacks import Clock, hf_train

    env.job("hf")
    (tmp_path / "token").write_text(env.token("hf-master-0"))
    (tmp_path / "ca.crt").write_bytes(env.ca)
    reporter = trainforge_progress.Reporter(f"https://127.0.0.1:{env.poster.port}{path(NS, PYTORCHJOBS, 'hf')}",
                                            ca_file=str(tmp_path / "ca.crt"), token_file=str(tmp_path / "token"))
    clock = Clock()
    hf_train(trainforge_progress.HuggingFaceProgress(reporter, clock=clock), clock, steps=4)
    stored = wait_for(lambda: (lambda s: s if s and s.get("progressPercentage") == 100 else None)(env.stored("hf")),
                      timeout=INTERVAL * 3, what="the final report (forced at on_train_end)")
    assert {"name": "eval_accuracy", "value": "0.91"} in stored["metrics"]
