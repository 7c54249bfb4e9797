"""What the test world's kwok adds for `status` and `logs`: pods whose containers the kubelet
cannot start (the waiting-reason annotation), and real log text through the API server's
`pods/log`, served by kwok from a file as a kubelet serves a container's log."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import urllib3
from test_pod_world import pod, wait_for

from foundation.cluster.kube import PODS, end_stream
from testworld import podlogs, stages


def waiting_state(client: Any, ns: str, name: str) -> dict[str, Any]:
    def state() -> Any:
        statuses = (client.get(PODS, ns, name).get("status") or {}).get("containerStatuses") or []
        return statuses and statuses[0]["state"].get("waiting")
    return wait_for(state, f"pod {name} waiting")


@pytest.mark.parametrize(("reason", "env", "message"), [
    ("ImagePullBackOff", [], 'Back-off pulling image "example.com/train:1"'),
    ("CreateContainerConfigError", [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "t"}}}],
     'secret "hf" not found'),
], ids=["an image that cannot be pulled backs off", "a missing Secret is a config error naming it"])
def test_a_pod_annotated_with_a_waiting_reason_stays_pending_waiting_for_it(pod_world, pod_namespace, reason,
                                                                          env, message):
    client = pod_world.client
    body = pod("stuck", gpus=0, annotations={stages.WAITING_REASON: reason})
    body["spec"]["containers"][0]["env"] = env
    client.create(PODS, pod_namespace, body)
    assert waiting_state(client, pod_namespace, "stuck") == {"reason": reason, "message": message}
    current = client.get(PODS, pod_namespace, "stuck")["status"]
    assert current["phase"] == "Pending" and current["podIP"]
    ready = next(c for c in current["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")


def test_the_waiting_message_annotation_is_the_message(pod_world, pod_namespace):
    client = pod_world.client
    client.create(PODS, pod_namespace, pod("pull", gpus=0, annotations={
        stages.WAITING_REASON: "ErrImagePull", stages.WAITING_MESSAGE: "manifest unknown"}))
    assert waiting_state(client, pod_namespace, "pull") == {"reason": "ErrImagePull", "message": "manifest unknown"}


def running_pod(pod_world: Any, ns: str, name: str, tmp_path: Any) -> Any:
    path = tmp_path / f"{name}.log"
    podlogs.serve(pod_world.client, path, namespace=ns, pod=name)
    pod_world.client.create(PODS, ns, pod(name, gpus=0, annotations={stages.RUN_SECONDS: "forever"}))
    wait_for(lambda: pod_world.client.get(PODS, ns, name)["status"].get("phase") == "Running", f"{name} running")
    return path


def test_pods_log_through_the_api_server_is_the_served_file_and_tail_keeps_the_last_lines(pod_world, pod_namespace,
                                                                                        tmp_path):
    path = running_pod(pod_world, pod_namespace, "talker", tmp_path)
    podlogs.write(path, ["epoch 1 loss 0.9", "epoch 2 loss 0.5", "epoch 3 loss 0.2"])
    whole = pod_world.kubectl("logs", "-n", pod_namespace, "talker").stdout
    assert whole == "epoch 1 loss 0.9\nepoch 2 loss 0.5\nepoch 3 loss 0.2\n"
    assert pod_world.kubectl("logs", "-n", pod_namespace, "talker", "--tail=1").stdout == "epoch 3 loss 0.2\n"


def test_a_followed_log_brings_lines_written_after_it_opened(pod_world, pod_namespace, tmp_path):
    path = running_pod(pod_world, pod_namespace, "follower", tmp_path)
    podlogs.write(path, ["before"])
    resp = pod_world.client._send("GET", PODS.path(pod_namespace, "follower", "log"), verb="get", res=PODS,
                                  sub="log", query={"follow": "true"})
    got: list[bytes] = []

    def read() -> None:
        try:
            for chunk in resp.stream(1024):
                got.append(chunk)
        except urllib3.exceptions.ProtocolError:  # once end_stream cuts it
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_for(lambda: b"".join(got) == b"before\n", "the first line")
    podlogs.write(path, ["after 1", "after 2"])
    wait_for(lambda: b"".join(got) == b"before\nafter 1\nafter 2\n", "the appended lines")
    end_stream(resp)  # kwok never ends a followed log: it asks no runtime whether the container runs
    reader.join(10)
    assert not reader.is_alive()
