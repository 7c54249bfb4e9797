"""The scheduling overlay alone: Kueue, priority, gang scheduling, GPU placement."""

from __future__ import annotations

import dataclasses

import pytest
from overlay_kit import build_bundle, component_yaml, crd_errors, project, templates

from overlays import scheduling
from schemas import quantity as q
from schemas import upstream

H100 = {
    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 10, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}
            ]
        }
    },
}
GPU_SELECTOR = "nvidia.com/gpu.product"


def cluster(**scheduling_defaults):
    return project({"gpu": {"gpuTypes": {"h100": H100}, "scheduling": scheduling_defaults}})


def _apply(spec, *, framework="pytorch", project_=None, **kw):
    bundle = build_bundle(spec, framework=framework, project_=project_ or cluster(), **kw)
    out = scheduling.apply(bundle)
    return bundle, out, out.rendered_job()


# --- snapshots of the component alone on a minimal job ----------------------------------


@pytest.mark.parametrize(
    ("spec", "defaults"),
    [
        pytest.param({"nodes": 2, "scheduling": {"gang": True, "queue": "team-a", "priority": "high"}}, {},
                     id="volcano gang with queue and priority class"),
        pytest.param({"nodes": 2, "scheduling": {"gang": {"scheduler": "coscheduling", "timeoutSeconds": 120}}}, {},
                     id="coscheduling gang with timeout"),
        pytest.param({"scheduling": {"queue": "team-a", "priority": "high"}}, {"kueuePriority": True},
                     id="kueue queue and workload priority"),
        pytest.param({"nodes": 2, "resources": {"gpu": 8, "gpuType": "h100"},
                      "scheduling": {"nodeSelector": {"pool": "train"}}}, {},
                     id="gpu placement and own node selector"),
    ],
)
def test_component_snapshot(spec, defaults, yaml_snapshot):
    bundle = build_bundle(spec, project_=cluster(**defaults))
    assert component_yaml(bundle, scheduling.apply(bundle).component("scheduling")) == yaml_snapshot


# --- Kueue and priority -------------------------------------------------------------------


def test_queue_is_a_kueue_label_on_the_job():
    _, _, job = _apply({"scheduling": {"queue": "team-a"}})
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "team-a"}
    assert "runPolicy" not in job["spec"]


def test_queue_label_joins_the_job_labels():
    _, _, job = _apply({"scheduling": {"queue": "team-a"}}, metadata={"labels": {"team": "a"}})
    assert job["metadata"]["labels"] == {"team": "a", "kueue.x-k8s.io/queue-name": "team-a"}


def test_priority_class_goes_to_run_policy_and_every_pod():
    bundle, _, job = _apply({"nodes": 3, "scheduling": {"priority": "high"}})
    assert job["spec"]["runPolicy"] == {"schedulingPolicy": {"priorityClass": "high"}}
    assert {p["spec"]["priorityClassName"] for p in templates(job, bundle).values()} == {"high"}


def test_kueue_priority_is_a_label_and_no_priority_class():
    bundle, _, job = _apply({"nodes": 2, "scheduling": {"priority": "high"}}, project_=cluster(kueuePriority=True))
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/priority-class": "high"}
    assert "runPolicy" not in job["spec"]
    assert all("priorityClassName" not in p["spec"] for p in templates(job, bundle).values())


def test_environment_defaults_apply_and_the_job_wins():
    env = cluster(queue="env-queue", priority="env-low")
    _, _, job = _apply({"scheduling": {"priority": "mine"}}, project_=env)
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "env-queue"}
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["priorityClass"] == "mine"


def test_run_policy_already_present_gets_scheduling_policy_beside_it():
    bundle, out, job = _apply({"policy": {"backoffLimit": 2}, "scheduling": {"priority": "high"}})
    assert job["spec"]["runPolicy"] == {"backoffLimit": 2, "schedulingPolicy": {"priorityClass": "high"}}
    paths = [p["path"] for p in out.component("scheduling").patches]
    assert "/spec/runPolicy/schedulingPolicy" in paths and "/spec/runPolicy" not in paths


def test_run_policy_absent_is_added_whole():
    _, out, _ = _apply({"scheduling": {"priority": "high"}})
    assert out.component("scheduling").patches[0] == {
        "op": "add", "path": "/spec/runPolicy", "value": {"schedulingPolicy": {"priorityClass": "high"}}
    }


# --- gang scheduling ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "spec", "members"),
    [
        pytest.param("pytorch", {"nodes": 4}, 4, id="pytorch master and three workers"),
        pytest.param("pytorch", {"nodes": 4, "elastic": {"minNodes": 2, "maxNodes": 6}}, 2, id="elastic pytorch waits for minNodes"),
        pytest.param("mpi", {"nodes": 3}, 4, id="mpi workers plus the launcher"),
        pytest.param("tensorflow", {"nodes": 2, "roles": {"ps": {"replicas": 2}}}, 4, id="tensorflow with parameter servers"),
        pytest.param("mxnet", {"nodes": 2, "roles": {"server": {"replicas": 1}}}, 4, id="mxnet scheduler servers and workers"),
        pytest.param("jax", {"nodes": 1}, 1, id="a single pod"),
    ],
)
def test_min_available_counts_pods_that_must_start_together(framework, spec, members):
    _, out, job = _apply({**spec, "scheduling": {"gang": True}}, framework=framework)
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"] == members
    (group,) = out.component("scheduling").resources
    assert group["spec"]["minMember"] == members


@pytest.mark.parametrize(
    ("gang", "defaults", "scheduler", "api"),
    [
        pytest.param(True, {}, "volcano", "scheduling.volcano.sh/v1beta1", id="true means volcano by default"),
        pytest.param(True, {"gangScheduler": "coscheduling"}, "scheduler-plugins-scheduler",
                     "scheduling.x-k8s.io/v1alpha1", id="true means the environment's gang scheduler"),
        pytest.param({"scheduler": "coscheduling"}, {}, "scheduler-plugins-scheduler",
                     "scheduling.x-k8s.io/v1alpha1", id="an explicit scheduler wins"),
        pytest.param(None, {"gang": {"scheduler": "volcano"}}, "volcano",
                     "scheduling.volcano.sh/v1beta1", id="the environment's gang default applies"),
    ],
)
def test_gang_scheduler_choice(gang, defaults, scheduler, api):
    spec = {"nodes": 2, "scheduling": {"gang": gang} if gang is not None else {}}
    bundle, out, job = _apply(spec, project_=cluster(**defaults))
    assert {p["spec"]["schedulerName"] for p in templates(job, bundle).values()} == {scheduler}
    assert [r["apiVersion"] for r in out.component("scheduling").resources] == [api]


def test_gang_false_turns_off_an_environment_default():
    _, out, job = _apply({"scheduling": {"gang": False}}, project_=cluster(gang=True))
    assert out.components == ()
    assert "runPolicy" not in job["spec"]


def test_volcano_pods_carry_the_group_annotations_and_the_kueue_queue_stays_a_label():
    bundle, out, job = _apply({"nodes": 2, "scheduling": {"gang": True, "queue": "q", "priority": "high"}})
    pods = templates(job, bundle)
    for rtype, pod in pods.items():
        assert pod["metadata"]["annotations"] == {
            "scheduling.k8s.io/group-name": "mini",
            "volcano.sh/task-spec": rtype.lower(),
        }
    # scheduling.queue is a Kueue LocalQueue: it must not become a (likely missing) Volcano queue
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "q"
    policy = job["spec"]["runPolicy"]["schedulingPolicy"]
    assert "queue" not in policy
    (group,) = out.component("scheduling").resources
    assert "queue" not in group["spec"] and group["spec"]["priorityClassName"] == "high"


def test_coscheduling_pods_carry_the_group_label_and_the_timeout():
    bundle, out, job = _apply(
        {"nodes": 2, "scheduling": {"gang": {"scheduler": "coscheduling", "timeoutSeconds": 90}, "queue": "q"}},
        metadata={"labels": {"team": "a"}},
    )
    for pod in templates(job, bundle).values():
        assert pod["metadata"]["labels"] == {"team": "a", "scheduling.x-k8s.io/pod-group": "mini"}
    policy = job["spec"]["runPolicy"]["schedulingPolicy"]
    assert policy["scheduleTimeoutSeconds"] == 90 and "queue" not in policy
    (group,) = out.component("scheduling").resources
    assert group["spec"]["scheduleTimeoutSeconds"] == 90 and "queue" not in group["spec"]


def test_min_resources_sum_the_requests_of_the_gang():
    _, out, job = _apply(
        {"nodes": 3, "resources": {"gpu": 8, "cpu": "500m", "memory": "96Gi"},
         "roles": {"launcher": {"resources": {"cpu": "1", "memory": "512Mi"}}}, "scheduling": {"gang": True}},
        framework="mpi",
    )
    expected = {"cpu": "2500m", "memory": "295424Mi", "nvidia.com/gpu": "24"}
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["minResources"] == expected
    assert out.component("scheduling").resources[0]["spec"]["minResources"] == expected


def test_elastic_min_resources_count_only_min_nodes():
    _, _, job = _apply(
        {"nodes": 4, "elastic": {"minNodes": 2, "maxNodes": 4}, "resources": {"gpu": 4, "memory": "64Gi"},
         "scheduling": {"gang": True}}
    )
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["minResources"] == {"memory": "128Gi", "nvidia.com/gpu": "8"}


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param(["256Gi"] * 4, "1Ti", id="binary sizes roll up"),
        pytest.param(["32", "32"], "64", id="whole cpus stay whole"),
        pytest.param(["500m", "1"], "1500m", id="millicpus"),
        pytest.param(["1.5", "1.5"], "3", id="decimals that add up"),
        pytest.param(["1G", "500M"], "1500M", id="decimal suffixes"),
        pytest.param([2, 2], "4", id="integers print as the operator prints them"),
        pytest.param(["1024", "1Gi"], "1073742848", id="the first term's format"),
        pytest.param(["1Gi", "1024"], "1048577Ki", id="the first term's format, binary"),
    ],
)
def test_quantity_sums_print_as_the_operator_prints_them(values, expected):
    """One pod per replica type, one request each: the sum is the controller's too
    (schemas.upstream), so git and an operator that manages PodGroups agree."""
    replicas = {f"R{i}": {"template": {"spec": {"containers": [{"resources": {"requests": {"cpu": v}}}]}}}
                for i, v in enumerate(values)}
    assert upstream.min_resources(replicas, list(replicas), members=len(values)) == {"cpu": expected}


def test_user_scheduler_name_from_pod_template_is_kept():
    bundle, _, job = _apply({"scheduling": {"gang": True}, "podTemplate": {"spec": {"schedulerName": "mine"}}})
    assert templates(job, bundle)["Master"]["spec"]["schedulerName"] == "mine"


@pytest.mark.parametrize(
    ("gang", "framework", "spec"),
    [
        pytest.param({"scheduler": "volcano"}, "pytorch", {"nodes": 3, "resources": {"gpu": 2, "cpu": "4"}}, id="volcano pytorch"),
        pytest.param({"scheduler": "coscheduling", "timeoutSeconds": 60}, "mpi", {"nodes": 2, "resources": {"gpu": 1}}, id="coscheduling mpi"),
        pytest.param({"scheduler": "volcano"}, "jax", {}, id="volcano without resources"),
    ],
)
def test_pod_groups_validate_against_the_scheduling_crds(gang, framework, spec):
    from foundation.frameworks import ADAPTERS

    queued = {} if ADAPTERS[framework].facts.kueue_unmanaged else {"queue": "team-a"}  # a queued MPIJob is refused
    _, out, _ = _apply({**spec, "scheduling": {"gang": gang, **queued, "priority": "high"}},
                       framework=framework, metadata={"labels": {"team": "a"}})
    (group,) = out.component("scheduling").resources
    assert crd_errors(group) == []


# --- placement ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("framework", "spec", "accelerated", "plain"),
    [
        pytest.param("mpi", {"nodes": 2}, {"Worker"}, {"Launcher"}, id="mpi launcher stays off GPU nodes"),
        pytest.param("tensorflow", {"nodes": 2, "roles": {"ps": {"replicas": 2}, "evaluator": {}}},
                     {"Chief", "Worker"}, {"PS", "Evaluator"}, id="tensorflow ps and evaluator stay off GPU nodes"),
        pytest.param("mxnet", {"nodes": 2, "roles": {"server": {"replicas": 1}}},
                     {"Worker"}, {"Scheduler", "Server"}, id="mxnet scheduler and servers stay off GPU nodes"),
        pytest.param("paddle", {"nodes": 2, "roles": {"ps": {"replicas": 1}}},
                     {"Worker"}, {"Master"}, id="paddle servers stay off GPU nodes"),
    ],
)
def test_gpu_placement_only_on_accelerated_roles(framework, spec, accelerated, plain):
    spec = {
        **spec,
        "resources": {"gpu": 4, "gpuType": "h100", "sharedMemory": "1Gi"},
        "scheduling": {"nodeSelector": {"pool": "train"}, "tolerations": [{"key": "pool", "operator": "Exists"}]},
    }
    bundle, _, job = _apply(spec, framework=framework)
    pods = templates(job, bundle)
    assert set(pods) == accelerated | plain
    for rtype in accelerated:
        pod = pods[rtype]["spec"]
        assert pod["nodeSelector"] == {GPU_SELECTOR: "NVIDIA-H100-80GB-HBM3", "pool": "train"}
        assert pod["tolerations"] == H100["tolerations"] + [{"key": "pool", "operator": "Exists"}]
        assert pod["affinity"] == H100["affinity"]
    for rtype in plain:
        pod = pods[rtype]["spec"]
        assert pod["nodeSelector"] == {"pool": "train"}, rtype
        assert pod["tolerations"] == [{"key": "pool", "operator": "Exists"}], rtype
        assert "affinity" not in pod
        assert "volumes" not in pod  # no shared memory
        assert "nvidia.com/gpu" not in str(pod["containers"][0].get("resources", {}))


def test_a_role_that_asks_for_a_gpu_type_gets_its_placement():
    spec = {"nodes": 2, "resources": {"gpu": 1}, "roles": {"evaluator": {"resources": {"gpu": 1, "gpuType": "h100"}}}}
    bundle, _, job = _apply(spec, framework="tensorflow")
    pods = templates(job, bundle)
    assert pods["Evaluator"]["spec"]["nodeSelector"] == H100["nodeSelector"]
    assert "nodeSelector" not in pods["Chief"]["spec"]


def test_own_node_selector_wins_over_the_gpu_type_on_the_same_key():
    spec = {"resources": {"gpu": 1, "gpuType": "h100"}, "scheduling": {"nodeSelector": {GPU_SELECTOR: "custom"}}}
    bundle, _, job = _apply(spec)
    assert templates(job, bundle)["Master"]["spec"]["nodeSelector"] == {GPU_SELECTOR: "custom"}


def test_pod_template_affinity_is_not_weakened():
    own = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}}}
    gpu = {**H100, "affinity": {**H100["affinity"], "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}
    env = project({"gpu": {"gpuTypes": {"h100": gpu}}})
    spec = {"resources": {"gpu": 1, "gpuType": "h100"}, "podTemplate": {"spec": {"affinity": own}}}
    bundle, _, job = _apply(spec, project_=env)
    affinity = templates(job, bundle)["Master"]["spec"]["affinity"]
    assert affinity["nodeAffinity"] == own["nodeAffinity"]
    assert affinity["podAntiAffinity"] == {"preferredDuringSchedulingIgnoredDuringExecution": []}


def test_tolerations_already_in_the_pod_template_are_not_repeated():
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    spec = {"resources": {"gpu": 1, "gpuType": "h100"}, "podTemplate": {"spec": {"tolerations": [toleration]}}}
    bundle, _, job = _apply(spec)
    assert templates(job, bundle)["Master"]["spec"]["tolerations"] == [toleration]


def test_nothing_to_say_writes_no_component():
    bundle = build_bundle({"nodes": 2, "resources": {"gpu": 1}})
    assert scheduling.apply(bundle).components == ()


def _min_resources_pod_by_pod(job: dict, replica_specs: str, members: int) -> dict:
    """The calculation written plainly: every pod in replica order until `members`, each
    sum printed in the format of its first term."""
    totals: dict = {}
    pods = [replica for replica in job["spec"][replica_specs].values() for _ in range(replica.get("replicas", 1))]
    for replica in pods[:members]:
        for container in replica["template"]["spec"]["containers"]:
            resources = container.get("resources") or {}
            requests = resources.get("requests")
            for key, value in (requests if requests is not None else resources.get("limits") or {}).items():
                amount, fmt = q.read(value)
                totals[key] = (totals[key][0] + amount, totals[key][1]) if key in totals else (amount, fmt)
    return {key: q.canonical(*totals[key]) for key in sorted(totals)}


@pytest.mark.parametrize("members", [0, 1, 2, 3, 5, 9], ids=lambda m: f"{m} members")
def test_min_resources_skip_an_empty_replica_and_stop_at_the_members(members):
    bundle = build_bundle({"nodes": 3, "resources": {"cpu": "500m", "memory": "1Gi", "gpu": 1},
                           "roles": {"evaluator": {"replicas": 2, "resources": {"cpu": "1"}}}}, framework="tensorflow")
    job = bundle.job
    replicas = job["spec"]["tfReplicaSpecs"]
    empty = {"replicas": 0, "template": {"spec": {"containers": [{"name": "x", "resources": {"limits": {"cpu": "7"}}}]}}}
    job = {**job, "spec": {**job["spec"], "tfReplicaSpecs": {"Chief": replicas["Chief"], "PS": empty,
                                                             "Worker": replicas["Worker"], "Evaluator": replicas["Evaluator"]}}}
    bundle = dataclasses.replace(bundle, job=job)
    assert scheduling.min_resources(bundle, members) == _min_resources_pod_by_pod(job, "tfReplicaSpecs", members)
