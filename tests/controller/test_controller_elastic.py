"""Elastic PyTorchJob (issue 6 item 4): workers follow the scale subresource
(`kubectl scale pytorchjob/x --replicas=N`) with their services and rendezvous
environment, and the `autoscaling/v2` HPA `{job}` exists exactly when the job gives
`elasticPolicy.metrics`: right spec, owned by the job, rewritten on drift, gone while
suspended. Pure rules first, then the controller on the real API server (no HPA
controller runs there: the test scales the job as the HPA would)."""

from __future__ import annotations

import json

import pytest
from controller_kit import env_of, job, settled, wait_for
from test_controller_behaviour import events_of

from controller.jobs import hpa
from controller.jobs.hpa import HPAS
from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster.kube import SERVICES
from foundation.frameworks import defaulting

PT = job_resource(KINDS["PyTorchJob"])
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
PER_POD = {"type": "Pods", "pods": {"metric": {"name": "samples_per_second"},
                                    "target": {"type": "AverageValue", "averageValue": "1000m"}}}


def elastic(name: str, *, workers: int = 2, master: bool = False, **policy) -> dict:
    replicas = {"Master": 1, "Worker": workers} if master else {"Worker": workers}
    return job("PyTorchJob", name, spec={"elasticPolicy": policy} if policy else None, restart="OnFailure", **replicas)


def defaulted(body: dict) -> dict:
    body = defaulting.defaulted(body, KINDS["PyTorchJob"])
    body["metadata"].update(namespace="ns", uid="u-1")
    return body


# ---------------------------------------------------------------------------------- pure rules
def test_hpa_spec_comes_from_the_elastic_policy() -> None:
    wanted = hpa.desired(defaulted(elastic("e", maxReplicas=4, metrics=[CPU])), KINDS["PyTorchJob"])
    assert wanted["metadata"] == {"name": "e", "namespace": "ns", "ownerReferences": [{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "e", "uid": "u-1", "controller": True,
        "blockOwnerDeletion": True}]}
    # minReplicas defaults to maxReplicas when only the maximum is given (upstream's defaulting)
    assert wanted["spec"] == {"scaleTargetRef": {"kind": "PyTorchJob", "name": "e", "apiVersion": "kubeflow.org/v1"},
                              "minReplicas": 4, "maxReplicas": 4, "metrics": [CPU]}


@pytest.mark.parametrize("body", [
    elastic("e", minReplicas=1, maxReplicas=4),
    elastic("e", minReplicas=1, maxReplicas=4, metrics=[]),
    job("PyTorchJob", "e", Worker=2),
], ids=["no metrics", "an empty metrics list", "no elastic policy"])
def test_no_hpa_without_metrics(body) -> None:
    assert hpa.desired(defaulted(body), KINDS["PyTorchJob"]) is None


@pytest.mark.parametrize("current,differs", [
    ({"minReplicas": 1, "maxReplicas": 4, "metrics": [PER_POD | {"pods": PER_POD["pods"] | {
        "target": {"type": "AverageValue", "averageValue": "1"}}}]}, False),
    ({"maxReplicas": 4, "metrics": [PER_POD]}, False),
    ({"minReplicas": 1, "maxReplicas": 5, "metrics": [PER_POD]}, True),
    ({"minReplicas": 1, "maxReplicas": 4, "metrics": [PER_POD, CPU]}, True),
    ({"minReplicas": 1, "maxReplicas": 4, "metrics": [PER_POD], "behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}, True),
], ids=["the server's canonical quantity", "the server's default minReplicas", "maxReplicas edited", "a metric added",
        "a behavior added"])
def test_hpa_drift_is_judged_by_value(current, differs) -> None:
    wanted = {"minReplicas": 1, "maxReplicas": 4, "metrics": [PER_POD]}
    assert hpa.spec_differs(current, wanted) is differs


# ---------------------------------------------------------------------------------- on the API server
def scale(control_plane, namespace: str, name: str, replicas: int) -> None:
    control_plane.kubectl("scale", f"pytorchjob/{name}", f"--replicas={replicas}", "-n", namespace)


def names(prefix: str, count: int) -> set[str]:
    return {f"{prefix}-worker-{i}" for i in range(count)}


def test_elastic_workers_follow_kubectl_scale_up_and_down(cluster, manager, control_plane) -> None:
    ns = cluster.namespace
    cluster.apply(elastic("el", minReplicas=1, maxReplicas=4, maxRestarts=3))
    pods = cluster.wait_pods(names("el", 2))
    cluster.run_all(*pods)
    cluster.wait_condition("PyTorchJob", "el", "Running")

    scale(control_plane, ns, "el", 4)
    pods = cluster.wait_pods(names("el", 4))
    wait_for(lambda: set(cluster.objects(SERVICES)) == names("el", 4), what="services scaled up")
    for pod in pods.values():  # every worker, old and new, joins the same rendezvous
        env = env_of(pod)
        assert (env["PET_NNODES"], env["PET_RDZV_ENDPOINT"], env["PET_RDZV_BACKEND"], env["PET_MAX_RESTARTS"]) == (
            "1:4", "el-worker-0:23456", "c10d", "3")
    cluster.run_all("el-worker-2", "el-worker-3")
    raw = f"/apis/kubeflow.org/v1/namespaces/{ns}/pytorchjobs/el/scale"
    wait_for(lambda: json.loads(control_plane.kubectl("get", "--raw", raw).stdout)["status"].get("replicas") == 4,
             what="scale status replicas 4")

    scale(control_plane, ns, "el", 1)
    cluster.wait_pods(names("el", 1))
    wait_for(lambda: set(cluster.objects(SERVICES)) == names("el", 1), what="services scaled down")
    current = wait_for(lambda: (lambda j: j if j["status"]["replicaStatuses"]["Worker"].get("active") == 1 else None)(
        cluster.get_job("PyTorchJob", "el")), what="one active worker")
    assert [c["type"] for c in current["status"]["conditions"] if c["status"] == "True"] == ["Created", "Running"]


def test_without_elastic_policy_a_scale_waits_for_the_next_run_whose_pods_see_the_new_world_size(
        cluster, manager, control_plane) -> None:
    """Run integrity (foundation.runs.spec): a non-elastic job's replica count is part of
    its run's spec, so a scale of a running job adds no worker beside pods that count 2
    (upstream would create workers with WORLD_SIZE 4 beside them); it is announced once and
    taken by the next run."""
    cluster.apply(elastic("st", workers=1, master=True))
    first = cluster.wait_pods({"st-master-0", "st-worker-0"})
    assert env_of(first["st-worker-0"])["PET_NNODES"] == "2"
    cluster.run_all("st-master-0", "st-worker-0")  # the run has started: its edits are held (foundation.runs.started)
    wait_for(lambda: ("Running", "True", "PyTorchJobRunning") in cluster.conditions("PyTorchJob", "st"), what="Running")
    first = cluster.pods()
    since = manager.reconciles
    scale(control_plane, cluster.namespace, "st", 3)
    held = wait_for(lambda: [e for e in events_of(cluster, "st") if e[1] == "PyTorchJobSpecChangeHeld"], what="held")
    assert "Worker.replicas 1 -> 3" in held[0][2], held
    settled(manager, since)
    assert {n: p["metadata"]["uid"] for n, p in cluster.pods().items()} == {
        n: p["metadata"]["uid"] for n, p in first.items()}
    cluster.client.patch(PT, cluster.namespace, "st", {"spec": {"runPolicy": {"suspend": True}}})
    cluster.wait_condition("PyTorchJob", "st", "Suspended")
    wait_for(lambda: not cluster.pods(), what="the run's pods deleted")
    cluster.client.patch(PT, cluster.namespace, "st", {"spec": {"runPolicy": {"suspend": False}}})
    pods = cluster.wait_pods({"st-master-0", "st-worker-0", "st-worker-1", "st-worker-2"})
    for name, rank in (("st-worker-0", "1"), ("st-worker-2", "3")):
        env = env_of(pods[name])
        assert (env["PET_NNODES"], env["WORLD_SIZE"], env["RANK"]) == ("4", "4", rank)


def hpa_of(cluster, name: str) -> dict | None:
    return cluster.objects(HPAS).get(name)


def test_hpa_is_created_kept_in_line_and_removed_while_suspended(cluster, manager) -> None:
    applied = cluster.apply(elastic("as", minReplicas=1, maxReplicas=4, metrics=[CPU, PER_POD]))
    made = wait_for(lambda: hpa_of(cluster, "as"), what="HPA created")
    assert made["spec"]["scaleTargetRef"] == {"kind": "PyTorchJob", "name": "as", "apiVersion": "kubeflow.org/v1"}
    assert (made["spec"]["minReplicas"], made["spec"]["maxReplicas"]) == (1, 4)
    assert made["spec"]["metrics"][0] == CPU
    assert made["spec"]["metrics"][1]["pods"]["target"]["averageValue"] == "1"  # canonicalized by the server
    assert made["metadata"]["ownerReferences"] == [{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "as", "uid": applied["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]
    cluster.wait_pods(names("as", 2))
    settled(manager, manager.reconciles - 1)
    assert manager.client.snapshot()[("update", "autoscaling/horizontalpodautoscalers")] == 0  # equal by value

    # drift: someone edits the HPA; the job's elasticPolicy wins
    cluster.client.patch(HPAS, cluster.namespace, "as", {"spec": {"maxReplicas": 10}})
    wait_for(lambda: hpa_of(cluster, "as")["spec"]["maxReplicas"] == 4, what="HPA restored")
    # the job changes: the HPA follows
    cluster.client.patch(PT, cluster.namespace, "as", {"spec": {"elasticPolicy": {"maxReplicas": 6}}})
    wait_for(lambda: hpa_of(cluster, "as")["spec"]["maxReplicas"] == 6, what="HPA follows the job")

    cluster.client.patch(PT, cluster.namespace, "as", {"spec": {"runPolicy": {"suspend": True}}})
    cluster.wait_condition("PyTorchJob", "as", "Suspended")
    wait_for(lambda: hpa_of(cluster, "as") is None, what="HPA deleted while suspended")
    settled(manager, manager.reconciles - 1)
    assert hpa_of(cluster, "as") is None  # and not recreated while suspended
    cluster.client.patch(PT, cluster.namespace, "as", {"spec": {"runPolicy": {"suspend": False}}})
    wait_for(lambda: hpa_of(cluster, "as"), what="HPA back after resume")

    cluster.client.patch(PT, cluster.namespace, "as", {"spec": {"elasticPolicy": {"metrics": None}}})
    wait_for(lambda: hpa_of(cluster, "as") is None, what="HPA deleted with the metrics")


def test_a_suspended_job_gets_no_hpa_and_someone_elses_hpa_is_left_alone(cluster, manager) -> None:
    suspended = elastic("off", minReplicas=1, maxReplicas=2, metrics=[CPU])
    suspended["spec"]["runPolicy"] = {"suspend": True}
    cluster.apply(suspended)
    theirs = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "mine"},
              "spec": {"scaleTargetRef": {"kind": "PyTorchJob", "name": "mine", "apiVersion": "kubeflow.org/v1"},
                       "minReplicas": 1, "maxReplicas": 9, "metrics": [CPU]}}
    cluster.client.create(HPAS, cluster.namespace, theirs)
    wait_for(lambda: manager.reconciler.job_steps["PyTorchJob"].informer.get(cluster.namespace, "mine"), what="the controller sees it")
    since = manager.reconciles
    cluster.apply(elastic("mine", minReplicas=1, maxReplicas=2, metrics=[CPU]))
    cluster.wait_condition("PyTorchJob", "off", "Suspended")
    cluster.wait_pods(names("mine", 2))
    settled(manager, since)
    assert set(cluster.objects(HPAS)) == {"mine"}
    assert hpa_of(cluster, "mine")["spec"]["maxReplicas"] == 9 and "ownerReferences" not in hpa_of(cluster, "mine")["metadata"]
    used = manager.client.snapshot()
    assert used[("create", "autoscaling/horizontalpodautoscalers")] == used[("update", "autoscaling/horizontalpodautoscalers")] == 0
