"""The facts of a lowered job that matter in the cluster, asserted one by one.

Independent of the snapshots: the expected values here are written from the spec
document and the upstream semantics (kind, replica-spec field, container name, port per
framework), not read back from the adapters, so a wrong adapter table fails here.
Inputs are built with `job_doc` (spec fields as keyword arguments) and compiled through
the real pipeline, overlays included.
"""

from __future__ import annotations

import pytest

from compiler_builders import job_doc, lowered, only_job, project_doc

# framework -> (kind, replica-spec field, container, (port name, port) or None), semantics §0
UPSTREAM = {
    "pytorch": ("PyTorchJob", "pytorchReplicaSpecs", "pytorch", ("pytorchjob-port", 23456)),
    "tensorflow": ("TFJob", "tfReplicaSpecs", "tensorflow", ("tfjob-port", 2222)),
    "mpi": ("MPIJob", "mpiReplicaSpecs", "mpi", None),
    "xgboost": ("XGBoostJob", "xgbReplicaSpecs", "xgboost", ("xgboostjob-port", 9999)),
    "paddle": ("PaddleJob", "paddleReplicaSpecs", "paddle", ("master", 36543)),
    "jax": ("JAXJob", "jaxReplicaSpecs", "jax", ("jaxjob-port", 6666)),
    "mxnet": ("MXJob", "mxReplicaSpecs", "mxnet", ("mxjob-port", 9091)),
}
# the roles that run the user's program on the nodes (they get GPUs and /dev/shm)
NODE_ROLES = {
    "pytorch": {"Master", "Worker"},
    "tensorflow": {"Chief", "Worker"},
    "mpi": {"Worker"},
    "xgboost": {"Master", "Worker"},
    "paddle": {"Worker"},
    "jax": {"Worker"},
    "mxnet": {"Worker"},
}
# extra roles that make every replica type of a framework appear
ALL_ROLES = {
    "tensorflow": {"ps": {"replicas": 1}, "evaluator": {"replicas": 1}},
    "mpi": {"launcher": {"resources": {"cpu": "1"}}},
    "paddle": {"ps": {"replicas": 1}},
    "mxnet": {"server": {"replicas": 1}},
}


UPSTREAM_BY_KIND = {facts[0]: facts for facts in UPSTREAM.values()}


def replicas(job: dict) -> dict:
    return job["spec"][UPSTREAM_BY_KIND[job["kind"]][1]]


def containers(job: dict) -> dict[str, dict]:
    """replica type -> its first (framework) container."""
    return {rtype: spec["template"]["spec"]["containers"][0] for rtype, spec in replicas(job).items()}


def with_all_roles(framework: str, **spec) -> dict:
    return job_doc(framework, nodes=2, roles=ALL_ROLES.get(framework, {}), **spec)


FRAMEWORKS = pytest.mark.parametrize("framework", list(UPSTREAM))


# --- shape: kind, replica types and counts -----------------------------------------------


@FRAMEWORKS
def test_kind_replica_field_container_and_port_follow_upstream(tmp_path, framework):
    kind, field, container, port = UPSTREAM[framework]

    job = only_job(tmp_path, with_all_roles(framework))

    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", kind)
    assert field in job["spec"]
    for rtype, c in containers(job).items():
        assert c["name"] == container, rtype
        expected_ports = [{"name": port[0], "containerPort": port[1]}] if port else None
        assert c.get("ports") == expected_ports, rtype


@pytest.mark.parametrize(
    ("framework", "spec", "expected"),
    [
        pytest.param("pytorch", {"nodes": 4}, {"Master": 1, "Worker": 3},
                     id="pytorch with four nodes is one master and three workers"),
        pytest.param("pytorch", {}, {"Master": 1}, id="pytorch with one node is a master alone"),
        pytest.param("pytorch", {"nodes": 3, "elastic": {"minNodes": 2, "maxNodes": 5}}, {"Worker": 3},
                     id="elastic pytorch is workers only as many as nodes"),
        pytest.param("tensorflow", {"nodes": 3, "roles": {"ps": {"replicas": 2}, "evaluator": {"replicas": 1}}},
                     {"Chief": 1, "Worker": 2, "PS": 2, "Evaluator": 1},
                     id="tensorflow is a chief and workers plus ps and evaluator roles"),
        pytest.param("tensorflow", {"nodes": 2, "roles": {"ps": {"replicas": 0}}}, {"Chief": 1, "Worker": 1},
                     id="a role with zero replicas is left out"),
        pytest.param("mpi", {"nodes": 3}, {"Launcher": 1, "Worker": 3},
                     id="mpi is a launcher plus one worker per node"),
        pytest.param("xgboost", {"nodes": 3}, {"Master": 1, "Worker": 2},
                     id="xgboost is a master plus workers"),
        pytest.param("paddle", {"nodes": 2}, {"Worker": 2}, id="paddle collective is one worker per node"),
        pytest.param("paddle", {"nodes": 2, "roles": {"ps": {"replicas": 1}}}, {"Master": 1, "Worker": 2},
                     id="paddle with a ps role switches to master plus workers"),
        pytest.param("jax", {"nodes": 4}, {"Worker": 4}, id="jax is one worker per node"),
        pytest.param("mxnet", {"nodes": 2, "roles": {"server": {"replicas": 2}}},
                     {"Scheduler": 1, "Server": 2, "Worker": 2},
                     id="mxnet is a scheduler and servers plus one worker per node"),
        pytest.param("mxnet", {"nodes": 2}, {"Scheduler": 1, "Worker": 2},
                     id="mxnet without servers is a scheduler and workers"),
    ],
)
def test_replica_counts_per_role(tmp_path, framework, spec, expected):
    job = only_job(tmp_path, job_doc(framework, **spec))

    assert {rtype: r["replicas"] for rtype, r in replicas(job).items()} == expected


# --- resources -------------------------------------------------------------------------


@FRAMEWORKS
def test_gpus_are_limits_with_equal_requests_on_node_roles_only(tmp_path, framework):
    job = only_job(tmp_path, with_all_roles(framework, resources={"gpu": 4, "cpu": "8", "memory": "32Gi"}))

    for rtype, c in containers(job).items():
        resources = c.get("resources", {})
        if rtype in NODE_ROLES[framework]:
            assert resources["limits"]["nvidia.com/gpu"] == "4", rtype
            assert resources["requests"]["nvidia.com/gpu"] == "4", rtype
            assert resources["requests"]["cpu"] == "8"
            assert resources["limits"]["memory"] == resources["requests"]["memory"] == "32Gi"
        else:
            assert "nvidia.com/gpu" not in resources.get("limits", {}), rtype
            assert "nvidia.com/gpu" not in resources.get("requests", {}), rtype


def test_a_role_asks_for_its_own_resources(tmp_path):
    roles = {"evaluator": {"replicas": 1, "resources": {"gpu": 1, "memory": "8Gi"}}, "ps": {"replicas": 1}}

    job = only_job(tmp_path, job_doc("tensorflow", nodes=2, roles=roles, resources={"gpu": 8}))

    c = containers(job)
    assert c["Evaluator"]["resources"] == {
        "limits": {"memory": "8Gi", "nvidia.com/gpu": "1"},
        "requests": {"memory": "8Gi", "nvidia.com/gpu": "1"},
    }
    assert "resources" not in c["PS"]
    assert c["Chief"]["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_a_job_without_gpus_asks_for_none(tmp_path):
    job = only_job(tmp_path, job_doc("pytorch", nodes=2, resources={"cpu": "4"}))

    for c in containers(job).values():
        assert c["resources"] == {"requests": {"cpu": "4"}}


def test_the_environment_names_the_gpu_resource(tmp_path):
    project = project_doc(environments={"amd": {"gpuResource": "amd.com/gpu"}})

    job = only_job(tmp_path, job_doc("jax", resources={"gpu": 2}), env="amd", project=project)

    assert containers(job)["Worker"]["resources"]["limits"] == {"amd.com/gpu": "2"}


@FRAMEWORKS
def test_shared_memory_is_a_memory_emptydir_on_dev_shm_of_node_roles(tmp_path, framework):
    job = only_job(tmp_path, with_all_roles(framework, resources={"sharedMemory": "16Gi"}))

    for rtype, replica in replicas(job).items():
        pod = replica["template"]["spec"]
        shm_volumes = [v for v in pod.get("volumes", []) if v.get("emptyDir", {}).get("medium") == "Memory"]
        mounts = [m for m in pod["containers"][0].get("volumeMounts", []) if m["mountPath"] == "/dev/shm"]
        if rtype in NODE_ROLES[framework]:
            assert shm_volumes == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]
            assert mounts == [{"name": "dshm", "mountPath": "/dev/shm"}]
        else:
            assert shm_volumes == [] and mounts == [], rtype


def test_no_shared_memory_no_volume(tmp_path):
    job = only_job(tmp_path, job_doc("jax"))

    assert "volumes" not in replicas(job)["Worker"]["template"]["spec"]


# --- program: command, env ---------------------------------------------------------------


def test_env_values_and_secret_and_configmap_refs_keep_their_order(tmp_path):
    env = {
        "LR": "3e-5",
        "HF_TOKEN": {"secret": "hf", "key": "token"},
        "DATASET": {"configMap": "datasets", "key": "url"},
    }

    job = only_job(tmp_path, job_doc("xgboost", nodes=2, env=env))

    for c in containers(job).values():
        assert c["env"] == [
            {"name": "LR", "value": "3e-5"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}},
            {"name": "DATASET", "valueFrom": {"configMapKeyRef": {"name": "datasets", "key": "url"}}},
        ]


def test_every_role_runs_the_command_unless_it_has_its_own(tmp_path):
    roles = {"evaluator": {"replicas": 1, "command": ["python", "eval.py"], "args": ["--every", "10m"]}}

    job = only_job(tmp_path, job_doc("tensorflow", nodes=2, roles=roles, command=["python", "train.py"],
                                     args=["--epochs", "3"], workingDir="/workspace"))

    c = containers(job)
    assert (c["Chief"]["command"], c["Chief"]["args"]) == (["python", "train.py"], ["--epochs", "3"])
    assert (c["Worker"]["command"], c["Worker"]["args"]) == (["python", "train.py"], ["--epochs", "3"])
    assert (c["Evaluator"]["command"], c["Evaluator"]["args"]) == (["python", "eval.py"], ["--every", "10m"])
    assert all(container["workingDir"] == "/workspace" for container in c.values())


def test_mpi_launcher_runs_the_command_and_workers_wait_for_it(tmp_path):
    job = only_job(tmp_path, job_doc("mpi", nodes=2, command=["mpirun"], args=["-np", "2", "python", "t.py"]))

    c = containers(job)
    assert (c["Launcher"]["command"], c["Launcher"]["args"]) == (["mpirun"], ["-np", "2", "python", "t.py"])
    assert "command" not in c["Worker"] and "args" not in c["Worker"]


def test_no_command_means_the_image_entrypoint(tmp_path):
    job = only_job(tmp_path, job_doc("jax"))

    assert "command" not in containers(job)["Worker"] and "args" not in containers(job)["Worker"]


# --- kind-specific fields ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("processes", "expected"),
    [pytest.param("auto", "auto", id="auto lets torchrun count the GPUs"),
     pytest.param(8, "8", id="a number becomes the string torchrun reads")],
)
def test_pytorch_nproc_per_node(tmp_path, processes, expected):
    job = only_job(tmp_path, job_doc("pytorch", processesPerNode=processes))

    assert job["spec"]["nprocPerNode"] == expected


def test_pytorch_nproc_per_node_defaults_to_auto(tmp_path):
    assert only_job(tmp_path, job_doc("pytorch"))["spec"]["nprocPerNode"] == "auto"


@pytest.mark.parametrize(
    ("spec", "slots"),
    [
        pytest.param({"resources": {"gpu": 4}}, 4, id="auto is one slot per gpu"),
        pytest.param({}, 1, id="auto without gpus is one slot"),
        pytest.param({"processesPerNode": 2, "resources": {"gpu": 4}}, 2, id="a number is taken as is"),
    ],
)
def test_mpi_slots_per_worker(tmp_path, spec, slots):
    job = only_job(tmp_path, job_doc("mpi", **spec))

    assert job["spec"]["slotsPerWorker"] == slots


def test_elastic_becomes_the_pytorch_elastic_policy(tmp_path):
    job = only_job(tmp_path, job_doc("pytorch", nodes=3, elastic={"minNodes": 2, "maxNodes": 6, "maxRestarts": 3}))

    assert job["spec"]["elasticPolicy"] == {"minReplicas": 2, "maxReplicas": 6, "maxRestarts": 3, "rdzvBackend": "c10d"}
    assert "Master" not in replicas(job)


def test_elastic_without_max_restarts_leaves_it_to_the_operator(tmp_path):
    job = only_job(tmp_path, job_doc("pytorch", nodes=2, elastic={"minNodes": 1, "maxNodes": 2}))

    assert "maxRestarts" not in job["spec"]["elasticPolicy"]


def test_elastic_rendezvous_and_metrics_are_upstreams_elastic_policy_fields(tmp_path):
    metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                          "averageUtilization": 80}}},
               {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                                 "target": {"type": "AverageValue", "averageValue": "1.5"}}}]
    elastic = {"minNodes": 1, "maxNodes": 36, "rendezvous": {"backend": "etcd", "host": "etcd-gpu", "port": 2379},
               "metrics": metrics}

    job = only_job(tmp_path, job_doc("pytorch", nodes=2, elastic=elastic))

    assert job["spec"]["elasticPolicy"] == {
        "minReplicas": 1, "maxReplicas": 36, "rdzvBackend": "etcd", "rdzvHost": "etcd-gpu", "rdzvPort": 2379,
        "metrics": [metrics[0], {"type": "External", "external": {
            "metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
            "target": {"type": "AverageValue", "averageValue": "1500m"}}}],  # as Kueue's webhook stores it
    }


def test_a_rendezvous_without_host_keeps_the_default_endpoint(tmp_path):
    elastic = {"minNodes": 1, "maxNodes": 2, "rendezvous": {"backend": "static", "port": 29500}}

    job = only_job(tmp_path, job_doc("pytorch", nodes=2, elastic=elastic))

    assert job["spec"]["elasticPolicy"] == {"minReplicas": 1, "maxReplicas": 2, "rdzvBackend": "static",
                                            "rdzvPort": 29500}


def test_mxnet_jobs_are_training_jobs(tmp_path):
    assert only_job(tmp_path, job_doc("mxnet"))["spec"]["jobMode"] == "MXTrain"


# --- run policy ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [
        pytest.param("24h", 86400, id="24h is 86400 seconds"),
        pytest.param("7d", 604800, id="7d is 604800 seconds"),
        pytest.param("30m", 1800, id="30m is 1800 seconds"),
        pytest.param("90s", 90, id="90s is 90 seconds"),
        pytest.param(3600, 3600, id="a number is seconds"),
        pytest.param("45", 45, id="a quoted number is seconds too"),
    ],
)
def test_durations_become_run_policy_seconds(tmp_path, duration, seconds):
    job = only_job(tmp_path, job_doc("jax", policy={"activeDeadline": duration, "ttlAfterFinished": duration}))

    assert job["spec"]["runPolicy"]["activeDeadlineSeconds"] == seconds
    assert job["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == seconds


def test_policy_fields_map_to_run_policy_and_replica_restart_policy(tmp_path):
    policy = {"restart": "ExitCode", "backoffLimit": 3, "cleanPods": "Running", "suspend": True}

    job = only_job(tmp_path, job_doc("xgboost", nodes=2, policy=policy))

    assert job["spec"]["runPolicy"] == {"backoffLimit": 3, "cleanPodPolicy": "Running", "suspend": True}
    assert {r["restartPolicy"] for r in replicas(job).values()} == {"ExitCode"}


def test_suspend_false_is_not_written_and_an_empty_run_policy_is_omitted(tmp_path):
    job = only_job(tmp_path, job_doc("jax", policy={"suspend": False}))

    assert "runPolicy" not in job["spec"]


def test_suspend_false_is_not_written_beside_other_policy(tmp_path):
    job = only_job(tmp_path, job_doc("jax", policy={"suspend": False, "backoffLimit": 0}))

    assert job["spec"]["runPolicy"] == {"backoffLimit": 0}


def test_without_restart_the_operator_default_applies(tmp_path):
    job = only_job(tmp_path, job_doc("pytorch", nodes=2))

    assert all("restartPolicy" not in r for r in replicas(job).values())


# --- metadata ------------------------------------------------------------------------------


@FRAMEWORKS
def test_labels_are_on_the_job_and_every_pod_template(tmp_path, framework):
    expected = {"team": "nlp", "app.kubernetes.io/part-of": "bert"}
    doc = with_all_roles(framework)
    doc["metadata"]["labels"] = expected

    job = only_job(tmp_path, doc)

    assert job["metadata"]["labels"] == expected
    for rtype, replica in replicas(job).items():
        assert replica["template"]["metadata"]["labels"] == expected, rtype


def test_project_default_labels_join_the_job_labels_and_the_job_wins(tmp_path):
    project = project_doc(defaults={"labels": {"team": "platform", "cost-center": "ml"}})
    doc = job_doc("jax", labels={"team": "nlp"})

    job = only_job(tmp_path, doc, project=project)

    assert job["metadata"]["labels"] == {"cost-center": "ml", "team": "nlp"}
    assert replicas(job)["Worker"]["template"]["metadata"]["labels"] == {"cost-center": "ml", "team": "nlp"}


@pytest.mark.parametrize(
    ("namespace", "project", "expected"),
    [
        pytest.param(None, None, "default", id="without any namespace the job goes to default"),
        pytest.param(None, {"defaults": {"namespace": "ml"}}, "ml", id="the project default namespace applies"),
        pytest.param("nlp", {"defaults": {"namespace": "ml"}}, "nlp", id="the job's own namespace wins"),
    ],
)
def test_namespace_precedence(tmp_path, namespace, project, expected):
    job = only_job(tmp_path, job_doc("jax", namespace=namespace),
                   project=project_doc(**project) if project else None)

    assert job["metadata"]["namespace"] == expected


# --- podTemplate: the strategic-merge escape hatch -------------------------------------------


def test_pod_template_merges_the_framework_container_by_name(tmp_path):
    pod_template = {
        "metadata": {"annotations": {"sidecar.istio.io/inject": "false"}, "labels": {"extra": "yes"}},
        "spec": {
            "priorityClassName": "batch-low",
            "containers": [
                {"name": "pytorch", "securityContext": {"runAsNonRoot": True},
                 "env": [{"name": "LR", "value": "1e-4"}, {"name": "NCCL_DEBUG", "value": "INFO"}]},
                {"name": "log-shipper", "image": "fluent/fluent-bit:3.0"},
            ],
        },
    }

    job = only_job(tmp_path, job_doc("pytorch", nodes=2, labels={"team": "nlp"}, env={"LR": "3e-5", "SEED": "1"},
                                     resources={"gpu": 1}, podTemplate=pod_template))

    for rtype, replica in replicas(job).items():
        template = replica["template"]
        pod = template["spec"]
        assert [c["name"] for c in pod["containers"]] == ["pytorch", "log-shipper"], rtype
        main = pod["containers"][0]
        assert main["image"] == "ghcr.io/acme/train:1"  # merged, not replaced
        assert main["resources"]["limits"]["nvidia.com/gpu"] == "1"
        assert main["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
        assert main["securityContext"] == {"runAsNonRoot": True}
        assert main["env"] == [
            {"name": "LR", "value": "1e-4"}, {"name": "SEED", "value": "1"}, {"name": "NCCL_DEBUG", "value": "INFO"},
        ]
        assert pod["priorityClassName"] == "batch-low"
        assert template["metadata"] == {
            "annotations": {"sidecar.istio.io/inject": "false"}, "labels": {"extra": "yes", "team": "nlp"},
        }


def test_pod_template_null_removes_a_generated_field(tmp_path):
    pod_template = {"spec": {"containers": [{"name": "jax", "resources": None}]}}

    job = only_job(tmp_path, job_doc("jax", resources={"memory": "4Gi"}, podTemplate=pod_template))

    assert "resources" not in containers(job)["Worker"]


# --- environments ---------------------------------------------------------------------------


def test_an_environment_override_changes_only_that_environment(tmp_path):
    project = project_doc(environments={"dev": {}, "prod": {}})
    doc = job_doc("pytorch", nodes=4, resources={"gpu": 8, "memory": "64Gi"},
                  environments={"dev": {"nodes": 1, "resources": {"gpu": 1}}})

    dev = only_job(tmp_path / "a", doc, env="dev", project=project)
    prod = only_job(tmp_path / "b", doc, env="prod", project=project)

    assert {t: r["replicas"] for t, r in replicas(dev).items()} == {"Master": 1}
    assert containers(dev)["Master"]["resources"]["limits"] == {"memory": "64Gi", "nvidia.com/gpu": "1"}
    assert {t: r["replicas"] for t, r in replicas(prod).items()} == {"Master": 1, "Worker": 3}
    assert containers(prod)["Master"]["resources"]["limits"] == {"memory": "64Gi", "nvidia.com/gpu": "8"}


def test_a_job_is_compiled_into_every_declared_environment(tmp_path):
    project = project_doc(environments={"dev": {}, "staging": {}, "prod": {}})

    for env in ("dev", "staging", "prod"):
        assert len(lowered(tmp_path / env, job_doc("jax"), env=env, project=project)) == 1
