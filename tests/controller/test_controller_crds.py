"""The project's own CRDs: generated and up to date, at least as accepting as upstream's
(every upstream example and every compiled job validates against both schemas and is
accepted by a real API server serving ours), `kubectl get` shows the State column,
`kubectl describe` shows our Events, and the scale subresource drives workers."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest
import yaml
from controller_kit import PODS_FIRST, Cluster, job, wait_for

from compiler.emit.render import rendered_objects
from compiler.pipeline import compile_sources
from controller.generators import crds
from controller.jobs.kinds import KINDS, select
from controller.manager import Manager
from foundation.cluster.kube import Client
from testworld.controlplane import ControlPlane
from testworld.pytest_plugin import shared_dir

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

REPO = Path(__file__).resolve().parents[2]
UPSTREAM = shared_dir() / "reference" / "crds" / "kubeflow-v1"
EXAMPLES = sorted((shared_dir() / "reference" / "upstream-examples").glob("*.yaml"))


def compiled_jobs() -> list[tuple[str, dict[str, Any]]]:
    """Every kubeflow.org object the compiler produces from the repository's examples."""
    out = []
    for target in [*sorted((REPO / "examples").glob("*.yaml")), REPO / "examples" / "project"]:
        result = compile_sources([target])
        for env in result.environments:
            for obj in rendered_objects(result, env):
                if obj.get("apiVersion") == "kubeflow.org/v1":
                    out.append((f"{target.stem}/{env}/{obj['kind']}/{obj['metadata']['name']}", obj))
    return out


def upstream_docs() -> list[tuple[str, dict[str, Any]]]:
    return [(f.stem, yaml.safe_load(f.read_text())) for f in EXAMPLES]


ALL_DOCS = upstream_docs() + compiled_jobs()


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    return _jsonschema(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def _jsonschema(node: Any) -> Any:
    """OpenAPI v3 (as CRDs use it) to JSON Schema: `nullable` becomes a null type."""
    if isinstance(node, dict):
        out = {k: _jsonschema(v) for k, v in node.items() if not k.startswith("x-kubernetes")}
        if node.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(node, list):
        return [_jsonschema(v) for v in node]
    return node


def load_crds(folder: Path) -> dict[str, dict[str, Any]]:
    docs = [yaml.load(p.read_text(), Loader=yaml.CSafeLoader) for p in sorted(folder.glob("*.yaml"))]
    return {d["spec"]["names"]["kind"]: d for d in docs}


OURS, THEIRS = load_crds(crds.OUT), load_crds(UPSTREAM)
VALIDATORS = {  # compiled once: the upstream schemas embed the whole PodTemplateSpec
    (side, kind): jsonschema.Draft7Validator(schema_of(source[kind]))
    for side, source in (("upstream", THEIRS), ("ours", OURS)) for kind in KINDS
}


def test_generated_crds_are_up_to_date() -> None:
    on_disk = {p.name: p.read_text() for p in crds.OUT.glob("*.yaml")}
    assert on_disk == crds.render(), "run: python -m controller.generators.crds"
    assert crds.ROLE.read_text() == crds.clusterrole(crds.ROLE.read_text()), "run: python -m controller.generators.crds"
    listed = crds.KUSTOMIZATION.read_text()
    assert listed == crds.kustomization(listed), "run: python -m controller.generators.crds"
    assert {f"crds/{name}" for name in crds.render()} <= set(yaml.safe_load(listed)["resources"])


def test_the_install_lists_exactly_the_kinds_of_the_adapters() -> None:
    """The ClusterRole's kubeflow.org rules and the install's CRD list follow the adapters: a kind
    dropped by hand comes back at the next generation (both rules, and the list)."""
    rules = yaml.safe_load(crds.ROLE.read_text())["rules"]
    jobs = [rule["resources"] for rule in rules if rule["apiGroups"] == ["kubeflow.org"]]
    plurals = [kind.facts.plural for kind in KINDS.values()]
    assert jobs == [plurals, [p + "/status" for p in plurals]]
    stale = crds.ROLE.read_text().replace('"tfjobs", ', "").replace('"tfjobs/status", ', "")
    assert stale != crds.ROLE.read_text()
    assert crds.clusterrole(stale) == crds.ROLE.read_text()
    listed = crds.KUSTOMIZATION.read_text()
    assert crds.kustomization(listed.replace("  - crds/kubeflow.org_tfjobs.yaml\n", "")) == listed


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_crd_shape_matches_upstream(kind: str) -> None:
    ours, theirs = OURS[kind]["spec"], THEIRS[kind]["spec"]
    assert ours["names"] == theirs["names"] and ours["group"] == theirs["group"] and ours["scope"] == theirs["scope"]
    ov, tv = ours["versions"][0], theirs["versions"][0]
    assert ov["subresources"] == tv["subresources"]
    assert sorted(c["name"] for c in ov["additionalPrinterColumns"]) == sorted(c["name"] for c in tv["additionalPrinterColumns"])
    assert {c["name"]: c["jsonPath"] for c in ov["additionalPrinterColumns"]} == \
        {c["name"]: c["jsonPath"] for c in tv["additionalPrinterColumns"]}
    o_spec = ov["schema"]["openAPIV3Schema"]["properties"]["spec"]
    t_spec = tv["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert o_spec["required"] == t_spec["required"]
    assert set(t_spec["properties"]) <= set(o_spec["properties"])  # (MXJob's runPolicy gains managedBy)


@pytest.mark.parametrize("doc", [d for _, d in ALL_DOCS], ids=[i for i, _ in ALL_DOCS])
def test_document_validates_against_both_schemas(doc: dict[str, Any]) -> None:
    for side in ("upstream", "ours"):
        VALIDATORS[(side, doc["kind"])].validate(doc)


def test_ours_reject_what_upstream_rejects() -> None:
    bad = job("PyTorchJob", "bad", Master=1)
    del bad["spec"]["pytorchReplicaSpecs"]
    wrong_type = job("PyTorchJob", "bad", Master=1)
    wrong_type["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "one"
    for doc in (bad, wrong_type):
        for side in ("upstream", "ours"):
            with pytest.raises(jsonschema.ValidationError):
                VALIDATORS[(side, "PyTorchJob")].validate(doc)


# --- a second API server serving the project's CRDs -------------------------------------


@pytest.fixture(scope="module")
def our_plane(envtest_assets) -> Iterator[ControlPlane]:
    plane = ControlPlane(assets=envtest_assets)
    plane.start()
    try:
        plane.install_crds([crds.OUT])
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def our_ns(our_plane, request) -> str:
    name = f"c-{abs(hash(request.node.name)) % 10**8}"
    our_plane.kubectl("create", "namespace", name)
    return name


def test_real_server_with_our_crds_accepts_every_document(our_plane, our_ns) -> None:
    client = Client.connect(str(our_plane.kubeconfig))
    try:
        for ident, doc in ALL_DOCS:
            body = copy.deepcopy(doc)
            body["metadata"].pop("namespace", None)
            res = next(k for k in KINDS.values() if k.name == body["kind"])
            from controller.jobs.kinds import job_resource

            status, answer = our_plane.request(
                "POST", job_resource(res).path(our_ns) + "?dryRun=All&fieldValidation=Strict", body)
            assert status == 201, f"{ident}: {status} {answer}"
    finally:
        client.close()


def test_kubectl_shows_state_column_events_and_scale(our_plane, our_ns) -> None:
    client = Client.connect(str(our_plane.kubeconfig))
    mgr = Manager(client, select("pytorch"), namespace=our_ns, workers=2, watch_timeout=60, pods_first=PODS_FIRST)
    mgr.start()
    cluster = Cluster(Client.connect(str(our_plane.kubeconfig)), our_ns)
    try:
        # elastic: the scale subresource drives the workers of a running job (a non-elastic job's new
        # count would wait for its next run: controller/README.md, run integrity)
        cluster.apply(job("PyTorchJob", "show", Master=1, Worker=1,
                          spec={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 2}}))
        cluster.wait_pods({"show-master-0", "show-worker-0"})
        cluster.run_all("show-master-0", "show-worker-0")
        cluster.wait_condition("PyTorchJob", "show", "Running")
        table = our_plane.kubectl("get", "pytorchjobs", "-n", our_ns).stdout.split("\n")
        assert table[0].split() == ["NAME", "STATE", "AGE"]
        assert table[1].split()[:2] == ["show", "Running"]

        our_plane.kubectl("scale", "pytorchjob/show", "--replicas=2", "-n", our_ns)
        cluster.wait_pods({"show-master-0", "show-worker-0", "show-worker-1"})
        scale = json.loads(our_plane.kubectl("get", "--raw",
                                             f"/apis/kubeflow.org/v1/namespaces/{our_ns}/pytorchjobs/show/scale").stdout)
        assert scale["spec"]["replicas"] == 2
        assert scale["status"]["selector"] == ("training.kubeflow.org/job-name=show,training.kubeflow.org/operator-name="
                                              "pytorchjob-controller,training.kubeflow.org/replica-type=worker")

        cluster.set_phase("show-master-0", "Succeeded")
        cluster.wait_condition("PyTorchJob", "show", "Succeeded")
        wait_for(lambda: our_plane.kubectl("get", "pytorchjobs", "-n", our_ns).stdout.split("\n")[1].split()[1] == "Succeeded",
                 what="State column Succeeded")
        described = our_plane.kubectl("describe", "pytorchjob", "show", "-n", our_ns).stdout
        events = described[described.index("Events:"):]
        for line in ("SuccessfulCreatePod", "Created pod: show-master-0", "SuccessfulCreateService",
                     "Created service: show-worker-0", "PyTorchJobSucceeded", "PyTorchJob show is successfully completed."):
            assert line in events, described
    finally:
        mgr.stop()
        client.close()
        cluster.client.close()


def test_gang_flag_without_the_podgroup_crd_exits_1_naming_it(our_plane) -> None:
    """This server has only the kubeflow.org CRDs: asking for Volcano must say what is missing."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "controller", "--kubeconfig", str(our_plane.kubeconfig),
                           "--gang-scheduler-name", "volcano"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "podgroups.scheduling.volcano.sh" in proc.stderr and "install Volcano" in proc.stderr


def test_preflight_names_missing_job_crds_and_passes_served_ones(our_plane) -> None:
    from controller import preflight
    from controller.jobs.gang import scheduler_for

    client = Client.connect(str(our_plane.kubeconfig))
    try:
        preflight.check(client, KINDS.values(), None, None)  # every kubeflow.org CRD is served here
        ghost = SimpleNamespace(name="GhostJob", facts=SimpleNamespace(plural="ghostjobs"))  # a kind nobody installed
        with pytest.raises(preflight.MissingAPI, match=r"ghostjobs\.kubeflow\.org are not installed.*controller/install"):
            preflight.check(client, [ghost], None, "default")
        with pytest.raises(preflight.MissingAPI, match=r"podgroups\.scheduling\.x-k8s\.io.*scheduler-plugins"):
            preflight.check(client, [], scheduler_for("scheduler-plugins-scheduler"), None)
    finally:
        client.close()
