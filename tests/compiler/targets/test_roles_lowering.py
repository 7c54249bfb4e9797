"""Per-role settings under `roles`: each lands on its own replica type's pods and nowhere else.

Expected values are written from the spec and upstream's replica type names (semantics §0),
not read back from the adapters. Jobs go through the real pipeline, overlays included.
"""

from __future__ import annotations

from typing import Any

import pytest

from compiler_builders import compile_docs, job_doc, only_job, project_doc

SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs",
         "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
         "MXJob": "mxReplicaSpecs"}


def replicas(job: dict) -> dict[str, Any]:
    return job["spec"][SPECS[job["kind"]]]


def pods(job: dict) -> dict[str, dict]:
    return {rtype: r["template"]["spec"] for rtype, r in replicas(job).items()}


def main(job: dict) -> dict[str, dict]:
    """replica type -> its framework container (the first)."""
    return {rtype: pod["containers"][0] for rtype, pod in pods(job).items()}


# (framework, extra spec, role, the replica type it names)
ROLE_TYPES = [
    ("pytorch", {}, "master", "Master"), ("pytorch", {}, "worker", "Worker"),
    ("tensorflow", {}, "chief", "Chief"), ("tensorflow", {}, "worker", "Worker"),
    ("tensorflow", {"ps": {"replicas": 2}}, "ps", "PS"), ("tensorflow", {"evaluator": {}}, "evaluator", "Evaluator"),
    ("mpi", {}, "launcher", "Launcher"), ("mpi", {}, "worker", "Worker"),
    ("xgboost", {}, "master", "Master"), ("xgboost", {}, "worker", "Worker"),
    ("paddle", {}, "worker", "Worker"), ("paddle", {"ps": {}}, "ps", "Master"),
    ("jax", {}, "worker", "Worker"),
    ("mxnet", {}, "scheduler", "Scheduler"), ("mxnet", {"server": {}}, "server", "Server"),
    ("mxnet", {}, "worker", "Worker"),
]


@pytest.mark.parametrize(("framework", "extra", "role", "replica_type"),
                         [pytest.param(*case, id=f"{case[0]} {case[2]} is the {case[3]} replica type")
                          for case in ROLE_TYPES])
def test_a_role_image_lands_on_its_replica_type_only(tmp_path, framework, extra, role, replica_type):
    roles = {**extra, role: {**extra.get(role, {}), "image": "ghcr.io/acme/own:2"}}

    job = only_job(tmp_path, job_doc(framework, nodes=3, roles=roles))

    images = {rtype: c["image"] for rtype, c in main(job).items()}
    assert images.pop(replica_type) == "ghcr.io/acme/own:2"
    assert set(images.values()) <= {"ghcr.io/acme/train:1"}  # jax and collective paddle have Workers only


def test_command_args_env_and_restart_per_role(tmp_path):
    roles = {"master": {"restart": "Never", "args": ["--tracker"]},
             "worker": {"restart": "ExitCode", "command": ["python", "worker.py"],
                        "env": {"B": "3", "C": {"secret": "s", "key": "k"}}}}

    job = only_job(tmp_path, job_doc("xgboost", nodes=3, command=["python", "train.py"], env={"A": "1", "B": "2"},
                                     policy={"restart": "OnFailure"}, roles=roles))

    c = main(job)
    assert (c["Master"]["command"], c["Master"]["args"]) == (["python", "train.py"], ["--tracker"])
    assert (c["Worker"]["command"], "args" in c["Worker"]) == (["python", "worker.py"], False)
    assert c["Master"]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    assert c["Worker"]["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"},
                                  {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    assert {rtype: r["restartPolicy"] for rtype, r in replicas(job).items()} == {"Master": "Never", "Worker": "ExitCode"}


def test_a_roles_resources_replace_the_jobs_and_bring_their_own_shared_memory(tmp_path):
    roles = {"launcher": {"resources": {"cpu": "2", "memory": "4Gi"}},
             "worker": {"resources": {"gpu": 4, "sharedMemory": "unsized", "devices": {"vpc.amazonaws.com/efa": 1}}}}

    job = only_job(tmp_path, job_doc("mpi", nodes=2, resources={"gpu": 8, "cpu": "32", "sharedMemory": "64Gi"},
                                     roles=roles))

    c, p = main(job), pods(job)
    assert c["Worker"]["resources"] == {"limits": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"},
                                        "requests": {"nvidia.com/gpu": "4", "vpc.amazonaws.com/efa": "1"}}
    assert p["Worker"]["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert c["Launcher"]["resources"] == {"limits": {"memory": "4Gi"}, "requests": {"cpu": "2", "memory": "4Gi"}}
    assert "volumes" not in p["Launcher"]
    assert job["spec"]["slotsPerWorker"] == 4  # the workers' own GPUs, not the job's


def test_placement_per_role_replaces_the_jobs_and_the_jobs_affinity_reaches_the_others(tmp_path):
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}
    node = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}
    scheduling = {"nodeSelector": {"zone": "a"}, "tolerations": [{"key": "spot", "operator": "Exists"}],
                  "affinity": anti}
    roles = {"worker": {"scheduling": {"nodeSelector": {"pool": "gpu"}, "affinity": node,
                                       "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}}}

    job = only_job(tmp_path, job_doc("pytorch", nodes=3, scheduling=scheduling, roles=roles))

    master, worker = pods(job)["Master"], pods(job)["Worker"]
    assert (master["nodeSelector"], master["tolerations"], master["affinity"]) == (
        {"zone": "a"}, [{"key": "spot", "operator": "Exists"}], anti)
    assert (worker["nodeSelector"], worker["tolerations"], worker["affinity"]) == (
        {"pool": "gpu"}, [{"key": "nvidia.com/gpu", "operator": "Exists"}], node)


def test_a_roles_gpu_type_places_only_its_pods_beside_its_own_selector(tmp_path):
    project = project_doc(environments={"prod": {"gpuTypes": {"h100": {"nodeSelector": {"gpu": "h100"}}}}})
    roles = {"worker": {"resources": {"gpu": 8, "gpuType": "h100"}, "scheduling": {"nodeSelector": {"rack": "r1"}}}}

    job = only_job(tmp_path, job_doc("pytorch", nodes=2, roles=roles), env="prod", project=project)

    assert pods(job)["Worker"]["nodeSelector"] == {"gpu": "h100", "rack": "r1"}
    assert "nodeSelector" not in pods(job)["Master"]


def test_a_roles_pod_template_is_merged_after_the_jobs_on_its_pods_only(tmp_path):
    job_patch = {"metadata": {"annotations": {"team": "nlp", "net": "default"}},
                 "spec": {"volumes": [{"name": "data", "emptyDir": {}}]}}
    role_patch = {"metadata": {"annotations": {"net": "sriov"}},
                  "spec": {"initContainers": [{"name": "warm", "image": "busybox:1.36"}],
                           "volumes": [{"name": "cache", "emptyDir": {}}]}}

    job = only_job(tmp_path, job_doc("jax", nodes=2, podTemplate=job_patch,
                                     roles={"worker": {"podTemplate": role_patch}}))

    template = replicas(job)["Worker"]["template"]
    assert template["metadata"]["annotations"] == {"team": "nlp", "net": "sriov"}
    assert [v["name"] for v in template["spec"]["volumes"]] == ["data", "cache"]
    assert template["spec"]["initContainers"] == [{"name": "warm", "image": "busybox:1.36"}]


def test_a_role_pod_template_stays_off_the_other_roles(tmp_path):
    roles = {"launcher": {"podTemplate": {"metadata": {"annotations": {"sidecar.istio.io/inject": "false"}}}}}

    job = only_job(tmp_path, job_doc("mpi", nodes=2, roles=roles))

    assert replicas(job)["Launcher"]["template"]["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
    assert "metadata" not in replicas(job)["Worker"]["template"]


@pytest.mark.parametrize(
    ("roles", "expected"),
    [
        pytest.param({"chief": {"replicas": 0}}, {"Worker": 3}, id="no chief is worker times nodes"),
        pytest.param({"chief": {"replicas": 0}, "ps": {"replicas": 2}}, {"Worker": 3, "PS": 2},
                     id="no chief with ps is ps plus worker times nodes"),
        pytest.param({"chief": {"image": "ghcr.io/acme/chief:1"}}, {"Chief": 1, "Worker": 2},
                     id="a chief with settings is still one chief"),
    ],
)
def test_tensorflow_without_a_chief(tmp_path, roles, expected):
    job = only_job(tmp_path, job_doc("tensorflow", nodes=3, roles=roles))

    assert {rtype: r["replicas"] for rtype, r in replicas(job).items()} == expected


def test_an_environment_overrides_one_roles_image(tmp_path):
    project = project_doc(environments={"dev": {}, "prod": {}})
    doc = job_doc("pytorch", nodes=2, roles={"worker": {"image": "ghcr.io/acme/worker:1"}},
                  environments={"prod": {"roles": {"worker": {"image": "ghcr.io/acme/worker:2"}}}})

    result = compile_docs(tmp_path, doc, project=project)

    images = {env: {rtype: c["image"] for rtype, c in main(result.bundles[env][0].rendered_job()).items()}
              for env in ("dev", "prod")}
    assert images == {"dev": {"Master": "ghcr.io/acme/train:1", "Worker": "ghcr.io/acme/worker:1"},
                      "prod": {"Master": "ghcr.io/acme/train:1", "Worker": "ghcr.io/acme/worker:2"}}


def test_an_empty_command_runs_the_images_entrypoint_for_that_role(tmp_path):
    """The MXNet scheduler of published jobs runs its image's entrypoint while the workers run a script."""
    job = only_job(tmp_path, job_doc("mxnet", nodes=2, command=["python", "train.py"], args=["--kv-store", "dist_sync"],
                                     roles={"scheduler": {"command": [], "args": []}}))

    c = main(job)
    assert "command" not in c["Scheduler"] and "args" not in c["Scheduler"]
    assert c["Worker"]["command"] == ["python", "train.py"]


def test_the_jobs_affinity_reaches_trainer_v2_pods_through_runtime_patches(tmp_path):
    anti = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}}
    project = project_doc(environments={"prod": {"target": "trainer-v2"}})

    job = only_job(tmp_path, job_doc("jax", nodes=2, scheduling={"affinity": anti}), env="prod", project=project)

    (node,) = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert node["template"]["spec"]["template"]["spec"]["affinity"] == anti


def test_a_launcher_written_with_one_replica_stays_valid(tmp_path):
    job = only_job(tmp_path, job_doc("mpi", nodes=2, roles={"launcher": {"replicas": 1, "command": ["mpirun", "x"]}}))

    assert (replicas(job)["Launcher"]["replicas"], main(job)["Launcher"]["command"]) == (1, ["mpirun", "x"])
