"""Pods that wait for a real cause in the pod world, as a kubelet makes them wait: an image that
cannot be pulled, a Secret or ConfigMap that does not exist (until it is created), with the
kubelet's reasons, messages and Events; and every pod's log without a test-written `Logs`
object (`testworld.kubelet` beside kwok)."""

from __future__ import annotations

from typing import Any

import pytest

from foundation.cluster.kube import CONFIGMAPS, EVENTS, PODS
from testworld import podlogs, stages
from testworld.kubelet import SECRETS
from testworld.watching import Missing, wait_for

PULL_ERROR = ('rpc error: code = NotFound desc = failed to pull and unpack image '
              '"example.com/train:does-not-exist": failed to resolve reference "example.com/train:does-not-exist": '
              'example.com/train:does-not-exist: not found')


def pod(name: str, *, image: str = "example.com/train:1", env: list[dict[str, Any]] | None = None,
        volumes: list[dict[str, Any]] | None = None, annotations: dict[str, str] | None = None,
        restart: str = "Never", **container: Any) -> dict[str, Any]:
    main = {"name": "main", "image": image, "env": env or [], **container}
    if volumes:
        main["volumeMounts"] = [{"name": v["name"], "mountPath": f"/etc/{v['name']}"} for v in volumes]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "annotations": {stages.RUN_SECONDS: "forever", **(annotations or {})}},
            "spec": {"restartPolicy": restart, "containers": [main], "volumes": volumes or []}}


class Seen:
    """Every (phase, waiting reason) a pod showed, watched: what it never was is known."""

    def __init__(self, client: Any, namespace: str, name: str) -> None:
        self.client, self.namespace, self.name = client, namespace, name
        self.states: list[tuple[str, str | None]] = []
        self.pod: dict[str, Any] = {}

    def until(self, want: Any, what: str) -> dict[str, Any]:
        def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
            current = objects.get((self.namespace, self.name))
            if current is None:
                return Missing("no pod")
            self.pod = current
            status = current.get("status") or {}
            waiting = [(s.get("state") or {}).get("waiting") for s in status.get("containerStatuses") or []]
            state = (status.get("phase", ""), (waiting[0] or {}).get("reason") if waiting else None)
            if not self.states or self.states[-1] != state:
                self.states.append(state)
            return current if want(current) else Missing(f"{state}")
        return wait_for(self.client, PODS, check, namespace=self.namespace, timeout=60, what=what)


def waiting(pod_: dict[str, Any]) -> dict[str, Any]:
    return ((pod_.get("status") or {}).get("containerStatuses") or [{}])[0].get("state", {}).get("waiting") or {}


def reason_is(reason: str) -> Any:
    return lambda pod_: waiting(pod_).get("reason") == reason


def waited_then_ran(states: list[tuple[str, str | None]], reason: str) -> bool:
    """Pending throughout, waiting for ``reason`` at some point, Running only at the end."""
    return (states[-1] == ("Running", None) and ("Pending", reason) in states
            and all(phase == "Pending" for phase, _ in states[:-1]))


def is_running(pod_: dict[str, Any]) -> bool:
    return (pod_.get("status") or {}).get("phase") == "Running"


def events(client: Any, namespace: str, name: str) -> list[tuple[str, str, str, str | None, str]]:
    """(type, reason, message, fieldPath, source) of the pod's Events."""
    items = client.list(EVENTS, namespace=namespace)["items"]
    return [(e["type"], e["reason"], e["message"], e["involvedObject"].get("fieldPath"),
             (e.get("source") or {}).get("component")) for e in items if e["involvedObject"]["name"] == name]


def test_an_image_that_does_not_exist_fails_to_pull_then_backs_off_with_the_kubelets_words(pod_world, pod_namespace):
    client = pod_world.client
    client.create(PODS, pod_namespace, pod("typo", image="example.com/train:does-not-exist"))
    seen = Seen(client, pod_namespace, "typo")
    pulled = seen.until(reason_is("ErrImagePull"), "ErrImagePull")
    assert waiting(pulled) == {"reason": "ErrImagePull", "message": PULL_ERROR}
    backing = seen.until(reason_is("ImagePullBackOff"), "ImagePullBackOff")
    assert waiting(backing) == {"reason": "ImagePullBackOff", "message": 'Back-off pulling image '
                                f'"example.com/train:does-not-exist": ErrImagePull: {PULL_ERROR}'}
    assert {phase for phase, _ in seen.states} == {"Pending"}
    ready = next(c for c in backing["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "ContainersNotReady",
                                                                   "containers with unready status: [main]")
    on = "spec.containers{main}"
    assert set(events(client, pod_namespace, "typo")) >= {
        ("Normal", "Pulling", 'Pulling image "example.com/train:does-not-exist"', on, "kubelet"),
        ("Warning", "Failed", f'Failed to pull image "example.com/train:does-not-exist": {PULL_ERROR}', on, "kubelet"),
        ("Warning", "Failed", "Error: ErrImagePull", on, "kubelet"),
        ("Normal", "BackOff", 'Back-off pulling image "example.com/train:does-not-exist"', on, "kubelet"),
        ("Warning", "Failed", "Error: ImagePullBackOff", on, "kubelet"),
    }


def test_a_missing_secret_in_env_is_a_config_error_until_the_secret_is_created(pod_world, pod_namespace):
    client = pod_world.client
    token = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}]
    client.create(PODS, pod_namespace, pod("reader", env=token))
    seen = Seen(client, pod_namespace, "reader")
    stuck = seen.until(reason_is("CreateContainerConfigError"), "CreateContainerConfigError")
    assert waiting(stuck) == {"reason": "CreateContainerConfigError", "message": 'secret "hf" not found'}
    assert ("Warning", "Failed", 'Error: secret "hf" not found', "spec.containers{main}", "kubelet") in events(
        client, pod_namespace, "reader")
    client.create(SECRETS, pod_namespace, {"metadata": {"name": "hf"}, "stringData": {"token": "t"}})
    started = seen.until(is_running, "Running once the Secret exists")
    assert waited_then_ran(seen.states, "CreateContainerConfigError"), seen.states
    ready = next(c for c in started["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready.get("reason"), ready.get("message")) == ("True", None, None)


def test_a_missing_configmap_volume_keeps_the_pod_creating_with_a_failed_mount_until_it_is_created(pod_world,
                                                                                                   pod_namespace):
    client = pod_world.client
    client.create(PODS, pod_namespace, pod("mounter", volumes=[{"name": "cfg", "configMap": {"name": "settings"}}]))
    seen = Seen(client, pod_namespace, "mounter")
    stuck = seen.until(reason_is("ContainerCreating"), "ContainerCreating")
    assert waiting(stuck) == {"reason": "ContainerCreating"}
    sandbox = next(c for c in stuck["status"]["conditions"] if c["type"] == "PodReadyToStartContainers")
    assert sandbox["status"] == "False" and "podIP" not in stuck["status"]
    assert ("Warning", "FailedMount", 'MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found',
            None, "kubelet") in events(client, pod_namespace, "mounter")
    client.create(CONFIGMAPS, pod_namespace, {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    seen.until(is_running, "Running once the ConfigMap exists")
    assert waited_then_ran(seen.states, "ContainerCreating"), seen.states


@pytest.mark.parametrize("refs", [
    {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "t", "optional": True}}}]},
    {"volumes": [{"name": "cfg", "configMap": {"name": "nope", "optional": True}}]},
    {"env": [], "envFrom": [{"secretRef": {"name": "nope", "optional": True}}]},
], ids=["an optional env key", "an optional volume", "an optional envFrom"])
def test_an_optional_reference_to_nothing_does_not_wait(pod_world, pod_namespace, refs):
    client = pod_world.client
    client.create(PODS, pod_namespace, pod("relaxed", **refs))
    seen = Seen(client, pod_namespace, "relaxed")
    seen.until(is_running, "Running")
    assert seen.states[-1] == ("Running", None) and all(reason is None for _, reason in seen.states), seen.states
    assert not [e for e in events(client, pod_namespace, "relaxed") if e[4] == "kubelet"]


def logs_when(world: Any, namespace: str, name: str, line: str, *args: str) -> str:
    """`kubectl logs` once ``line`` shows (the kubelet writes an exit line once it sees the exit)."""
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        out = world.kubectl("logs", "-n", namespace, name, *args, check=False).stdout
        return out if line in out else Missing(out)
    return wait_for(world.client, PODS, check, namespace=namespace, timeout=60, what=f"{line!r} in the log")


def test_kubectl_logs_of_a_plain_pod_is_its_command_line_and_its_exit(pod_world, pod_namespace):
    body = pod("plain", command=["python", "train.py"], args=["--epochs", "3"],
               annotations={stages.RUN_SECONDS: "1"})
    pod_world.client.create(PODS, pod_namespace, body)
    text = logs_when(pod_world, pod_namespace, "plain", "exited")
    assert text == ("container main started: python train.py --epochs 3\n"
                    "container main exited with code 0 (Completed)\n")


def test_a_restarted_container_logs_its_new_run_and_previous_shows_the_last_one(pod_world, pod_namespace):
    body = pod("again", restart="OnFailure", annotations={stages.RUN_SECONDS: "1", stages.EXIT_CODE: "3,0"})
    pod_world.client.create(PODS, pod_namespace, body)
    Seen(pod_world.client, pod_namespace, "again").until(
        lambda p: (p.get("status") or {}).get("phase") == "Succeeded", "Succeeded")
    now = logs_when(pod_world, pod_namespace, "again", "exited")
    assert now == ("container main started: <entrypoint of example.com/train:1>\n"
                   "container main exited with code 0 (Completed)\n")
    before = pod_world.kubectl("logs", "-n", pod_namespace, "again", "--previous").stdout
    assert before == ("container main started: <entrypoint of example.com/train:1>\n"
                      "container main exited with code 3 (Error)\n")


def test_a_log_a_test_serves_later_replaces_the_kubelets(pod_world, pod_namespace, tmp_path):
    pod_world.client.create(PODS, pod_namespace, pod("talker"))
    logs_when(pod_world, pod_namespace, "talker", "started")
    path = tmp_path / "talker.log"
    podlogs.serve(pod_world.client, path, namespace=pod_namespace, pod="talker")
    podlogs.write(path, ["epoch 1 loss 0.9"])
    assert logs_when(pod_world, pod_namespace, "talker", "epoch 1") == "epoch 1 loss 0.9\n"


def test_a_namespace_a_test_serves_later_logs_its_text_instead_of_the_kubelets(pod_world, pod_namespace, tmp_path):
    pod_world.client.create(PODS, pod_namespace, pod("quiet"))
    logs_when(pod_world, pod_namespace, "quiet", "started")
    path = tmp_path / "namespace.log"
    podlogs.serve_namespace(pod_world.client, path, namespace=pod_namespace)
    try:
        podlogs.write(path, ["every pod says this"])
        assert logs_when(pod_world, pod_namespace, "quiet", "every pod") == "every pod says this\n"
    finally:
        pod_world.client.delete(podlogs.cluster_logs_resource(), None, pod_namespace)


def test_with_no_kubelet_part_kwok_starts_every_pod_as_it_sees_it(world_factory):
    from testworld.kwok import Kwok, NodePool

    kwok = Kwok(nodes=[NodePool("small", 1)], bad_images=None, config_refs=False, logs=False)
    world = world_factory(["scheduler", kwok], upstream_crds=False)
    world.kubectl("create", "namespace", "w")
    token = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "t"}}}]
    world.client.create(PODS, "w", pod("bare", image="example.com/train:does-not-exist", env=token))
    seen = Seen(world.client, "w", "bare")
    running = seen.until(is_running, "Running")
    assert kwok.kubelet is None and all(reason is None for _, reason in seen.states), seen.states
    assert stages.PREPARED not in {c["type"] for c in running["status"]["conditions"]}
