"""What the test world's kubelet decides before a pod runs, without a cluster: the kubelet's
order (volumes, then each container's image, then its environment; init containers first)
and its words for each cause."""

from __future__ import annotations

import re
from typing import Any

import pytest

from testworld import kubelet_rules as rules

BAD = re.compile(rules.DEFAULT_BAD_IMAGES)


def pod(*containers: dict[str, Any], inits: tuple[dict[str, Any], ...] = (),
        volumes: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"metadata": {"namespace": "ml", "name": "p", "uid": "u"},
            "spec": {"containers": list(containers), "initContainers": list(inits), "volumes": list(volumes)}}


def container(name: str = "main", image: str = "example.com/train:1", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **fields}


def lookup(**objects: set[str]) -> rules.Lookup:
    """Objects as ``secret_hf={"token"}`` / ``configmap_data={"url"}``: their data keys."""
    return lambda kind, name: frozenset(objects[f"{kind}_{name}"]) if f"{kind}_{name}" in objects else None


def secret_key(name: str, key: str, **ref: Any) -> dict[str, Any]:
    return {"name": key.upper(), "valueFrom": {"secretKeyRef": {"name": name, "key": key, **ref}}}


def configmap_key(name: str, key: str) -> dict[str, Any]:
    return {"name": key.upper(), "valueFrom": {"configMapKeyRef": {"name": name, "key": key}}}


@pytest.mark.parametrize(("image", "bad"), [
    ("example.com/train:does-not-exist", True), ("ghcr.io/acme/typo:1", True), ("typo", True),
    ("ghcr.io/acme/typography:1", False), ("example.com/train:1", False),
], ids=["a tag that does not exist", "a name that is a typo", "a bare typo", "a word containing typo", "a good one"])
def test_the_default_pattern_takes_whole_words_of_the_reference(image, bad):
    assert bool(BAD.search(image)) is bad


@pytest.mark.parametrize(("image", "ref"), [
    ("nginx", "docker.io/library/nginx:latest"), ("acme/train:2", "docker.io/acme/train:2"),
    ("docker.io/nginx:1", "docker.io/library/nginx:1"), ("ghcr.io/acme/train", "ghcr.io/acme/train:latest"),
    ("localhost:5000/train:1", "localhost:5000/train:1"), ("r.io/t@sha256:ab", "r.io/t@sha256:ab"),
], ids=["a bare name", "a Docker Hub user's", "Docker Hub's domain", "another registry", "a registry with a port",
        "a digest"])
def test_the_runtime_names_an_image_as_containerd_does(image, ref):
    assert rules.runtime_ref(image) == ref


def test_a_bad_image_fails_with_containerds_error_and_backs_off_naming_it():
    verdict = rules.judge(pod(container(image="acme/train:typo")), lookup(), BAD)
    error = ('rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/acme/train:typo": '
             'failed to resolve reference "docker.io/acme/train:typo": docker.io/acme/train:typo: not found')
    assert verdict.faults == {"main": rules.Fault("pull", error)}
    assert rules.backoff_message("acme/train:typo", error) == (
        f'Back-off pulling image "acme/train:typo": ErrImagePull: {error}')


@pytest.mark.parametrize(("fields", "objects", "message"), [
    ({"env": [secret_key("hf", "token")]}, {}, 'secret "hf" not found'),
    ({"env": [configmap_key("data", "url")]}, {}, 'configmap "data" not found'),
    ({"env": [secret_key("hf", "token")]}, {"secret_hf": {"other"}}, "couldn't find key token in Secret ml/hf"),
    ({"env": [configmap_key("data", "url")]}, {"configmap_data": set()}, "couldn't find key url in ConfigMap ml/data"),
    ({"envFrom": [{"configMapRef": {"name": "all"}}], "env": [secret_key("hf", "token")]}, {},
     'configmap "all" not found'),
    ({"envFrom": [{"secretRef": {"name": "all"}}]}, {}, 'secret "all" not found'),
], ids=["a missing Secret", "a missing ConfigMap", "a Secret without the key", "a ConfigMap without the key",
        "envFrom is read before env", "a missing envFrom Secret"])
def test_an_environment_that_cannot_be_built_is_a_config_error_in_the_kubelets_words(fields, objects, message):
    verdict = rules.judge(pod(container(**fields)), lookup(**objects), BAD)
    assert verdict.faults == {"main": rules.Fault("config", message)}


def test_optional_references_and_found_ones_block_nothing():
    optional = container(env=[secret_key("hf", "token", optional=True)],
                         envFrom=[{"configMapRef": {"name": "x", "optional": True}}])
    found = container("side", env=[secret_key("hf", "token")])
    volume = {"name": "cfg", "secret": {"secretName": "nope", "optional": True}}
    assert rules.judge(pod(optional, found, volumes=(volume,)), lookup(secret_hf={"token"}), BAD).ready


def test_volumes_come_before_images_and_name_each_volume_that_cannot_mount():
    volumes = ({"name": "creds", "secret": {"secretName": "gcp"}}, {"name": "cfg", "configMap": {"name": "settings"}})
    verdict = rules.judge(pod(container(image="x:typo"), volumes=volumes), lookup(), BAD)
    assert (verdict.mounts, verdict.faults) == ([("creds", 'secret "gcp" not found'),
                                                ("cfg", 'configmap "settings" not found')], {})


def test_the_image_comes_before_the_environment_and_each_container_says_its_own():
    verdict = rules.judge(pod(container(image="x:typo", env=[secret_key("hf", "t")]),
                              container("side", env=[secret_key("hf", "t")]), container("ok")), lookup(), BAD)
    assert {name: fault.kind for name, fault in verdict.faults.items()} == {"main": "pull", "side": "config"}


def test_an_init_container_that_cannot_start_holds_the_others_initializing():
    init = container("fetch", env=[secret_key("hf", "t")])
    the_pod = pod(container(image="x:typo"), inits=(init, container("later", image="y:typo")))
    verdict = rules.judge(the_pod, lookup(), BAD)
    assert (verdict.init, list(verdict.faults)) == (True, ["fetch"])
    status = rules.waiting_status(the_pod, verdict, pull_reason="ErrImagePull", now="T", host_ip=None)
    assert [(s["name"], s["state"]) for s in status["initContainerStatuses"] + status["containerStatuses"]] == [
        ("fetch", {"waiting": {"reason": "CreateContainerConfigError", "message": 'secret "hf" not found'}}),
        ("later", {"waiting": {"reason": "PodInitializing"}}), ("main", {"waiting": {"reason": "PodInitializing"}})]
    initialized = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert (initialized["status"], initialized["reason"], initialized["message"]) == (
        "False", "ContainersNotInitialized", "containers with incomplete status: [fetch later]")


def test_a_pod_that_cannot_mount_waits_creating_without_a_sandbox():
    the_pod = pod(container(), container("side"), volumes=({"name": "cfg", "configMap": {"name": "c"}},))
    status = rules.waiting_status(the_pod, rules.judge(the_pod, lookup(), BAD), pull_reason="ErrImagePull", now="T",
                                  host_ip="10.128.0.1")
    assert [s["state"] for s in status["containerStatuses"]] == [{"waiting": {"reason": "ContainerCreating"}}] * 2
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert conditions == {
        "PodReadyToStartContainers": ("False", None, None), "Initialized": ("True", None, None),
        "ContainersReady": ("False", "ContainersNotReady", "containers with unready status: [main side]"),
        "Ready": ("False", "ContainersNotReady", "containers with unready status: [main side]")}
    assert (status["phase"], status["hostIP"], "podIP" in status) == ("Pending", "10.128.0.1", False)


def test_lookups_off_resolve_every_reference():
    the_pod = pod(container(env=[secret_key("hf", "t")]), volumes=({"name": "cfg", "configMap": {"name": "c"}},))
    assert rules.judge(the_pod, None, BAD).ready


@pytest.mark.parametrize(("fields", "line"), [
    ({"command": ["python", "train.py"], "args": ["--lr", "3e-5"]}, "python train.py --lr 3e-5"),
    ({"args": ["--data", "a b"]}, "<entrypoint of example.com/train:1> --data 'a b'"),
    ({}, "<entrypoint of example.com/train:1>"),
], ids=["a command and args", "args to the image's entrypoint", "the image's entrypoint alone"])
def test_a_container_says_what_it_runs_as_a_shell_would_quote_it(fields, line):
    assert rules.command_line(container(**fields)) == line
