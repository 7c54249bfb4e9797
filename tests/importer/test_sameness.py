"""`compiler.importing.sameness`: when two manifests are the same job (the round trip's contract)."""

from __future__ import annotations

import copy

import pytest

from compiler.importing.sameness import canonical, differences


def job(**replica) -> dict:
    container = {"name": "pytorch", "image": "ghcr.io/acme/train:1.0", **replica.pop("container", {})}
    worker = {"replicas": 2, "template": {"spec": {"containers": [container], **replica.pop("pod", {})}}, **replica}
    return {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "bert", "namespace": "nlp"},
        "spec": {"pytorchReplicaSpecs": {"Master": copy.deepcopy({**worker, "replicas": 1}), "Worker": worker}},
    }


def changed(base: dict, edit) -> dict:
    out = copy.deepcopy(base)
    edit(out)
    return out


SAME = [
    ("the operator's default restart policy written out", lambda j: [
        r.update(restartPolicy="OnFailure") for r in j["spec"]["pytorchReplicaSpecs"].values()]),
    ("what kubectl get adds to metadata", lambda j: j["metadata"].update(
        uid="0b5c", resourceVersion="42", generation=3, creationTimestamp="2024-01-01T00:00:00Z",
        managedFields=[{"manager": "kubectl"}], annotations={"kubectl.kubernetes.io/last-applied-configuration": "{}"})),
    ("a status", lambda j: j.update(status={"conditions": [{"type": "Running", "status": "True"}]})),
    ("trainforge's own marks", lambda j: j["metadata"].update(annotations={"trainforge.dev/source": "jobs/a.yaml"})),
    ("the framework port the operator adds", lambda j: [
        r["template"]["spec"]["containers"][0].update(ports=[{"name": "pytorchjob-port", "containerPort": 23456}])
        for r in j["spec"]["pytorchReplicaSpecs"].values()]),
    ("a quantity written another way", lambda j: [
        r["template"]["spec"]["containers"][0].update(resources={"requests": {"cpu": 2, "memory": "1024Mi"},
                                                                 "limits": {"nvidia.com/gpu": 1}})
        for r in j["spec"]["pytorchReplicaSpecs"].values()]),
    ("limits without requests (the pod asks for the limits)", lambda j: [
        r["template"]["spec"]["containers"][0]["resources"]["requests"].pop("nvidia.com/gpu")
        for r in j["spec"]["pytorchReplicaSpecs"].values()]),
    ("a pull policy that is the default for a tagged image", lambda j: [
        r["template"]["spec"]["containers"][0].update(imagePullPolicy="IfNotPresent")
        for r in j["spec"]["pytorchReplicaSpecs"].values()]),
    ("null, empty maps and suspend false", lambda j: j["spec"].update(runPolicy={"suspend": False, "backoffLimit": None},
                                                                      elasticPolicy=None)),
    ("the pod template's own restart policy, which the operator overwrites", lambda j: [
        r["template"]["spec"].update(restartPolicy="Always") for r in j["spec"]["pytorchReplicaSpecs"].values()]),
]
OTHER = [
    ("another image", lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(
        image="ghcr.io/acme/train:2.0"), "spec.pytorchReplicaSpecs.Worker.template.spec.containers[pytorch].image"),
    ("another replica count", lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=3),
     "spec.pytorchReplicaSpecs.Worker.replicas"),
    ("a restart policy that is not the default", lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(
        restartPolicy="Never"), "spec.pytorchReplicaSpecs.Worker.restartPolicy"),
    ("an env variable's order", lambda j: [c.update(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "$(A)"}][
        ::(-1 if c is j["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0] else 1)])
        for r in j["spec"]["pytorchReplicaSpecs"].values() for c in r["template"]["spec"]["containers"]],
     "spec.pytorchReplicaSpecs.Worker.template.spec.containers[pytorch].env (order)"),
    ("a label on the job", lambda j: j["metadata"].update(labels={"team": "nlp"}), "metadata.labels.team"),
    ("a boolean for a number", lambda j: j["spec"].update(runPolicy={"backoffLimit": True}),
     "spec.runPolicy.backoffLimit"),
]


@pytest.mark.parametrize("edit", [e for _, e in SAME], ids=[n for n, _ in SAME])
def test_the_same_job(edit):
    base = job(container={"resources": {"requests": {"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "1"},
                                        "limits": {"nvidia.com/gpu": "1"}}})

    assert differences(base, changed(base, edit)) == []


@pytest.mark.parametrize(("edit", "path"), [(e, p) for _, e, p in OTHER], ids=[n for n, _, _ in OTHER])
def test_another_job(edit, path):
    base = job(container={"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "$(A)"}]})

    found = differences(base, changed(base, edit))

    assert [d.path for d in found] == [path]


def test_volumes_are_compared_by_name_whatever_their_order():
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}, {"name": "dshm", "emptyDir": {}}]

    assert differences(job(pod={"volumes": volumes}), job(pod={"volumes": volumes[::-1]})) == []


def test_an_empty_volume_source_is_kept():
    """emptyDir: {} is what makes the volume an emptyDir: it is no empty map to drop."""
    pod = canonical(job(pod={"volumes": [{"name": "scratch", "emptyDir": {}}]}))["spec"]["pytorchReplicaSpecs"]

    assert pod["Worker"]["template"]["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}}]


def test_a_difference_names_both_values():
    base = job()
    other = changed(base, lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"].update(replicas=5))

    (found,) = differences(base, other)

    assert (found.original, found.roundtripped) == (2, 5)
    assert found.text() == "spec.pytorchReplicaSpecs.Worker.replicas: 2 -> 5"
