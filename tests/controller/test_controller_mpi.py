"""MPIJob on the real API server: launcher RBAC, hostfile ConfigMap, worker and launcher
pods exactly as upstream's v1 controller builds them, and the status quirks
(`MPIJobMPIJobFailed`)."""

from __future__ import annotations

import pytest
from controller_kit import env_of, job, wait_for

from foundation.cluster.kube import (
    CONFIGMAPS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
)

OP = "training.kubeflow.org/operator-name"
KUBEXEC = '#!/bin/sh\nset -x\nPOD_NAME=$1\nshift\n/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'


def mpi_job(workers: int, **kw):
    body = job("MPIJob", "mpi", Launcher=1, Worker=workers, **kw)
    body["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]["command"] = ["mpirun", "hostname"]
    return body


@pytest.mark.parametrize("workers", [1, 2], ids=["one worker node", "two worker nodes"])
def test_mpijob_runs_and_succeeds(cluster, manager, workers: int) -> None:
    applied = cluster.apply(mpi_job(workers))
    uid = applied["metadata"]["uid"]
    names = {"mpi-launcher", *(f"mpi-worker-{i}" for i in range(workers))}
    pods = cluster.wait_pods(names)
    launcher = pods["mpi-launcher"]
    assert launcher["metadata"]["labels"] == {
        OP: "mpijob-controller", "training.kubeflow.org/job-name": "mpi",
        "training.kubeflow.org/replica-type": "launcher", "training.kubeflow.org/job-role": "master"}
    assert launcher["spec"]["serviceAccountName"] == "mpi-launcher"
    assert launcher["spec"]["restartPolicy"] == "Never"
    assert [(e["name"], e.get("value", "")) for e in launcher["spec"]["containers"][0]["env"]] == [
        ("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"), ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("NVIDIA_VISIBLE_DEVICES", ""), ("NVIDIA_DRIVER_CAPABILITIES", ""),
        ("I_MPI_HYDRA_BOOTSTRAP", "rsh"), ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh")]
    init = launcher["spec"]["initContainers"][0]
    assert (init["name"], init["image"], init["imagePullPolicy"]) == (
        "kubectl-delivery", "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest", "IfNotPresent")
    assert env_of({"spec": {"containers": [init]}}) == {"TARGET_DIR": "/opt/kube", "NAMESPACE": cluster.namespace}
    assert init["resources"]["limits"] == {"cpu": "100m", "memory": "512Mi", "ephemeral-storage": "5Gi"}
    assert [(m["name"], m["mountPath"]) for m in launcher["spec"]["containers"][0]["volumeMounts"]][-2:] == [
        ("mpi-job-kubectl", "/opt/kube"), ("mpi-job-config", "/etc/mpi")]
    config_volume = next(v for v in launcher["spec"]["volumes"] if v["name"] == "mpi-job-config")
    assert [(i["key"], i["mode"]) for i in config_volume["configMap"]["items"]] == [
        ("kubexec.sh", 0o555), ("hostfile", 0o444), ("discover_hosts.sh", 0o555)]
    for i in range(workers):
        worker = pods[f"mpi-worker-{i}"]
        assert worker["metadata"]["labels"] == {
            OP: "mpijob-controller", "training.kubeflow.org/job-name": "mpi",
            "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": str(i)}
        main = worker["spec"]["containers"][0]
        assert (main["command"], main["args"]) == (["sleep"], ["365d"])
        assert main["volumeMounts"][-1] == {"name": "mpi-job-config", "mountPath": "/etc/mpi"}
        assert "env" not in main
    for pod in pods.values():
        assert pod["metadata"]["ownerReferences"][0]["uid"] == uid
    assert cluster.objects(SERVICES) == {}

    config = wait_for(lambda: cluster.objects(CONFIGMAPS).get("mpi-config"), what="mpi-config")
    assert config["metadata"]["labels"]["app"] == "mpi"
    assert config["data"] == {
        "hostfile": "".join(f"mpi-worker-{i} slots=1\n" for i in range(workers)),
        "kubexec.sh": KUBEXEC,
        "discover_hosts.sh": "#!/bin/sh",
    }
    sa = cluster.objects(SERVICEACCOUNTS)["mpi-launcher"]
    assert sa["metadata"]["ownerReferences"][0]["uid"] == uid
    role = cluster.objects(ROLES)["mpi-launcher"]
    assert role["rules"] == [
        {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["create"], "apiGroups": [""], "resources": ["pods/exec"],
         "resourceNames": [f"mpi-worker-{i}" for i in range(workers)]}]
    binding = cluster.objects(ROLEBINDINGS)["mpi-launcher"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "mpi-launcher", "namespace": cluster.namespace}]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "mpi-launcher"}

    cluster.run_all(*names)
    running = cluster.wait_condition("MPIJob", "mpi", "Running")
    assert running["status"]["conditions"][-1]["message"] == "MPIJob mpi is running."
    hosts = "#!/bin/sh" + "".join(f"\necho mpi-worker-{i}:1" for i in range(workers))
    wait_for(lambda: cluster.objects(CONFIGMAPS)["mpi-config"]["data"]["discover_hosts.sh"] == hosts, what="discover_hosts")

    cluster.set_phase("mpi-launcher", "Succeeded")
    done = cluster.wait_condition("MPIJob", "mpi", "Succeeded")
    assert [(c["type"], c["status"], c["reason"]) for c in done["status"]["conditions"]] == [
        ("Created", "True", "MPIJobCreated"), ("Running", "False", "MPIJobRunning"), ("Succeeded", "True", "MPIJobSucceeded")]
    assert done["status"]["conditions"][-1]["message"] == "MPIJob mpi is successfully completed."
    assert done["status"]["replicaStatuses"] == {"Launcher": {"succeeded": 1}, "Worker": {}}


def test_mpijob_launcher_failure_uses_upstreams_double_prefixed_reason(cluster, manager) -> None:
    cluster.apply(mpi_job(1))
    cluster.wait_pods({"mpi-launcher", "mpi-worker-0"})
    cluster.run_all("mpi-launcher", "mpi-worker-0")
    cluster.wait_condition("MPIJob", "mpi", "Running")
    cluster.set_phase("mpi-launcher", "Failed", exit_code=1)
    done = cluster.wait_condition("MPIJob", "mpi", "Failed")
    failed = done["status"]["conditions"][-1]
    assert (failed["reason"], failed["message"]) == ("MPIJobMPIJobFailed", "MPIJob mpi is failed because 1 Launcher replica(s) failed.")
    assert done["status"]["replicaStatuses"] == {"Launcher": {"failed": 1}, "Worker": {}}
