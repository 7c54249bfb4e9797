"""The spec's pod fields in the kubeflow.org/v1 and mpi-operator jobs: where each lands in every pod.

`imagePullPolicy`, `securityContext` (the job's, a role's replacing it), `port`, `podLabels` and
`podAnnotations` (a role's over the job's), `scheduling.schedulerName` and the storage sources
other than claims, compiled through the real pipeline; the MPIJob checked against the
mpi-operator's CRD (`test_mpi_operator_target.prod_job`). Trainer v2's are in
test_trainer_v2_lowering.py, their refusals in test_invalid_specs.py.
"""

from __future__ import annotations

from typing import Any

from compiler_builders import compile_docs, job_doc
from test_mpi_operator_target import prod_job

POD_FIELDS: dict[str, Any] = {
    "imagePullPolicy": "Always",
    "securityContext": {"runAsUser": 1000},
    "podLabels": {"app": "mnist"},
    "podAnnotations": {"sidecar.istio.io/inject": "false"},
    "scheduling": {"schedulerName": "kai-scheduler"},
    "storage": [
        {"name": "code", "mountPath": "/code", "configMap": "scripts"},
        {"name": "sa", "mountPath": "/secret", "secret": "gcp-sa", "readOnly": True},
        {"name": "ib", "mountPath": "/dev/infiniband", "hostPath": "/dev/infiniband"},
        {"name": "scratch", "mountPath": "/scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}},
    ],
}
PRIVILEGED = {"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project", "policy": {"podSecurity": "privileged"}}


def v1_job(folder, doc) -> dict[str, Any]:
    result = compile_docs(folder, doc, project=PRIVILEGED)
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    (bundle,) = next(iter(result.bundles.values()))
    return bundle.rendered_job()


def _templates(job: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    return {rtype: replica["template"] for rtype, replica in job["spec"][key].items()}


def _assert_every_pod_has_the_fields(templates: dict[str, dict[str, Any]], program: dict[str, str]) -> None:
    for rtype, template in templates.items():
        (container,) = [c for c in template["spec"]["containers"] if c["name"] == program[rtype]]
        assert container["imagePullPolicy"] == "Always", rtype
        assert container["securityContext"] == {"runAsUser": 1000}, rtype
        assert template["metadata"]["labels"]["app"] == "mnist", rtype
        assert template["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}, rtype
        assert template["spec"]["schedulerName"] == "kai-scheduler", rtype
        volumes = {v["name"]: {k: v for k, v in v.items() if k != "name"} for v in template["spec"]["volumes"]}
        assert volumes == {"code": {"configMap": {"name": "scripts"}}, "sa": {"secret": {"secretName": "gcp-sa"}},
                           "ib": {"hostPath": {"path": "/dev/infiniband"}},
                           "scratch": {"emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}}, rtype
        assert {"name": "sa", "mountPath": "/secret", "readOnly": True} in container["volumeMounts"], rtype


def test_the_pod_fields_reach_every_pytorch_pod(tmp_path):
    job = v1_job(tmp_path, job_doc("pytorch", nodes=2, **POD_FIELDS))

    _assert_every_pod_has_the_fields(_templates(job, "pytorchReplicaSpecs"), {"Master": "pytorch", "Worker": "pytorch"})
    assert "app" not in job["metadata"].get("labels", {})  # pod labels are the pods' only
    assert "annotations" not in job["metadata"]


def test_the_pod_fields_reach_the_mpi_operators_launcher_and_workers(tmp_path):
    # a non-root user's sshd needs its own keys' path (mpi_operator_rules._ssh_user)
    doc = job_doc("mpi", nodes=2, **POD_FIELDS, mpi={"sshAuthMountPath": "/home/mpiuser/.ssh"},
                  roles={"launcher": {"container": "launcher"},
                         "worker": {"command": ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]}})
    job = prod_job(tmp_path, doc, policy={"podSecurity": "privileged"})

    _assert_every_pod_has_the_fields(_templates(job, "mpiReplicaSpecs"), {"Launcher": "launcher", "Worker": "mpi"})


def test_an_env_value_from_a_pod_field_is_the_downward_api(tmp_path):
    env = {"POD_NAME": {"field": "metadata.name"},
           "REPLICA": {"field": "metadata.labels['training.kubeflow.org/replica-index']"}}
    job = v1_job(tmp_path, job_doc("pytorch", env=env))

    (container,) = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"]
    assert [e for e in container["env"] if e["name"] in env] == [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "REPLICA", "valueFrom": {"fieldRef": {
            "fieldPath": "metadata.labels['training.kubeflow.org/replica-index']"}}}]


def test_a_framework_port_replaces_the_operators_default(tmp_path):
    job = v1_job(tmp_path, job_doc("xgboost", nodes=2, port=9991))

    for rtype, template in _templates(job, "xgbReplicaSpecs").items():
        (container,) = template["spec"]["containers"]
        assert container["ports"] == [{"name": "xgboostjob-port", "containerPort": 9991}], rtype


def test_a_roles_own_labels_and_security_context_reach_its_pods_only(tmp_path):
    doc = job_doc("pytorch", nodes=2, podLabels={"app": "mnist"}, securityContext={"runAsUser": 1000},
                  roles={"worker": {"podLabels": {"tier": "worker"}, "securityContext": {"runAsUser": 2000}}})
    templates = _templates(v1_job(tmp_path, doc), "pytorchReplicaSpecs")

    assert templates["Master"]["metadata"]["labels"] == {"app": "mnist"}
    assert templates["Worker"]["metadata"]["labels"] == {"app": "mnist", "tier": "worker"}
    assert templates["Master"]["spec"]["containers"][0]["securityContext"] == {"runAsUser": 1000}
    assert templates["Worker"]["spec"]["containers"][0]["securityContext"] == {"runAsUser": 2000}
