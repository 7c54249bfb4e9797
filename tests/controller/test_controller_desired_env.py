"""Pure construction: upstream defaulting in memory, validation messages, and the
rendezvous environment corners the lifecycle tests do not reach (elastic PyTorch,
sparse TF_CONFIG, cluster domain, Paddle parameter-server mode, MPI GPU launchers)."""

from __future__ import annotations

import json

import pytest
from controller_kit import container, job

from controller.jobs import checks, desired
from controller.jobs.kinds import KINDS
from foundation.frameworks.defaulting import defaulted


def applied(body, ns="ns", uid="u-1"):
    body = {**body, "metadata": {**body["metadata"], "namespace": ns, "uid": uid}}
    return defaulted(body, KINDS[body["kind"]])


def env(pod, name=None):
    c = next(c for c in pod["spec"]["containers"] if name is None or c["name"] == name)
    return [(e["name"], e.get("value", e.get("valueFrom"))) for e in c.get("env") or []]


# --- defaulting ---------------------------------------------------------------------------


def test_defaults_never_touch_the_input_and_fill_upstream_values():
    body = job("PyTorchJob", "p", Master=1, Worker=None)
    body["spec"]["pytorchReplicaSpecs"]["worker"] = body["spec"]["pytorchReplicaSpecs"].pop("Worker")
    snapshot = json.dumps(body, sort_keys=True)
    out = applied(body)
    assert json.dumps(body, sort_keys=True) == snapshot
    replicas = out["spec"]["pytorchReplicaSpecs"]
    assert sorted(replicas) == ["Master", "Worker"]  # key case normalised
    assert replicas["Worker"]["replicas"] == 1 and replicas["Worker"]["restartPolicy"] == "OnFailure"
    assert replicas["Worker"]["template"]["spec"]["containers"][0]["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]
    assert out["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
    assert out["spec"]["nprocPerNode"] == "auto"


def test_port_goes_to_first_container_when_none_has_the_default_name():
    body = job("TFJob", "t", Worker=1)
    body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [{"name": "sidecar", "image": "x"}]
    out = applied(body)
    assert out["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222}]


@pytest.mark.parametrize("policy,expected", [
    ({"maxReplicas": 4}, (4, 4)), ({"minReplicas": 2}, (2, 2)), ({}, (3, 3)), ({"minReplicas": 1, "maxReplicas": 5}, (1, 5))])
def test_elastic_bounds_defaulting(policy, expected):
    out = applied(job("PyTorchJob", "p", Worker=3, spec={"elasticPolicy": policy}))
    assert (out["spec"]["elasticPolicy"]["minReplicas"], out["spec"]["elasticPolicy"]["maxReplicas"]) == expected


def test_mpi_defaults_zero_workers_and_syncs_clean_pod_policy():
    out = applied(job("MPIJob", "m", Launcher=None, Worker=None, spec={"cleanPodPolicy": "Running"}))
    assert out["spec"]["mpiReplicaSpecs"]["Launcher"]["replicas"] == 1
    assert out["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 0
    assert out["spec"]["runPolicy"]["cleanPodPolicy"] == "Running"
    ports = out["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].get("ports")
    assert ports is None  # MPI declares a port but never defaults it


# --- validation --------------------------------------------------------------------------


@pytest.mark.parametrize("body,message", [
    (job("PyTorchJob", "Bad_Name", Master=1), 'metadata.name: Invalid value: "Bad_Name"'),
    (job("PyTorchJob", "p", Worker=1, spec={"elasticPolicy": {}, "nprocPerNode": "2"}) | {}, None),
    (job("JAXJob", "j", Master=1), 'spec.jaxReplicaSpecs[Master]: Unsupported value: "Master"'),
    (job("XGBoostJob", "x", Worker=1), "spec.xgbReplicaSpecs[Master]: Required value: must be present"),
    (job("PyTorchJob", "p", Master=1, run_policy={"managedBy": "someone"}), 'spec.runPolicy.managedBy: Unsupported value: "someone"'),
], ids=["dns-1035 name", "valid elastic job", "jax master", "xgboost without master", "unknown managedBy"])
def test_validation_messages(body, message):
    found = checks.problems(body, KINDS[body["kind"]])
    if message is None:
        assert found == []
    else:
        assert any(p.startswith(message) for p in found), found


def test_default_container_name_is_required():
    body = job("PaddleJob", "p", Worker=1)
    body["spec"]["paddleReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [{"name": "main", "image": "x"}]
    assert checks.problems(body, KINDS["PaddleJob"]) == [
        'spec.paddleReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container'
        ' with name "paddle"']


def test_every_upstream_example_is_valid():
    import yaml

    from testworld.pytest_plugin import shared_dir

    for path in sorted((shared_dir() / "reference" / "upstream-examples").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        assert checks.problems(doc, KINDS[doc["kind"]]) == [], path.name


# --- desired pods, services and env -------------------------------------------------------


def test_pod_shape_restart_policy_and_template_metadata():
    body = job("XGBoostJob", "x", Master=1, Worker=1, restart="ExitCode")
    body["spec"]["xgbReplicaSpecs"]["Worker"]["template"]["metadata"] = {
        "labels": {"team": "a", "training.kubeflow.org/replica-type": "spoof"}, "annotations": {"a": "b"}, "finalizers": ["f"]}
    pod = desired.pod(applied(body), KINDS["XGBoostJob"], replica_type="Worker", index=0)
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["metadata"]["labels"]["team"] == "a" and pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "worker"
    assert pod["metadata"]["annotations"] == {"a": "b"} and pod["metadata"]["finalizers"] == ["f"]
    assert "generateName" not in pod["metadata"]


def test_pytorch_worker_waits_for_master_with_init_container():
    pod = desired.pod(applied(job("PyTorchJob", "p", Master=1, Worker=1)), KINDS["PyTorchJob"], replica_type="Worker", index=0,
                      options=desired.Options(pytorch_init_image="busybox:1", pytorch_init_max_tries=7,
                                              upstream_init_containers=True))
    assert pod["spec"]["initContainers"] == [{
        "name": "init-pytorch", "image": "busybox:1", "imagePullPolicy": "IfNotPresent",
        "resources": {"limits": {"cpu": "100m", "memory": "20Mi"}, "requests": {"cpu": "50m", "memory": "10Mi"}},
        "command": ["sh", "-c", "err=1;for i in $(seq 7); do if nslookup p-master-0; then err=0 && break; fi;"
                                "echo waiting for master; sleep 2; done; exit $err"]}]
    master = desired.pod(applied(job("PyTorchJob", "p", Master=1, Worker=1)), KINDS["PyTorchJob"], replica_type="Master", index=0)
    assert "initContainers" not in master["spec"]


def test_pytorch_elastic_env_in_upstream_order():
    body = job("PyTorchJob", "e", Worker=2, spec={"elasticPolicy": {
        "minReplicas": 1, "maxReplicas": 3, "maxRestarts": 5, "rdzvBackend": "etcd", "rdzvHost": "etcd.svc", "rdzvPort": 2379,
        "rdzvId": "abc", "rdzvConf": [{"key": "a", "value": "1"}, {"key": "b", "value": "2"}], "standalone": True,
        "nProcPerNode": 4}})
    pod = desired.pod(applied(body), KINDS["PyTorchJob"], replica_type="Worker", index=1)
    assert env(pod) == [("PYTHONUNBUFFERED", "1"), ("PET_RDZV_ENDPOINT", "etcd.svc:2379"), ("PET_RDZV_BACKEND", "etcd"),
                        ("PET_NNODES", "1:3"), ("PET_MAX_RESTARTS", "5"), ("PET_NPROC_PER_NODE", "4"), ("PET_RDZV_ID", "abc"),
                        ("PET_RDZV_CONF", "a=1,b=2"), ("PET_STANDALONE", "")]


def test_pytorch_world_size_multiplies_integer_nproc():
    pod = desired.pod(applied(job("PyTorchJob", "p", Master=1, Worker=1, spec={"nprocPerNode": "8"})), KINDS["PyTorchJob"], replica_type="Worker", index=0)
    assert dict(env(pod))["WORLD_SIZE"] == "16" and dict(env(pod))["PET_NPROC_PER_NODE"] == "8"


def test_user_env_comes_first_and_tf_config_only_on_the_tensorflow_container():
    body = job("TFJob", "t", Worker=2)
    body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "s"}, container("TFJob", env=[{"name": "TF_CONFIG", "value": "user"}])]
    pod = desired.pod(applied(body), KINDS["TFJob"], replica_type="Worker", index=0)
    assert env(pod, "sidecar") == []
    names = [n for n, _ in env(pod, "tensorflow")]
    assert names == ["TF_CONFIG", "TF_CONFIG"] and env(pod, "tensorflow")[0][1] == "user"


def test_tf_config_sparse_form_and_custom_cluster_domain(monkeypatch):
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "cluster.local")
    body = applied(job("TFJob", "t", PS=2, Worker=2, spec={"enableDynamicWorker": True}))
    worker = json.loads(dict(env(desired.pod(body, KINDS["TFJob"], replica_type="Worker", index=1)))["TF_CONFIG"])
    assert worker == {"cluster": {"worker": {"1": "t-worker-1.ns.svc.cluster.local:2222"},
                                  "ps": ["t-ps-0.ns.svc.cluster.local:2222", "t-ps-1.ns.svc.cluster.local:2222"]},
                      "task": {"type": "worker", "index": 1}}
    ps = json.loads(dict(env(desired.pod(body, KINDS["TFJob"], replica_type="PS", index=0)))["TF_CONFIG"])
    assert ps == {"cluster": {"worker": {}, "ps": ["t-ps-0.ns.svc.cluster.local:2222"]}, "task": {"type": "ps", "index": 0}}


def test_paddle_parameter_server_mode():
    body = applied(job("PaddleJob", "pd", Master=2, Worker=2))
    master0, master1 = (env(desired.pod(body, KINDS["PaddleJob"], replica_type="Master", index=i)) for i in (0, 1))
    worker0 = env(desired.pod(body, KINDS["PaddleJob"], replica_type="Worker", index=0))
    ip = {"fieldRef": {"fieldPath": "status.podIP"}}
    assert master0 == [("PYTHONUNBUFFERED", "1"), ("PADDLE_JOB_ID", "pd"), ("PADDLE_NNODES", "4"), ("POD_IP_DUMMY", ip),
                       ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543"), ("PADDLE_SERVER_NUM", "1")]
    assert master1[-2:] == [("PADDLE_MASTER", "pd-master-0:36543"), ("PADDLE_SERVER_NUM", "1")]
    assert worker0[-2:] == [("PADDLE_MASTER", "pd-master-0:36543"), ("PADDLE_TRAINER_NUM", "1")]


def test_mpi_launcher_env_for_gpu_launcher_and_user_bootstrap():
    from controller.jobs import mpi

    body = job("MPIJob", "m", Launcher=1, Worker=2, spec={"slotsPerWorker": 4})
    launcher = body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    launcher["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    launcher["env"] = [{"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "ssh"}]
    out = applied(body)
    pod = mpi.launcher_pod(out, KINDS["MPIJob"], options=desired.Options(mpi_kubectl_delivery_image="img"))
    assert env(pod) == [("I_MPI_HYDRA_BOOTSTRAP", "ssh"), ("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
                        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh")]
    data = mpi.config_data(out, KINDS["MPIJob"], ["m-worker-1", "m-worker-0"])
    assert data["hostfile"] == "m-launcher slots=4\nm-worker-0 slots=4\nm-worker-1 slots=4\n"
    assert data["discover_hosts.sh"] == "#!/bin/sh\necho m-launcher:4\n\necho m-worker-0:4\necho m-worker-1:4"


def test_services_carry_every_port_of_the_default_container():
    body = job("PyTorchJob", "p", Master=1)
    body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "metrics", "containerPort": 9090}]
    svc = desired.service(applied(body), KINDS["PyTorchJob"], replica_type="Master", index=0)
    assert svc["spec"] == {"clusterIP": "None", "selector": svc["metadata"]["labels"],
                           "ports": [{"name": "metrics", "port": 9090}, {"name": "pytorchjob-port", "port": 23456}]}
    assert "training.kubeflow.org/job-role" not in svc["metadata"]["labels"]


@pytest.mark.parametrize(("kind", "replicas"), [("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 1}),
                                                ("MPIJob", {"Launcher": 1, "Worker": 1}),
                                                ("PyTorchJob", {"Master": 1, "Worker": 1})])
def test_a_null_template_metadata_reads_as_absent_for_every_replica(kind, replicas):
    """`metadata:` left empty in YAML reaches the controller as null (the CRD keeps it): the
    rendezvous env of every replica type is what it is without the key."""
    body = job(kind, "n", **replicas)
    plain = applied(body)
    specs = KINDS[kind].facts.replica_specs
    for replica in body["spec"][specs].values():
        replica["template"]["metadata"] = None
    nulled = applied(body)
    for rtype in replicas:
        ours = desired.pod(nulled, KINDS[kind], replica_type=rtype, index=0)
        assert env(ours) == env(desired.pod(plain, KINDS[kind], replica_type=rtype, index=0))
