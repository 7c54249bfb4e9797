"""The storage overlay alone: existing claims, new PVCs, mounts in every role."""

from __future__ import annotations

import pytest
from overlay_kit import build_bundle, component_yaml, kubernetes_errors, templates

from overlays import storage

DATA = {"name": "data", "mountPath": "/data", "claim": "imagenet", "readOnly": True}
CKPT = {"name": "ckpt", "mountPath": "/ckpt", "size": "500Gi", "storageClass": "fast-rwx", "accessMode": "ReadWriteMany"}
SCRATCH = {"name": "scratch", "mountPath": "/scratch", "size": "10Gi"}


def _framework_container(template: dict, name: str) -> dict:
    return next(c for c in template["spec"]["containers"] if c["name"] == name)


def test_claim_and_new_volume_snapshot(yaml_snapshot):
    bundle = build_bundle({"nodes": 2, "storage": [DATA, CKPT]})
    assert component_yaml(bundle, storage.apply(bundle).component("storage")) == yaml_snapshot


def test_new_volume_becomes_a_claim_named_after_job_and_volume():
    bundle = build_bundle({"storage": [CKPT, SCRATCH]})
    claims = {c["metadata"]["name"]: c for c in storage.apply(bundle).component("storage").resources}
    assert set(claims) == {"mini-ckpt", "mini-scratch"}
    assert claims["mini-ckpt"]["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "resources": {"requests": {"storage": "500Gi"}},
        "storageClassName": "fast-rwx",
    }
    assert claims["mini-scratch"]["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "10Gi"}},
    }


def test_existing_claim_creates_no_object_and_is_mounted_read_only():
    bundle = build_bundle({"storage": [DATA]})
    out = storage.apply(bundle)
    assert out.component("storage").resources == ()
    pod = templates(out.rendered_job(), bundle)["Master"]
    assert pod["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": True}}
    ]
    assert _framework_container(pod, "pytorch")["volumeMounts"] == [
        {"name": "data", "mountPath": "/data", "readOnly": True}
    ]


def test_writable_volume_has_no_read_only_flags():
    bundle = build_bundle({"storage": [SCRATCH]})
    pod = templates(storage.apply(bundle).rendered_job(), bundle)["Master"]
    assert pod["spec"]["volumes"] == [{"name": "scratch", "persistentVolumeClaim": {"claimName": "mini-scratch"}}]
    assert _framework_container(pod, "pytorch")["volumeMounts"] == [{"name": "scratch", "mountPath": "/scratch"}]


@pytest.mark.parametrize(
    ("framework", "spec", "roles"),
    [
        pytest.param("tensorflow", {"nodes": 2, "roles": {"ps": {"replicas": 2}, "evaluator": {}}},
                     {"Chief", "Worker", "PS", "Evaluator"}, id="tensorflow chief, workers, ps and evaluator"),
        pytest.param("mpi", {"nodes": 2}, {"Launcher", "Worker"}, id="mpi launcher and workers"),
        pytest.param("mxnet", {"nodes": 2, "roles": {"server": {"replicas": 1}}},
                     {"Scheduler", "Server", "Worker"}, id="mxnet scheduler, servers and workers"),
        pytest.param("paddle", {"nodes": 2, "roles": {"ps": {"replicas": 1}}},
                     {"Master", "Worker"}, id="paddle parameter-server mode"),
    ],
)
def test_every_role_gets_the_volumes_in_its_framework_container(framework, spec, roles):
    bundle = build_bundle({**spec, "storage": [DATA, SCRATCH]}, framework=framework)
    container = bundle.adapter.facts.container
    pods = templates(storage.apply(bundle).rendered_job(), bundle)
    assert set(pods) == roles
    for pod in pods.values():
        assert [v["name"] for v in pod["spec"]["volumes"] if v["name"] != "dshm"] == ["data", "scratch"]
        mounts = _framework_container(pod, container)["volumeMounts"]
        assert [m["mountPath"] for m in mounts if m["name"] != "dshm"] == ["/data", "/scratch"]


def test_shared_memory_volume_is_kept_and_volumes_are_appended():
    bundle = build_bundle({"resources": {"gpu": 1, "sharedMemory": "8Gi"}, "storage": [DATA]})
    patches = storage.apply(bundle).component("storage").patches
    assert {p["path"] for p in patches} == {
        "/spec/pytorchReplicaSpecs/Master/template/spec/volumes/-",
        "/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/volumeMounts/-",
    }
    pod = templates(storage.apply(bundle).rendered_job(), bundle)["Master"]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["dshm", "data"]
    assert [m["name"] for m in pod["spec"]["containers"][0]["volumeMounts"]] == ["dshm", "data"]


def test_sidecars_from_pod_template_get_no_mounts():
    bundle = build_bundle(
        {"storage": [DATA], "podTemplate": {"spec": {"containers": [{"name": "proxy", "image": "envoy:1"}]}}}
    )
    pod = templates(storage.apply(bundle).rendered_job(), bundle)["Master"]
    assert "volumeMounts" not in _framework_container(pod, "proxy")
    assert _framework_container(pod, "pytorch")["volumeMounts"][0]["name"] == "data"


def test_no_storage_writes_no_component():
    assert storage.apply(build_bundle({"nodes": 3})).components == ()


def test_claims_validate_against_the_kubernetes_schemas():
    bundle = build_bundle({"storage": [CKPT, SCRATCH]}, metadata={"labels": {"team": "nlp"}})
    for claim in storage.apply(bundle).component("storage").resources:
        assert kubernetes_errors(claim) == [], claim
