"""Gang scheduling (issue 6 item 3): PodGroups and pod decoration behind
`--gang-scheduler-name`. Pure rules first (minMember, minResources, the spec upstream
writes, drift by value, decoration), then the controller on the real API server with the
Volcano and scheduler-plugins PodGroup CRDs installed, the test playing Volcano by
writing the group's `status.phase`."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from controller_kit import (
    PODS_FIRST,
    Cluster,
    container,
    job,
    replica,
    settled,
    wait_for,
)
from test_controller_behaviour import events_of

from controller.jobs import gang
from controller.jobs.gang import SCHEDULER_PLUGINS, VOLCANO, Scheduler
from controller.jobs.kinds import KINDS, job_resource, select
from controller.manager import Manager
from foundation.cluster.kube import Client, Resource

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

PT = job_resource(KINDS["PyTorchJob"])
VC = Scheduler("volcano", volcano=True)
SP = Scheduler("scheduler-plugins-scheduler", volcano=False)
PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False)


def resources(requests: dict | None = None, limits: dict | None = None) -> dict:
    out = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return out


def sized(kind: str, count: int, *, priority: str | None = None, scheduler: str | None = None, **res) -> dict:
    spec = replica(kind, count, containers=[container(kind, resources=resources(**res))])
    if priority:
        spec["template"]["spec"]["priorityClassName"] = priority
    if scheduler:
        spec["template"]["spec"]["schedulerName"] = scheduler
    return spec


def pytorch(name: str, *, policy: dict | None = None, annotations: dict | None = None, **replicas) -> dict:
    body = job("PyTorchJob", name, run_policy={"schedulingPolicy": policy} if policy is not None else None)
    body["spec"]["pytorchReplicaSpecs"] = replicas
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


# ---------------------------------------------------------------------------------- pure rules
@pytest.mark.parametrize("flag,expected", [
    ("volcano", VC), ("Volcano", VC), ("scheduler-plugins-scheduler", SP), ("", None), (None, None), ("None", None),
], ids=["volcano", "volcano in any case", "any other name is scheduler-plugins", "empty is off", "unset is off",
        "None is off"])
def test_the_flag_selects_the_scheduler(flag, expected) -> None:
    assert gang.scheduler_for(flag) == expected


def test_min_member_is_min_available_else_every_replica() -> None:
    kind = KINDS["PyTorchJob"]
    both = pytorch("j", Master=sized("PyTorchJob", 1), Worker=sized("PyTorchJob", 3))
    assert gang.min_member(both, kind) == 4
    assert gang.min_member(pytorch("j", policy={"minAvailable": 2}, Master=sized("PyTorchJob", 1)), kind) == 2


def test_min_resources_orders_replica_types_by_priority_and_counts_the_first_min_member_pods() -> None:
    body = pytorch("j", Master=sized("PyTorchJob", 1, requests={"cpu": "1", "memory": "1Gi"}),
                   Worker=sized("PyTorchJob", 3, priority="high", requests={"cpu": "500m", "memory": "512Mi", "nvidia.com/gpu": 1}))
    values = {"high": 1000}
    computed = gang.min_resources(body, KINDS["PyTorchJob"], members=2, priority=lambda name: values.get(name, 0))
    assert computed == {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"}  # two workers, no master
    everything = gang.min_resources(body, KINDS["PyTorchJob"], members=4, priority=lambda name: values.get(name, 0))
    assert everything == {"cpu": "2500m", "memory": "2560Mi", "nvidia.com/gpu": "3"}
    # equal priorities: the kind's replica-type order (Master first)
    assert gang.min_resources(body, KINDS["PyTorchJob"], members=1) == {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize("res,expected", [
    ({"requests": {"cpu": "2"}, "limits": {"cpu": "4", "memory": "1Gi"}}, {"cpu": "2"}),
    ({"limits": {"cpu": "4", "memory": "1Gi"}}, {"cpu": "4", "memory": "1Gi"}),
    ({"requests": {}, "limits": {"cpu": "4"}}, {}),
    ({}, {}),
], ids=["requests win over limits", "limits when requests are absent", "empty requests are still requests",
        "nothing asked"])
def test_min_resources_takes_requests_or_else_limits(res, expected) -> None:
    body = pytorch("j", Worker=sized("PyTorchJob", 1, **res))
    assert gang.min_resources(body, KINDS["PyTorchJob"], members=1) == expected


def test_volcano_spec_queue_comes_from_the_group_then_the_policy_then_default() -> None:
    kind = KINDS["PyTorchJob"]
    body = pytorch("j", policy={"queue": "team-a", "priorityClass": "high", "minResources": {"cpu": "8"},
                                "scheduleTimeoutSeconds": 60}, Worker=sized("PyTorchJob", 2, requests={"cpu": "1"}))
    assert gang.desired_spec(VC, body, kind) == {"minMember": 2, "queue": "team-a", "priorityClassName": "high",
                                                 "minResources": {"cpu": "8"}}
    existing = {"spec": {"queue": "kept"}}
    assert gang.desired_spec(VC, body, kind, current=existing)["queue"] == "kept"
    assert gang.desired_spec(VC, pytorch("j", Worker=sized("PyTorchJob", 2)), kind) == {"minMember": 2, "queue": "default"}


def test_scheduler_plugins_spec_has_timeout_and_no_queue_or_priority() -> None:
    body = pytorch("j", policy={"queue": "q", "priorityClass": "high", "scheduleTimeoutSeconds": 60},
                   Worker=sized("PyTorchJob", 2, requests={"cpu": "1"}))
    assert gang.desired_spec(SP, body, KINDS["PyTorchJob"]) == {"minMember": 2, "scheduleTimeoutSeconds": 60,
                                                                "minResources": {"cpu": "2"}}


@pytest.mark.parametrize("current,wanted,only,differs", [
    ({"minMember": 2, "queue": "default", "minResources": {"cpu": "1000m"}}, {"minMember": 2, "minResources": {"cpu": "1"}},
     None, False),
    ({"minMember": 2}, {"minMember": 2, "queue": "default"}, None, False),
    ({"minMember": 2, "queue": "default"}, {"minMember": 3, "queue": "default"}, None, True),
    ({"minMember": 2, "minResources": {"memory": "1Gi"}}, {"minMember": 2, "minResources": {"memory": "1024Mi"}}, None, False),
    ({"minMember": 2, "minTaskMember": {"worker": 1}}, {"minMember": 2}, None, True),
    ({"minMember": 2, "minTaskMember": {"worker": 1}}, {"minMember": 2}, VC.spec_keys, False),
    ({"minMember": 2, "priorityClassName": "high"}, {"minMember": 2}, VC.spec_keys, True),
], ids=["quantities by value", "absent queue is default", "minMember changed", "binary quantities by value",
        "a field we do not write is replaced in our group", "but kept in a shipped group", "priority removed"])
def test_spec_drift_is_judged_by_value(current, wanted, only, differs) -> None:
    assert gang.spec_differs(VC, current, wanted, only=only) is differs


@pytest.mark.parametrize("phase,ready", [(None, False), ("", False), ("Pending", False), ("Inqueue", True),
                                         ("Running", True), ("Unknown", True)])
def test_volcano_pods_wait_until_the_group_leaves_pending(phase, ready) -> None:
    group = {"status": {"phase": phase}} if phase is not None else {}
    assert gang.admitted(VC, group) is ready
    assert gang.admitted(SP, group) is True


def test_decoration_keeps_a_scheduler_the_template_names() -> None:
    pod = {"metadata": {"labels": {"a": "b"}}, "spec": {}}
    gang.decorate(VC, pod, job_name="j", replica_type="Worker")
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {"scheduling.k8s.io/group-name": "j", "volcano.sh/task-spec": "worker"}
    pod = {"metadata": {}, "spec": {"schedulerName": "mine"}}
    gang.decorate(SP, pod, job_name="j", replica_type="Worker")
    assert pod["spec"]["schedulerName"] == "mine"
    assert pod["metadata"] == {"labels": {"scheduling.x-k8s.io/pod-group": "j"}}
    replicas = {"Master": sized("PyTorchJob", 1), "Worker": sized("PyTorchJob", 1, scheduler="mine")}
    assert gang.custom_scheduler_set(replicas, VC)
    assert not gang.custom_scheduler_set({"Worker": sized("PyTorchJob", 1, scheduler="volcano")}, VC)


# ---------------------------------------------------------------------------------- on the API server
@pytest.fixture
def start(control_plane, namespace) -> Iterator[Callable[[str], Manager]]:
    """Start the controller with `--gang-scheduler-name <name>` in this test's namespace."""
    started: list[Manager] = []

    def run(name: str) -> Manager:
        client = Client.connect(str(control_plane.kubeconfig), pool_size=32)
        mgr = Manager(client, select(""), namespace=namespace, workers=2, watch_timeout=60, gang_scheduler_name=name, pods_first=PODS_FIRST)
        mgr.start()
        started.append(mgr)
        return mgr

    yield run
    for mgr in started:
        mgr.stop()
        mgr.client.close()


def group(cluster: Cluster, res: Resource, name: str) -> dict | None:
    return cluster.objects(res).get(name)


def set_group_phase(cluster: Cluster, name: str, phase: str) -> None:
    """Play Volcano: its PodGroup CRD has no status subresource."""
    cluster.client.patch(VOLCANO, cluster.namespace, name, {"status": {"phase": phase}})


def test_volcano_podgroup_is_created_and_pods_wait_for_admission(cluster, start) -> None:
    mgr = start("volcano")
    applied = cluster.apply(pytorch(
        "vg", policy={"queue": "team-a", "priorityClass": "system-cluster-critical"},
        annotations={"team": "vision", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
        Master=sized("PyTorchJob", 1, requests={"cpu": "1", "memory": "1Gi"}),
        Worker=sized("PyTorchJob", 2, limits={"cpu": "2", "nvidia.com/gpu": 1})))
    pg = wait_for(lambda: group(cluster, VOLCANO, "vg"), what="PodGroup vg")
    assert pg["spec"] == {"minMember": 3, "queue": "team-a", "priorityClassName": "system-cluster-critical",
                          "minResources": {"cpu": "5", "memory": "1Gi", "nvidia.com/gpu": "2"}}
    assert pg["metadata"]["annotations"] == {"team": "vision"}
    assert pg["metadata"]["ownerReferences"] == [{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "vg", "uid": applied["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]

    # no phase, then Pending: no pods, the job says it is created and when it last looked
    waiting = cluster.wait_condition("PyTorchJob", "vg", "Created")
    assert waiting["status"]["lastReconcileTime"]
    since = mgr.reconciles
    set_group_phase(cluster, "vg", "Pending")
    settled(mgr, since)
    assert cluster.pods() == {}
    assert mgr.client.snapshot()[("create", "/pods")] == 0

    set_group_phase(cluster, "vg", "Inqueue")
    pods = cluster.wait_pods({"vg-master-0", "vg-worker-0", "vg-worker-1"})
    for name, pod in pods.items():
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "vg"
        assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == name.split("-")[1]
    assert mgr.client.snapshot()[("update", "scheduling.volcano.sh/podgroups")] == 0


def test_podgroup_follows_the_job_and_goes_when_it_finishes(cluster, start) -> None:
    mgr = start("volcano")
    body = pytorch("fin", Master=sized("PyTorchJob", 1, requests={"cpu": "1"}),
                   Worker=sized("PyTorchJob", 1, requests={"cpu": "1"}))
    body["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4}  # the worker count of a running job is live
    cluster.apply(body)
    wait_for(lambda: group(cluster, VOLCANO, "fin"), what="PodGroup")
    set_group_phase(cluster, "fin", "Running")
    cluster.wait_pods({"fin-master-0", "fin-worker-0"})

    # more workers: the computed spec differs, the group is updated (Volcano's phase kept)
    cluster.client.patch(PT, cluster.namespace, "fin", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}})
    updated = wait_for(lambda: (lambda g: g if g["spec"]["minMember"] == 4 else None)(group(cluster, VOLCANO, "fin")),
                       what="minMember 4")
    assert updated["spec"]["minResources"] == {"cpu": "4"} and updated["status"]["phase"] == "Running"
    cluster.wait_pods({"fin-master-0", "fin-worker-0", "fin-worker-1", "fin-worker-2"})
    assert mgr.client.snapshot()[("update", "scheduling.volcano.sh/podgroups")] == 1

    since = mgr.reconciles
    cluster.set_phase("fin-master-0", "Succeeded")
    cluster.wait_condition("PyTorchJob", "fin", "Succeeded")
    wait_for(lambda: group(cluster, VOLCANO, "fin") is None, what="PodGroup deleted")
    wait_for(lambda: {("Normal", "JobTerminated", "Job has been terminated. Deleting PodGroup"),
                      ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: fin")} <= set(events_of(cluster, "fin")),
             what="PodGroup events")
    settled(mgr, since)
    assert mgr.client.snapshot()[("delete", "scheduling.volcano.sh/podgroups")] == 1


def test_a_running_jobs_edit_leaves_its_podgroup_as_its_run_began(cluster, start) -> None:
    """Run integrity (foundation.runs.spec): a non-elastic job's new worker count is deferred
    until its next run, so is the gang it joins; the next run's group has the new count."""
    mgr = start("scheduler-plugins-scheduler")
    cluster.apply(pytorch("held", Master=sized("PyTorchJob", 1), Worker=sized("PyTorchJob", 1)))
    wait_for(lambda: group(cluster, SCHEDULER_PLUGINS, "held"), what="PodGroup")
    cluster.wait_pods({"held-master-0", "held-worker-0"})
    cluster.run_all("held-master-0", "held-worker-0")  # the run has started: its edits are held
    wait_for(lambda: ("Running", "True", "PyTorchJobRunning") in cluster.conditions("PyTorchJob", "held"), what="Running")
    since = mgr.reconciles
    cluster.client.patch(PT, cluster.namespace, "held", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 3}}}})
    wait_for(lambda: any(e[1] == "PyTorchJobSpecChangeHeld" for e in events_of(cluster, "held")), what="the held Event")
    settled(mgr, since)
    assert group(cluster, SCHEDULER_PLUGINS, "held")["spec"]["minMember"] == 2  # type: ignore[index]
    assert set(cluster.pods()) == {"held-master-0", "held-worker-0"}
    cluster.client.patch(PT, cluster.namespace, "held", {"spec": {"runPolicy": {"suspend": True}}})
    wait_for(lambda: group(cluster, SCHEDULER_PLUGINS, "held") is None, what="the group deleted on suspend")
    cluster.client.patch(PT, cluster.namespace, "held", {"spec": {"runPolicy": {"suspend": False}}})
    resumed = wait_for(lambda: group(cluster, SCHEDULER_PLUGINS, "held"), what="the next run's group")
    assert resumed["spec"]["minMember"] == 4
    cluster.wait_pods({"held-master-0", "held-worker-0", "held-worker-1", "held-worker-2"})


def test_suspend_deletes_the_podgroup_and_resume_waits_for_admission_again(cluster, start) -> None:
    mgr = start("volcano")
    cluster.apply(pytorch("sus", Worker=sized("PyTorchJob", 2)))
    wait_for(lambda: group(cluster, VOLCANO, "sus"), what="PodGroup")
    set_group_phase(cluster, "sus", "Inqueue")
    cluster.wait_pods({"sus-worker-0", "sus-worker-1"})

    cluster.client.patch(PT, cluster.namespace, "sus", {"spec": {"runPolicy": {"suspend": True}}})
    cluster.wait_condition("PyTorchJob", "sus", "Suspended")
    wait_for(lambda: group(cluster, VOLCANO, "sus") is None and not cluster.pods(), what="group and pods gone")
    deleted = ("Normal", "SuccessfulDeletePodGroup", "Deleted PodGroup: sus")
    wait_for(lambda: deleted in events_of(cluster, "sus"), what="its Event")  # Events are sent after the pass

    since = mgr.reconciles
    cluster.client.patch(PT, cluster.namespace, "sus", {"spec": {"runPolicy": {"suspend": False}}})
    wait_for(lambda: group(cluster, VOLCANO, "sus"), what="PodGroup recreated")
    settled(mgr, since)
    assert cluster.pods() == {}  # a new group has no phase: wait for Volcano again
    set_group_phase(cluster, "sus", "Running")
    cluster.wait_pods({"sus-worker-0", "sus-worker-1"})


def test_scheduler_plugins_group_label_and_priority_ordered_min_resources(cluster, start, control_plane) -> None:
    high = f"high-{cluster.namespace}"[:63]
    cluster.client.create(PRIORITY_CLASSES, None, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                   "metadata": {"name": high}, "value": 1000})
    try:
        start("scheduler-plugins-scheduler")
        body = pytorch("sp", policy={"minAvailable": 2, "scheduleTimeoutSeconds": 120},
                       Master=sized("PyTorchJob", 1, requests={"cpu": "4"}),
                       Worker=sized("PyTorchJob", 2, priority=high, requests={"cpu": "1", "memory": "2Gi"}))
        body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["schedulerName"] = "my-scheduler"
        cluster.apply(body)
        # no waiting on a phase: the group and the pods come in the same pass
        pods = cluster.wait_pods({"sp-master-0", "sp-worker-0", "sp-worker-1"})
        pg = group(cluster, SCHEDULER_PLUGINS, "sp")
        assert pg["spec"] == {"minMember": 2, "scheduleTimeoutSeconds": 120, "minResources": {"cpu": "2", "memory": "4Gi"}}
        assert pg["metadata"]["ownerReferences"][0]["name"] == "sp" and "annotations" not in pg["metadata"]
        assert pods["sp-worker-0"]["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert pods["sp-master-0"]["spec"]["schedulerName"] == "my-scheduler"  # the user's choice is kept ...
        assert all(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "sp" for p in pods.values())
        message = "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten"
        wait_for(lambda: ("Warning", "SetPodTemplateSchedulerName", message) in events_of(cluster, "sp"),
                 what="... with a Warning")
        cluster.client.patch(PT, cluster.namespace, "sp", {"spec": {"runPolicy": {"suspend": True}}})
        wait_for(lambda: group(cluster, SCHEDULER_PLUGINS, "sp") is None, what="PodGroup deleted on suspend")
    finally:
        cluster.client.delete(PRIORITY_CLASSES, None, high)


def test_mpijob_launcher_and_workers_are_decorated(cluster, start) -> None:
    start("volcano")
    cluster.apply(job("MPIJob", "mg", Launcher=1, Worker=2))
    pg = wait_for(lambda: group(cluster, VOLCANO, "mg"), what="PodGroup")
    assert pg["spec"] == {"minMember": 3, "queue": "default"}
    set_group_phase(cluster, "mg", "Inqueue")
    pods = cluster.wait_pods({"mg-launcher", "mg-worker-0", "mg-worker-1"})
    assert pods["mg-launcher"]["metadata"]["annotations"]["volcano.sh/task-spec"] == "launcher"
    assert pods["mg-worker-1"]["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"


def shipped(name: str, namespace: str, spec: dict) -> dict:
    """A PodGroup as the compiler writes it into git (no owner, sync-wave -1)."""
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name},
                         "annotations": {"argocd.argoproj.io/sync-wave": "-1"}},
            "spec": spec}


def test_a_podgroup_shipped_by_gitops_is_used_and_left_alone_when_it_agrees(cluster, start) -> None:
    mgr = start("volcano")
    policy = {"minAvailable": 2, "minResources": {"cpu": "2"}, "priorityClass": "system-cluster-critical"}
    cluster.client.create(VOLCANO, cluster.namespace, shipped("git", cluster.namespace, {
        "minMember": 2, "minResources": {"cpu": "2000m"}, "priorityClassName": "system-cluster-critical"}))
    wait_for(lambda: mgr.reconciler.gang.podgroups.get(cluster.namespace, "git"), what="the controller sees it")
    since = mgr.reconciles
    cluster.apply(pytorch("git", policy=policy, Worker=sized("PyTorchJob", 2, requests={"cpu": "1"})))
    cluster.wait_condition("PyTorchJob", "git", "Created")
    settled(mgr, since)
    assert cluster.pods() == {}  # still waits for Volcano's verdict on the shipped group
    set_group_phase(cluster, "git", "Inqueue")
    cluster.wait_pods({"git-worker-0", "git-worker-1"})
    cluster.set_phase("git-worker-0", "Succeeded")
    cluster.set_phase("git-worker-1", "Succeeded")
    cluster.wait_condition("PyTorchJob", "git", "Succeeded")
    settled(mgr, mgr.reconciles - 1)
    pg = group(cluster, VOLCANO, "git")
    assert pg is not None and "ownerReferences" not in pg["metadata"]  # not adopted, not deleted
    assert pg["spec"]["minResources"] == {"cpu": "2000m"}  # equal by value: never rewritten
    used = mgr.client.snapshot()
    assert used[("update", "scheduling.volcano.sh/podgroups")] == used[("delete", "scheduling.volcano.sh/podgroups")] == 0
    assert used[("create", "scheduling.volcano.sh/podgroups")] == 0


def test_a_shipped_podgroup_that_disagrees_gets_our_fields_and_keeps_its_own(cluster, start) -> None:
    mgr = start("volcano")
    cluster.client.create(VOLCANO, cluster.namespace, shipped("old", cluster.namespace, {
        "minMember": 5, "queue": "batch", "minTaskMember": {"worker": 1}}))
    wait_for(lambda: mgr.reconciler.gang.podgroups.get(cluster.namespace, "old"), what="the controller sees it")
    cluster.apply(pytorch("old", Worker=sized("PyTorchJob", 2, requests={"cpu": "1"})))
    pg = wait_for(lambda: (lambda g: g if g["spec"]["minMember"] == 2 else None)(group(cluster, VOLCANO, "old")),
                  what="minMember brought in line")
    assert pg["spec"] == {"minMember": 2, "queue": "batch", "minResources": {"cpu": "2"}, "minTaskMember": {"worker": 1}}
    assert "ownerReferences" not in pg["metadata"]


def test_cli_flag_turns_gang_scheduling_on(control_plane, cluster) -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "controller", "--kubeconfig", str(control_plane.kubeconfig),
                             "--namespace", cluster.namespace, "--frameworks", "pytorch", "--workers", "2",
                             "--gang-scheduler-name", "coscheduling"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        cluster.apply(pytorch("cli", Worker=sized("PyTorchJob", 1)))
        pods = cluster.wait_pods({"cli-worker-0"}, timeout=30)
        assert pods["cli-worker-0"]["spec"]["schedulerName"] == "coscheduling"
        assert group(cluster, SCHEDULER_PLUGINS, "cli")["spec"] == {"minMember": 1}
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    assert proc.returncode == 0, out
