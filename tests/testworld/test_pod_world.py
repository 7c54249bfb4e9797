"""The pod world as tests use it: the real kube-scheduler places pods on kwok's GPU nodes,
kwok runs and exits them as the annotations say (as a kubelet reports it), and the real
garbage collector and namespace controller clean up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, PODS
from testworld import stages
from testworld.kwok import POD_WORLD_NODES

A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}


def pod(name: str, *, restart: str = "Never", gpus: int = 8, annotations: dict[str, str] | None = None,
        node_selector: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations or {}, **meta},
        "spec": {"restartPolicy": restart, "nodeSelector": node_selector or {},
                 "containers": [{"name": "main", "image": "example.com/train:1", "resources": {"limits": limits}}]},
    }


def wait_for(check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def phases_until_done(client: Any, ns: str, name: str, timeout: float = 60) -> tuple[list[str], dict[str, Any]]:
    """Every phase seen (polled) until the pod is Succeeded or Failed, and the final pod."""
    seen: list[str] = []

    def done() -> dict[str, Any] | None:
        current = client.get(PODS, ns, name)
        phase = (current.get("status") or {}).get("phase", "")
        if not seen or seen[-1] != phase:
            seen.append(phase)
        return current if phase in {"Succeeded", "Failed"} else None

    final = wait_for(done, f"pod {name} to finish", timeout)
    return seen, final


def gpu_nodes(pool_labels: dict[str, str]) -> set[str]:
    names = set()
    for pool in POD_WORLD_NODES:
        if pool.gpus and all(pool.labels.get(k) == v for k, v in pool_labels.items()):
            names |= {f"{pool.prefix}-{i}" for i in range(pool.count)}
    return names


@pytest.mark.parametrize(("code", "phase", "reason"), [(0, "Succeeded", "Completed"), (3, "Failed", "Error"),
                                                      (137, "Failed", "OOMKilled")],
                         ids=["exit 0 succeeds", "exit 3 fails", "an annotated reason is reported"])
def test_a_pod_is_scheduled_onto_a_gpu_node_runs_and_exits_with_the_annotated_code(pod_world, pod_namespace,
                                                                                  code, phase, reason):
    client = pod_world.client
    annotations = {stages.RUN_SECONDS: "2", stages.EXIT_CODE: str(code)}
    if reason == "OOMKilled":
        annotations[stages.EXIT_REASON] = reason
    client.create(PODS, pod_namespace, pod("trainer", annotations=annotations, node_selector=A100))
    seen, final = phases_until_done(client, pod_namespace, "trainer")
    assert "Running" in seen and seen[-1] == phase, seen
    assert final["spec"]["nodeName"] in gpu_nodes(A100)
    status = final["status"]
    assert status["podIP"].startswith("10.244.") and status["startTime"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["PodScheduled"] == "True"
    [container] = status["containerStatuses"]
    terminated = container["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], container["restartCount"]) == (code, reason, 0)
    assert terminated["startedAt"] <= terminated["finishedAt"]


def test_a_pod_that_has_an_ip_already_keeps_it_when_kwok_starts_it(pod_world, pod_namespace):
    """kwok may play the start stage again before its watch shows the first patch (24,595 of 40,000
    pods at 5,000 jobs); a second IP merged into podIPs was refused ("may specify no more than one
    IP for each IP family"). Here the IP is there before the pod is scheduled (a scheduling gate
    holds it while its status is written), so the start stage meets a pod that has one."""
    client = pod_world.client
    body = pod("gated", gpus=0, annotations={stages.RUN_SECONDS: "forever"})
    body["spec"]["schedulingGates"] = [{"name": "trainforge.dev/hold"}]
    client.create(PODS, pod_namespace, body)
    client.patch(PODS, pod_namespace, "gated", {"status": {"podIP": "10.244.250.7", "podIPs": [{"ip": "10.244.250.7"}]}},
                 sub="status", content_type="application/merge-patch+json")
    client.patch(PODS, pod_namespace, "gated", {"spec": {"schedulingGates": None}},
                 content_type="application/merge-patch+json")
    running = wait_for(lambda: (p := client.get(PODS, pod_namespace, "gated"))["status"].get("phase") == "Running" and p,
                       "the gated pod to run")
    assert running["status"]["podIPs"] == [{"ip": "10.244.250.7"}] and running["status"]["podIP"] == "10.244.250.7"


def test_on_failure_restarts_the_container_as_the_kubelet_does(pod_world, pod_namespace):
    client = pod_world.client
    annotations = {stages.RUN_SECONDS: "0.5", stages.EXIT_CODE: "1,137,0", stages.RESTART_DELAY: "0.5"}
    rv = client.list(PODS, namespace=pod_namespace)["metadata"]["resourceVersion"]
    client.create(PODS, pod_namespace, pod("flaky", restart="OnFailure", annotations=annotations))
    history = []
    for event in client.watch(PODS, namespace=pod_namespace, resource_version=rv, timeout_seconds=60):
        if event["type"] == "MODIFIED":
            history.append(event["object"])
            if event["object"]["status"].get("phase") == "Succeeded":
                break
    # each version's (phase, restartCount, state, exit code in state or lastState), deduplicated in order
    states = []
    for version in history:
        for c in version["status"].get("containerStatuses") or []:
            state = next(iter(c["state"]))
            code = (c["state"].get("terminated") or (c.get("lastState") or {}).get("terminated") or {}).get("exitCode")
            row = (version["status"]["phase"], c["restartCount"], state, code)
            if not states or states[-1] != row:
                states.append(row)
    assert states == [
        ("Running", 0, "running", None),
        ("Running", 0, "waiting", 1),     # CrashLoopBackOff, the exit in lastState.terminated
        ("Running", 1, "running", 1),     # restarted: restartCount + 1, lastState kept
        ("Running", 1, "waiting", 137),
        ("Running", 2, "running", 137),
        ("Succeeded", 2, "terminated", 0),
    ], states
    [container] = history[-1]["status"]["containerStatuses"]
    assert container["lastState"]["terminated"]["exitCode"] == 137
    waiting = next(c for v in history for c in v["status"].get("containerStatuses") or [] if "waiting" in c["state"])
    assert waiting["state"]["waiting"]["reason"] == "CrashLoopBackOff"


def test_never_does_not_restart_and_always_restarts_even_after_exit_0(pod_world, pod_namespace):
    client = pod_world.client
    quick = {stages.RUN_SECONDS: "0.3", stages.RESTART_DELAY: "0.3"}
    client.create(PODS, pod_namespace, pod("always", restart="Always", gpus=0, annotations=quick))
    restarted = wait_for(lambda: [c for c in (client.get(PODS, pod_namespace, "always")["status"]
                                              .get("containerStatuses") or []) if c["restartCount"] >= 2],
                         "an Always pod to restart twice")
    assert restarted[0]["lastState"]["terminated"]["exitCode"] == 0
    assert client.get(PODS, pod_namespace, "always")["status"]["phase"] == "Running"


def test_a_pod_no_node_can_hold_stays_pending_with_the_schedulers_reason(pod_world, pod_namespace):
    client = pod_world.client
    client.create(PODS, pod_namespace, pod("too-big", gpus=16))

    def unschedulable() -> dict[str, Any] | None:
        conds = {c["type"]: c for c in client.get(PODS, pod_namespace, "too-big")["status"].get("conditions") or []}
        return conds.get("PodScheduled") if conds.get("PodScheduled", {}).get("status") == "False" else None

    cond = wait_for(unschedulable, "the scheduler to give up on the pod")
    assert cond["reason"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in cond["message"]


def test_a_deleted_owner_cascades_to_its_running_pod_through_the_garbage_collector(pod_world, pod_namespace):
    client = pod_world.client
    owner = client.create(CONFIGMAPS, pod_namespace, {"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    client.create(PODS, pod_namespace, pod("child", gpus=0, annotations={stages.RUN_SECONDS: "forever"},
                                           ownerReferences=[ref]))
    wait_for(lambda: client.get(PODS, pod_namespace, "child")["status"].get("phase") == "Running", "the child to run")
    client.delete(CONFIGMAPS, pod_namespace, "owner")

    def gone() -> bool:
        try:
            client.get(PODS, pod_namespace, "child")
        except errors.NotFound:
            return True
        return False

    wait_for(gone, "the garbage collector (and kwok) to remove the child pod")


def test_a_deleted_namespace_really_goes_away(pod_world):
    client = pod_world.client
    pod_world.kubectl("create", "namespace", "short-lived")
    client.create(PODS, "short-lived", pod("p", gpus=0, annotations={stages.RUN_SECONDS: "forever"}))
    pod_world.kubectl("delete", "namespace", "short-lived", "--wait=false")
    wait_for(lambda: pod_world.kubectl("get", "namespace", "short-lived", check=False).returncode != 0,
             "the namespace controller to finish the namespace")


def test_a_world_whose_kwok_has_no_default_run_time_ends_only_annotated_pods(world_factory):
    from testworld.kwok import Kwok, NodePool

    world = world_factory(["scheduler", Kwok(nodes=[NodePool("small", 1)], run_seconds=None)], upstream_crds=False)
    client = world.client
    world.kubectl("create", "namespace", "w")
    client.create(PODS, "w", pod("timed", gpus=0, annotations={stages.RUN_SECONDS: "1"}))
    client.create(PODS, "w", pod("untimed", gpus=0))
    phases_until_done(client, "w", "timed")
    time.sleep(1)  # the untimed pod started with the timed one: a default of 1 s would have ended it by now
    untimed = client.get(PODS, "w", "untimed")["status"]
    assert untimed["phase"] == "Running" and "running" in untimed["containerStatuses"][0]["state"]
