"""The Kubeflow Python SDK (`kubeflow-training` 1.9.4), pointed at the test API server,
reads our status exactly as it reads the upstream operator's: conditions, created /
running / succeeded / failed, master pod lookup by label, typed replica statuses."""

from __future__ import annotations

import pytest
from kubeflow.training import TrainingClient

from controller_kit import job

SDK_KINDS = [  # (kind, replicas, pods to run, pods that finish the job, master pod)
    ("PyTorchJob", {"Master": 1, "Worker": 1}, ["sdk-master-0", "sdk-worker-0"], ["sdk-master-0"], "sdk-master-0"),
    ("TFJob", {"Chief": 1, "Worker": 1}, ["sdk-chief-0", "sdk-worker-0"], ["sdk-chief-0"], "sdk-chief-0"),
    ("XGBoostJob", {"Master": 1, "Worker": 1}, ["sdk-master-0", "sdk-worker-0"], ["sdk-master-0"], "sdk-master-0"),
    ("PaddleJob", {"Worker": 2}, ["sdk-worker-0", "sdk-worker-1"], ["sdk-worker-0", "sdk-worker-1"], None),
    ("JAXJob", {"Worker": 2}, ["sdk-worker-0", "sdk-worker-1"], ["sdk-worker-0", "sdk-worker-1"], "sdk-worker-0"),
    ("MPIJob", {"Launcher": 1, "Worker": 1}, ["sdk-launcher", "sdk-worker-0"], ["sdk-launcher"], "sdk-launcher"),
]


# The SDK's generated models require spec.runPolicy (the Go field has no omitempty), so
# its get_job fails on any job applied without one, against upstream as against us. Its
# own create_job always sets it; so do these tests.
RUN_POLICY = {"cleanPodPolicy": "None"}


@pytest.fixture
def sdk(control_plane, namespace):
    return TrainingClient(config_file=str(control_plane.kubeconfig), namespace=namespace)


@pytest.mark.parametrize("kind,replicas,run,finish,master", SDK_KINDS, ids=[k[0] for k in SDK_KINDS])
def test_sdk_reports_conditions_and_success(cluster, manager, sdk, kind, replicas, run, finish, master) -> None:
    cluster.apply(job(kind, "sdk", run_policy=RUN_POLICY, **replicas))
    cluster.wait_pods(set(run))
    cluster.wait_condition(kind, "sdk", "Created")
    assert sdk.is_job_created("sdk", job_kind=kind)
    assert not sdk.is_job_running("sdk", job_kind=kind)
    if master:
        assert sdk.get_job_pod_names("sdk", is_master=True) == [master]
    cluster.run_all(*run)
    cluster.wait_condition(kind, "sdk", "Running")
    assert sdk.is_job_running("sdk", job_kind=kind)
    for pod in finish:
        cluster.set_phase(pod, "Succeeded")
    cluster.wait_condition(kind, "sdk", "Succeeded")
    finished = sdk.wait_for_job_conditions("sdk", job_kind=kind, wait_timeout=10, polling_interval=1)
    assert sdk.is_job_succeeded("sdk", job_kind=kind)
    assert not sdk.is_job_running("sdk", job_kind=kind) and not sdk.is_job_failed("sdk", job_kind=kind)
    conditions = sdk.get_job_conditions("sdk", job_kind=kind)
    assert [(c.type, c.status, c.reason) for c in conditions] == [
        ("Created", "True", f"{kind}Created"), ("Running", "False", f"{kind}Running"), ("Succeeded", "True", f"{kind}Succeeded")]
    assert finished.status.start_time is not None and finished.status.completion_time is not None
    assert set(finished.status.replica_statuses) == set(replicas)


def test_sdk_reports_failure(cluster, manager, sdk) -> None:
    cluster.apply(job("PyTorchJob", "sdk", Master=1, Worker=1, restart="Never", run_policy=RUN_POLICY))
    cluster.wait_pods({"sdk-master-0", "sdk-worker-0"})
    cluster.run_all("sdk-master-0", "sdk-worker-0")
    cluster.set_phase("sdk-master-0", "Failed", exit_code=3)
    cluster.wait_condition("PyTorchJob", "sdk", "Failed")
    assert sdk.is_job_failed("sdk") and not sdk.is_job_succeeded("sdk")
    with pytest.raises(RuntimeError, match=r"PyTorchJob .*/sdk is Failed"):
        sdk.wait_for_job_conditions("sdk", wait_timeout=5, polling_interval=1)
    pods = sdk.get_job_pod_names("sdk", replica_type="worker")
    assert pods == ["sdk-worker-0"]


def test_job_created_through_the_sdk_is_reconciled(cluster, manager, sdk) -> None:
    from kubernetes.client import V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec
    from kubeflow.training import KubeflowOrgV1PyTorchJob, KubeflowOrgV1PyTorchJobSpec, KubeflowOrgV1ReplicaSpec, KubeflowOrgV1RunPolicy

    template = V1PodTemplateSpec(spec=V1PodSpec(containers=[V1Container(name="pytorch", image="example.com/pt:1")]))
    body = KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1", kind="PyTorchJob", metadata=V1ObjectMeta(name="via-sdk", namespace=cluster.namespace),
        spec=KubeflowOrgV1PyTorchJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy=None),
            pytorch_replica_specs={"Master": KubeflowOrgV1ReplicaSpec(replicas=1, template=template),
                                   "Worker": KubeflowOrgV1ReplicaSpec(replicas=1, template=template)}))
    sdk.create_job(job=body)
    cluster.wait_pods({"via-sdk-master-0", "via-sdk-worker-0"})
    cluster.run_all("via-sdk-master-0", "via-sdk-worker-0")
    cluster.set_phase("via-sdk-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "via-sdk", "Succeeded")
    assert sdk.is_job_succeeded("via-sdk")
    assert sdk.get_job_pod_names("via-sdk", is_master=True) == ["via-sdk-master-0"]
