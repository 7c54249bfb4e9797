"""Requests and limits apart, devices and /dev/shm: what `resources` becomes in each target.

Expected values are written from the spec and from what the API server stores (the compiler
writes quantities in the form a Go webhook stores them: `5120Mi` -> `5Gi`), not read back from
lowering. Jobs go through the real pipeline, overlays included.
"""

from __future__ import annotations

import pytest

from compiler_builders import compile_docs, job_doc, only_job, project_doc

ALL = {"vpc.amazonaws.com/efa": 4, "hugepages-2Mi": "5120Mi", "ephemeral-storage": "32Gi"}


def container(job: dict, replica_type: str = "Master") -> dict:
    return job["spec"]["pytorchReplicaSpecs"][replica_type]["template"]["spec"]["containers"][0]


def pod(job: dict, replica_type: str = "Master") -> dict:
    return job["spec"]["pytorchReplicaSpecs"][replica_type]["template"]["spec"]


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        pytest.param({"cpu": "8", "memory": "64Gi"},
                     {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"memory": "64Gi"}},
                     id="cpu is a request and memory a request and an equal limit, as before"),
        pytest.param({"cpu": "8", "memory": "64Gi", "limits": {"cpu": "16", "memory": "80Gi"}},
                     {"requests": {"cpu": "8", "memory": "64Gi"}, "limits": {"cpu": "16", "memory": "80Gi"}},
                     id="limits set a cpu limit and a memory limit above the request"),
        pytest.param({"memory": "64Gi", "limits": {"memory": None}},
                     {"requests": {"memory": "64Gi"}},
                     id="a null memory limit leaves the request alone"),
        pytest.param({"limits": {"cpu": "2"}},
                     {"limits": {"cpu": "2"}},
                     id="a cpu limit without a request is written alone (the server defaults the request)"),
        pytest.param({"cpu": "1", "limits": {"cpu": None}},
                     {"requests": {"cpu": "1"}},
                     id="a null cpu limit changes nothing"),
        pytest.param({"gpu": 8, "memory": "32000Mi", "devices": ALL},
                     {"requests": {"memory": "32000Mi", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4",
                                   "hugepages-2Mi": "5Gi", "ephemeral-storage": "32Gi"},
                      "limits": {"memory": "32000Mi", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4",
                                 "hugepages-2Mi": "5Gi", "ephemeral-storage": "32Gi"}},
                     id="devices are requests with equal limits, beside the gpus"),
    ],
)
def test_requests_and_limits_of_the_program_container(tmp_path, resources, expected):
    job = only_job(tmp_path, job_doc("pytorch", nodes=2, resources=resources))

    assert container(job)["resources"] == expected
    assert container(job, "Worker")["resources"] == expected


def test_an_environment_drops_the_memory_limit_of_the_job(tmp_path):
    project = project_doc(environments={"dev": {}, "prod": {}})
    doc = job_doc("jax", resources={"memory": "8Gi"},
                  environments={"prod": {"resources": {"limits": {"memory": None}}}})
    result = compile_docs(tmp_path, doc, project=project)

    dev, prod = (result.bundles[env][0].rendered_job() for env in ("dev", "prod"))
    worker = {env: job["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
              for env, job in (("dev", dev), ("prod", prod))}
    assert worker == {"dev": {"requests": {"memory": "8Gi"}, "limits": {"memory": "8Gi"}},
                      "prod": {"requests": {"memory": "8Gi"}}}


@pytest.mark.parametrize(
    ("size", "volume"),
    [
        pytest.param("64Gi", {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
                     id="a size is a memory emptyDir with that sizeLimit"),
        pytest.param("unsized", {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                     id="unsized is a memory emptyDir without sizeLimit"),
        pytest.param("host", {"name": "dshm", "hostPath": {"path": "/dev/shm"}},
                     id="host is the node's dev shm as a hostPath"),
    ],
)
def test_shared_memory_kinds(tmp_path, size, volume):
    project = project_doc(policy={"podSecurity": "privileged"})

    job = only_job(tmp_path, job_doc("pytorch", resources={"sharedMemory": size}), project=project)

    assert pod(job)["volumes"] == [volume]
    assert container(job)["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_trainer_v2_carries_limits_devices_and_shared_memory(tmp_path):
    project = project_doc(environments={"prod": {"target": "trainer-v2"}}, policy={"podSecurity": "privileged"})
    resources = {"gpu": 1, "cpu": "2", "memory": "4Gi", "limits": {"cpu": "4", "memory": "8Gi"},
                 "devices": {"rdma/hca_shared_devices_a": 1}, "sharedMemory": "host"}

    (job,) = [b.rendered_job() for b in compile_docs(tmp_path, job_doc("pytorch", resources=resources),
                                                     project=project).bundles["prod"]]

    assert job["spec"]["trainer"]["resourcesPerNode"] == {
        "requests": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1", "rdma/hca_shared_devices_a": "1"},
        "limits": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "1", "rdma/hca_shared_devices_a": "1"},
    }
    node = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]
    pod_spec = node["template"]["spec"]["template"]["spec"]
    assert pod_spec["volumes"] == [{"name": "dshm", "hostPath": {"path": "/dev/shm"}}]
