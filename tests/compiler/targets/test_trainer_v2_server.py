"""trainer-v2 output against the real API server with the Kubeflow Trainer v2.3.0 CRDs.

The session control plane gets the release's three CRDs and its stock
ClusterTrainingRuntimes (from `shared/reference/crds/trainer-v2.3.0`, unchanged). Every
object of every example environment that targets trainer-v2, and a job that uses every
overlay at once, goes through `kubectl apply --server-side --dry-run=server`: structural
validation, the CRDs' CEL rules (runtimePatches keyed by manager, managedBy, storageUri)
and pruning all run for real. A created TrainJob must read back with every field we wrote.
The runtimes need no JobSet CRD: their JobSet template is embedded in their own schema.
(The Trainer's admission webhook, which checks patches against the runtime's jobs, is
not part of an API server; trainer_v2_rules holds those checks.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from compiler_builders import (
    compile_docs,
    example_sets,
    job_doc,
    project_doc,
    shared_dir,
)

from compiler.emit import serialize
from compiler.emit.render import rendered_objects
from compiler.pipeline import compile_sources

pytestmark = pytest.mark.controlplane

RELEASE = shared_dir() / "reference" / "crds" / "trainer-v2.3.0"


@pytest.fixture(scope="module")
def trainer_plane(control_plane):
    """The session plane with the Trainer v2.3.0 CRDs and stock ClusterTrainingRuntimes."""
    names = control_plane.install_crds([RELEASE])
    assert set(names) == {
        "clustertrainingruntimes.trainer.kubeflow.org", "trainingruntimes.trainer.kubeflow.org",
        "trainjobs.trainer.kubeflow.org",
    }
    control_plane.kubectl(
        "apply", "--server-side", "--field-manager=trainforge-test", "-f", str(RELEASE / "runtimes")
    )
    return control_plane


def _v2_environments() -> Iterator[Any]:
    for name, paths in example_sets():
        project = paths[0] / "trainforge.yaml" if paths[0].is_dir() else None
        if project is None:
            continue
        for env, settings in (yaml.safe_load(project.read_text()).get("environments") or {}).items():
            if (settings or {}).get("target") == "trainer-v2":
                yield pytest.param(paths, env, id=f"{name} in {env}")


V2_ENVIRONMENTS = list(_v2_environments())


def _ensure_namespaces(plane, objects: list[dict]) -> None:
    for ns in sorted({o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]}):
        status, body = plane.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert status in (201, 409), body


def _dry_run(plane, objects: list[dict]) -> None:
    _ensure_namespaces(plane, objects)
    proc = plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=trainforge-test", "-f", "-",
        input=serialize.dump_all(objects), check=False,
    )
    assert proc.returncode == 0, proc.stderr
    applied = [line for line in proc.stdout.splitlines() if "serverside-applied (server dry run)" in line]
    assert len(applied) == len(objects), proc.stdout


def test_an_example_project_has_a_trainer_v2_environment_with_every_v2_framework():
    assert V2_ENVIRONMENTS, "examples/ must show the trainer-v2 target"
    paths, env = V2_ENVIRONMENTS[0].values
    result = compile_sources(paths, env=env)
    assert {b.target.spec.framework for b in result.bundles[env]} == {"pytorch", "mpi", "jax", "xgboost"}


def test_the_stock_runtimes_are_installed_as_the_release_ships_them(trainer_plane):
    status, body = trainer_plane.request("GET", "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes")
    assert status == 200, body
    assert {item["metadata"]["name"] for item in body["items"]} == {
        p.stem.replace("_", "-") for p in (RELEASE / "runtimes").glob("*.yaml")
    }


@pytest.mark.parametrize(("paths", "env"), V2_ENVIRONMENTS)
def test_server_side_dry_run_accepts_every_object_of_a_trainer_v2_environment(trainer_plane, paths, env):
    result = compile_sources(paths, env=env)
    assert result.ok, [d.text() for d in result.diagnostics]
    objects = rendered_objects(result, env)
    assert {o["kind"] for o in objects} >= {"TrainJob"}

    _dry_run(trainer_plane, objects)


@pytest.mark.parametrize(("framework", "restart"), [("pytorch", "OnFailure"), ("mpi", "ExitCode"), ("jax", "ExitCode"),
                                                  ("xgboost", None)])
def test_a_whole_job_restart_runtime_and_its_trainjob_pass_a_dry_run(trainer_plane, tmp_path, framework, restart):
    policy = {"restartScope": "job", "backoffLimit": 2, **({"restart": restart} if restart else {})}
    doc = job_doc(framework, name=f"restarts-{framework}", namespace="v2-restarts", nodes=2, policy=policy)
    result = compile_docs(tmp_path, doc, project=project_doc(defaults={"target": "trainer-v2"}))
    assert result.ok, [d.text() for d in result.diagnostics]
    objects = rendered_objects(result, "default")
    assert {o["kind"] for o in objects} == {"Namespace", "TrainingRuntime", "TrainJob"}

    _dry_run(trainer_plane, objects)


def test_runtimes_of_the_sources_and_their_trainjobs_pass_a_dry_run(trainer_plane, tmp_path):
    """A TrainingRuntime and a ClusterTrainingRuntime written beside the jobs (the importer corpus's
    own), jobs without an image, an initializer, limits and devices: every object the server takes."""
    from test_trainer_v2_runtimes import ANCESTOR, runtime, step_job, v2_job

    jobs = [step_job("dataset-initializer", "dataset-initializer", "dataset-initializer"),
            step_job("node", "trainer", "node", "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime")]
    jobs[1]["dependsOn"] = [{"name": "dataset-initializer", "status": "Complete"}]
    docs = [runtime("dry-init", jobs=jobs), runtime("dry-team", "ClusterTrainingRuntime"),
            v2_job("init", namespace="v2-sources", runtime={"name": "dry-init", "kind": "TrainingRuntime"},
                   initializer={"dataset": {"storageUri": "hf://tatsu-lab/alpaca", "secret": "hf"}},
                   resources={"cpu": "2", "memory": "4Gi", "limits": {"cpu": "4", "memory": "8Gi"},
                              "devices": {"vpc.amazonaws.com/efa": 1}}),
            v2_job("team", namespace="v2-sources", runtime="dry-team")]
    result = compile_docs(tmp_path, *docs, project=project_doc(defaults={"target": "trainer-v2"}))
    assert result.ok, [d.text() for d in result.diagnostics]
    objects = rendered_objects(result, "default")
    assert sorted(o["kind"] for o in objects) == ["ClusterTrainingRuntime", "Namespace", "TrainJob", "TrainJob",
                                                  "TrainingRuntime"]
    assert ANCESTOR in str(objects)

    _dry_run(trainer_plane, objects)


def _every_overlay(tmp_path: Path) -> list[dict]:
    doc = job_doc(
        "pytorch", name="everything", namespace="v2-everything",
        runtime={"name": "torch-team", "kind": "TrainingRuntime"},
        command=["torchrun", "train.py"], args=["--epochs", "3"], env={"A": "1", "T": {"secret": "s", "key": "k"}},
        nodes=3, processesPerNode=4,
        resources={"gpu": 4, "gpuType": "h100", "cpu": "16", "memory": "64Gi", "sharedMemory": "8Gi"},
        storage=[{"name": "data", "mountPath": "/data", "claim": "data", "readOnly": True},
                 {"name": "ckpt", "mountPath": "/ckpt", "size": "10Gi", "accessMode": "ReadWriteMany"}],
        serviceAccount={"create": True, "imagePullSecrets": ["pull"], "rules": [{"resources": ["pods"], "verbs": ["get"]}]},
        scheduling={"queue": "q", "priority": "high", "gang": True, "nodeSelector": {"pool": "a"},
                    "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]},
        policy={"activeDeadline": "1h", "suspend": True},
        podTemplate={"metadata": {"annotations": {"a": "b"}},
                     "spec": {"securityContext": {"runAsNonRoot": True}, "terminationGracePeriodSeconds": 30,
                              "containers": [{"name": "pytorch", "securityContext": {"readOnlyRootFilesystem": True}}]}},
    )
    doc["metadata"]["labels"] = {"team": "a"}
    project = project_doc(policy={"podSecurityDefaults": True}, environments={"prod": {
        "target": "trainer-v2", "scheduling": {"kueuePriority": True},
        "gpuTypes": {"h100": {"nodeSelector": {"gpu": "h100"},
                              "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                  "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}},
    }})
    result = compile_docs(tmp_path, doc, project=project)
    assert result.ok, [d.text() for d in result.diagnostics]
    return rendered_objects(result, "prod")


def test_a_trainjob_using_every_overlay_passes_a_dry_run_and_round_trips(trainer_plane, tmp_path):
    objects = _every_overlay(tmp_path)
    _dry_run(trainer_plane, objects)
    (job,) = [o for o in objects if o["kind"] == "TrainJob"]
    path = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/v2-everything/trainjobs"

    status, created = trainer_plane.request("POST", path, job)
    assert status == 201, created
    status, back = trainer_plane.request("GET", f"{path}/everything")

    assert status == 200
    assert back["metadata"]["labels"] == job["metadata"]["labels"]
    written = json.loads(json.dumps(job["spec"]))
    # what the server adds are the CRD's defaults (runtimeRef.apiGroup, managedBy); all we wrote stays
    assert {k: v for k, v in back["spec"].items() if k in written} | {"runtimeRef": back["spec"]["runtimeRef"]} == \
        written | {"runtimeRef": {**written["runtimeRef"], "apiGroup": "trainer.kubeflow.org"}}
    assert set(back["spec"]) - set(written) <= {"managedBy"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(lambda spec: spec.update(runtimePatches=spec["runtimePatches"] * 2),
                     'runtimePatches: duplicate entries for key [manager="trainforge.dev/compiler"]',
                     id="two patches of one manager break the list-map key"),
        pytest.param(lambda spec: spec.update(managedBy="someone-else"),
                     "ManagedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue",
                     id="a managedBy outside the CEL rule"),
        pytest.param(lambda spec: spec.update(activeDeadlineSeconds=0), "activeDeadlineSeconds",
                     id="a deadline below the minimum"),
    ],
)
def test_the_dry_run_can_fail_with_the_servers_message(trainer_plane, tmp_path, change, message):
    """The dry runs above are real checks: the CRD's rules are enforced by the server."""
    (job,) = [o for o in _every_overlay(tmp_path) if o["kind"] == "TrainJob"]
    change(job["spec"])
    job["metadata"]["name"] = "broken"

    proc = trainer_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(job), check=False)

    assert proc.returncode != 0
    assert message in proc.stderr


# --- the pods the Trainer would make, through Pod Security admission ---------------------------------

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"


def _stock_runtime(name: str) -> dict:
    (doc,) = [d for p in (RELEASE / "runtimes").glob("*.yaml") if (d := yaml.safe_load(p.read_text()))["metadata"]["name"] == name]
    return doc


def trainer_pods(plane, job: dict, namespace: str, compiled: dict[str, dict] | None = None) -> list[dict]:
    """Index 0 of each replicated job's pod, built as the Trainer v2.3.0 builds it: the runtime's
    pod template, our runtime patch merged in by a real strategic merge (`kubectl patch
    --local`), the trainer's image, command and args on the trainer step's `node` container,
    its env and resources on every node (the MPI launcher runs as one). The runtime is the
    job's own TrainingRuntime when the compiler wrote one (`compiled`, by name), else the stock one."""
    ref = job["spec"]["runtimeRef"]
    own = (compiled or {}).get(ref["name"]) if ref["kind"] == "TrainingRuntime" else None
    runtime = own if own is not None else _stock_runtime(ref["name"])
    as_node = runtime["spec"]["mlPolicy"].get("mpi", {}).get("runLauncherAsNode", False)
    trainer = job["spec"]["trainer"]
    patches = {e["name"]: e["template"]["spec"]["template"]
               for e in job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]}
    pods = []
    for rjob in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        template = rjob["template"]["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod", "spec": template["spec"],
               "metadata": {**template.get("metadata", {}), "name": f"{job['metadata']['name']}-{rjob['name']}-0-0",
                            "namespace": namespace}}
        if rjob["name"] in patches:
            merged = plane.kubectl("patch", "--local", "-f", "-", "--type", "strategic", "-o", "json",
                                   "-p", json.dumps(patches[rjob["name"]]), input=json.dumps(pod))
            pod = json.loads(merged.stdout)
        step = (rjob["template"].get("metadata") or {}).get("labels", {}).get(ANCESTOR)
        for container in pod["spec"]["containers"]:
            if container["name"] != "node":
                continue
            if step == "trainer":
                container.update({k: trainer[k] for k in ("image", "command", "args") if k in trainer})
            if step == "trainer" or (as_node and rjob["name"] == "node"):
                container["env"] = container.get("env", []) + trainer.get("env", [])
                if "resourcesPerNode" in trainer:
                    container["resources"] = trainer["resourcesPerNode"]
        pods.append(pod)
    return pods


@pytest.mark.parametrize(("paths", "env"), V2_ENVIRONMENTS)
def test_the_pods_of_each_example_trainjob_are_admitted_in_its_compiled_namespace(trainer_plane, paths, env):
    result = compile_sources(paths, env=env)
    objects = rendered_objects(result, env)
    checked: dict[str, int] = {}
    for job in (o for o in objects if o["kind"] == "TrainJob"):
        (ns,) = [o for o in objects if o["kind"] == "Namespace" and o["metadata"]["name"] == job["metadata"]["namespace"]]
        admitted = f"v2-psa-{ns['metadata']['labels']['pod-security.kubernetes.io/enforce']}"
        labelled = {**ns, "metadata": {**ns["metadata"], "name": admitted, "annotations": {}}}
        status, body = trainer_plane.request("POST", "/api/v1/namespaces", labelled)
        assert status in (201, 409), body
        runtimes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "TrainingRuntime"}
        for pod in trainer_pods(trainer_plane, job, admitted, runtimes):
            status, body = trainer_plane.request("POST", f"/api/v1/namespaces/{admitted}/pods?dryRun=All", pod)
            assert status == 201, f"{pod['metadata']['name']}: {body.get('message') if isinstance(body, dict) else body}"
            checked[job["metadata"]["name"]] = checked.get(job["metadata"]["name"], 0) + 1
    # every job's pods: a node each (torch, jax, xgboost), the MPI launcher and nodes
    assert checked and set(checked) == {o["metadata"]["name"] for o in objects if o["kind"] == "TrainJob"}, checked


def test_pod_security_admission_refuses_a_trainer_pod_that_breaks_baseline(trainer_plane, tmp_path):
    """The admission test above can fail: a hostPath volume in the runtime patch is refused."""
    (job,) = [o for o in _every_overlay(tmp_path) if o["kind"] == "TrainJob"]
    job["spec"]["runtimeRef"] = {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"}
    pod_spec = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0][
        "template"]["spec"]["template"]["spec"]
    pod_spec["volumes"].append({"name": "host", "hostPath": {"path": "/var/run"}})
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "v2-psa-refuses", "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}}
    assert trainer_plane.request("POST", "/api/v1/namespaces", ns)[0] in (201, 409)

    (pod,) = trainer_pods(trainer_plane, job, "v2-psa-refuses")
    status, body = trainer_plane.request("POST", "/api/v1/namespaces/v2-psa-refuses/pods?dryRun=All", pod)

    assert status == 403 and "hostPath" in body["message"]


# Quantities as people write them (YAML numbers too); Kubernetes' own Go types store each
# as resource.Quantity's canonical String(), the same code Trainer's webhook runs. (Nothing
# finer than 1m: a Pod's resource lists are also rounded up to milli, a Pod default.)
WRITTEN_QUANTITIES = [4, "4", 0.5, "0.5", "1.5", "250m", "1000m", "1000", "1200000", "1.5Gi", "2048Mi", "0.5Ki",
                      "100Mi", "480Gi", "1Ti", "1e3", "1.5e3", "12e6", "1.5e-2", "0.1", "10G", "1500k", "0", "0Gi",
                      "1.500", "1.000", "2.50", "0.100", "100Mi", "1025Ki", "3072Ki", "1.5e3", "+2", "007", "12e-3"]


def test_canonical_quantities_are_what_the_api_servers_go_types_store(trainer_plane):
    from schemas.quantity import canonical_text

    containers = [{"name": f"c{i}", "image": "example.com/x:1", "resources": {"requests": {"cpu": value}}}
                  for i, value in enumerate(WRITTEN_QUANTITIES)]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "quantities", "namespace": "default"},
           "spec": {"containers": containers}}
    out = trainer_plane.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(pod)).stdout
    stored = [c["resources"]["requests"]["cpu"] for c in json.loads(out)["spec"]["containers"]]

    assert [canonical_text(v) for v in WRITTEN_QUANTITIES] == stored
