"""Every upstream example manifest (written for the Training Operator and relying on its
defaults) is accepted unchanged by the API server and reconciled into the pods, services
and environment upstream creates: names from the defaulted replica counts, the four
labels, restart policies, default ports, per-framework rendezvous variables; the whole
normalized result is also pinned as a YAML snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from controller_kit import PODS_FIRST, wait_for

from controller.jobs.kinds import KINDS, job_resource, select
from controller.manager import Manager
from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, PODS, SERVICES, Client
from testworld.pytest_plugin import shared_dir

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

EXAMPLES = shared_dir() / "reference" / "upstream-examples"
FILES = sorted(EXAMPLES.glob("*.yaml"))
DEFAULT_RESTART = {k.name: k.facts.default_restart for k in KINDS.values()}


def expected_pods(doc: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """pod name -> (replica type label, pod restartPolicy), from upstream's defaulting rules."""
    kind = KINDS[doc["kind"]]
    name, out = doc["metadata"]["name"], {}
    for rtype, spec in doc["spec"][kind.facts.replica_specs].items():
        policy = spec.get("restartPolicy") or DEFAULT_RESTART[kind.name]
        policy = "Never" if policy == "ExitCode" else policy
        if kind.name == "MPIJob" and rtype == "Launcher":
            out[f"{name}-launcher"] = ("launcher", policy)
            continue
        count = spec.get("replicas")
        count = (0 if kind.name == "MPIJob" else 1) if count is None else count
        for i in range(count):
            out[f"{name}-{rtype.lower()}-{i}"] = (rtype.lower(), policy)
    return out


def normalize(obj: dict[str, Any]) -> dict[str, Any]:
    """The parts a controller decides (server-set fields dropped, JSON env parsed)."""
    meta = obj["metadata"]
    out: dict[str, Any] = {"name": meta["name"], "labels": meta.get("labels")}
    if meta.get("annotations"):
        out["annotations"] = meta["annotations"]
    out["owner"] = [f"{r['kind']}/{r['name']} controller={r.get('controller')}" for r in meta.get("ownerReferences", [])]
    spec = obj["spec"]
    if obj.get("kind") == "Service" or "clusterIP" in spec:
        out["spec"] = {"clusterIP": spec["clusterIP"], "selector": spec.get("selector"),
                       "ports": sorted(f"{p.get('name', '')}:{p['port']}" for p in spec.get("ports") or [])}
        return out
    keep = ("restartPolicy", "serviceAccountName", "initContainers", "containers", "volumes")
    out["spec"] = {k: spec[k] for k in keep if k in spec}
    for c in out["spec"].get("containers", []) + out["spec"].get("initContainers", []):
        for drop in ("terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy"):
            c.pop(drop, None)
        for e in c.get("env") or []:
            if e["name"] in ("TF_CONFIG", "MX_CONFIG"):
                e["value"] = json.loads(e["value"])
    return out


@pytest.fixture
def example_namespace(request, control_plane, namespace: str):
    """The manifest's own namespace if it names one (created if missing), else the test's."""
    doc = yaml.safe_load(request.param.read_text())
    ns = doc["metadata"].get("namespace") or namespace
    if ns != namespace:
        control_plane.kubectl("create", "namespace", ns, check=False)
    return doc, ns


@pytest.mark.parametrize("example_namespace", FILES, ids=[f.stem for f in FILES], indirect=True)
def test_upstream_example_is_accepted_and_reconciled(control_plane, example_namespace, yaml_snapshot) -> None:
    doc, ns = example_namespace
    kind = KINDS[doc["kind"]]
    client = Client.connect(str(control_plane.kubeconfig))
    mgr = Manager(client, select(kind.adapter.name), namespace=ns, workers=2, watch_timeout=60, pods_first=PODS_FIRST)
    res = job_resource(kind)
    name = doc["metadata"]["name"]
    mgr.start()
    try:
        applied = client.create(res, ns, doc)  # unchanged: exactly the upstream file
        want = expected_pods(doc)
        pods = wait_for(lambda: (lambda p: p if set(p) == set(want) else None)(
            {o["metadata"]["name"]: o for o in client.list(PODS, namespace=ns, label_selector=f"training.kubeflow.org/job-name={name}")["items"]}),
            what=f"pods {sorted(want)}")
        services = {} if kind.name == "MPIJob" else wait_for(lambda: (lambda s: s if set(s) == set(want) else None)(
            {o["metadata"]["name"]: o for o in client.list(SERVICES, namespace=ns, label_selector=f"training.kubeflow.org/job-name={name}")["items"]}),
            what="services")
        _check_semantics(doc, kind, applied, pods, services, want, ns)
        assert client.get(res, ns, name)["spec"] == applied["spec"], "the controller never writes the spec"
        tree = {"pods": [normalize(pods[n]) for n in sorted(pods)], "services": [normalize(services[n]) for n in sorted(services)]}
        if kind.name == "MPIJob":
            tree["configmap"] = client.get(CONFIGMAPS, ns, f"{name}-config")["data"]
        text = yaml.safe_dump(tree, sort_keys=True, width=120).replace(ns, "<namespace>")
        assert text == yaml_snapshot
    finally:
        mgr.stop()
        _cleanup(client, res, ns, name)
        client.close()


def _check_semantics(doc, kind, applied, pods, services, want, ns) -> None:
    facts, name = kind.facts, doc["metadata"]["name"]
    for pod_name, (rt, policy) in want.items():
        pod = pods[pod_name]
        labels = pod["metadata"]["labels"]
        assert labels["training.kubeflow.org/operator-name"] == facts.operator_name
        assert labels["training.kubeflow.org/job-name"] == name
        assert labels["training.kubeflow.org/replica-type"] == rt
        assert pod["spec"]["restartPolicy"] == policy
        assert pod["metadata"]["ownerReferences"][0]["uid"] == applied["metadata"]["uid"]
        if kind.name == "MPIJob":
            continue
        assert labels["training.kubeflow.org/replica-index"] == pod_name.rsplit("-", 1)[1]
        main = next(c for c in pod["spec"]["containers"] if c["name"] == facts.container)
        assert facts.port_name in [p.get("name") for p in main.get("ports") or []], "default port added"
        svc_ports = {(p["name"], p["port"]) for p in services[pod_name]["spec"]["ports"]}
        assert svc_ports == {(p.get("name", ""), p["containerPort"]) for p in main["ports"]}
        env = {e["name"]: e.get("value", "") for e in main.get("env") or []}
        if kind.name == "TFJob":
            total = sum(r.get("replicas", 1) for r in doc["spec"]["tfReplicaSpecs"].values())
            if total == 1:
                assert "TF_CONFIG" not in env
            else:
                config = json.loads(env["TF_CONFIG"])
                assert config["task"] == {"type": rt, "index": int(pod_name.rsplit("-", 1)[1])}
                assert sorted(config["cluster"]) == sorted(t.lower() for t in doc["spec"]["tfReplicaSpecs"])
                assert config["cluster"]["worker" if "worker" in config["cluster"] else rt][0].endswith(f".{ns}.svc:2222")
        elif kind.name == "PyTorchJob":
            total = sum(r.get("replicas", 1) for r in doc["spec"]["pytorchReplicaSpecs"].values())
            if "Master" in doc["spec"]["pytorchReplicaSpecs"]:
                nproc = int(doc["spec"].get("nprocPerNode", "1")) if str(doc["spec"].get("nprocPerNode", "1")).isdigit() else 1
                assert env["MASTER_ADDR"] == f"{name}-master-0" and env["WORLD_SIZE"] == str(total * nproc)
            else:
                assert env["PET_RDZV_ENDPOINT"] == f"{name}-worker-0:23456"
        elif kind.name == "XGBoostJob":
            assert env["MASTER_ADDR"] == f"{name}-master-0" and env["MASTER_PORT"] == "9991"
        elif kind.name == "JAXJob":
            assert env["COORDINATOR_ADDRESS"] == f"{name}-worker-0"
        elif kind.name == "PaddleJob":
            assert env["PADDLE_MASTER"].endswith(":37777")
        elif kind.name == "MXJob":
            assert json.loads(env["MX_CONFIG"])["task"]["type"] == rt


def _cleanup(client: Client, res, ns: str, name: str) -> None:
    """No garbage collector in the test control plane: remove what the job owned."""
    try:
        client.delete(res, ns, name)
    except errors.NotFound:
        pass
    for child in (PODS, SERVICES):
        for obj in client.list(child, namespace=ns, label_selector=f"training.kubeflow.org/job-name={name}")["items"]:
            try:
                client.delete(child, ns, obj["metadata"]["name"])
            except errors.NotFound:
                pass


def test_every_snapshot_file_belongs_to_an_example() -> None:
    """syrupy does not report unused single-file snapshots; a removed example must not leave one."""
    folder = Path(__file__).resolve().parents[1] / "__snapshots__" / "test_controller_upstream_examples"
    expected = {f"test_upstream_example_is_accepted_and_reconciled[{f.stem}].yaml" for f in FILES}
    assert {p.name for p in folder.iterdir()} == expected
