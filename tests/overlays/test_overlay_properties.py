"""Properties every overlay step keeps, on jobs of every framework with every overlay busy.

- applying a step twice equals applying it once (and the whole chain twice equals once);
- no step mutates its input (the bundle, its base job, its components);
- the order is rbac, storage, scheduling, and each overlay writes only its own component;
- roles that do not run on GPUs (MPI launcher, parameter servers, MXNet scheduler...)
  get no GPU, no shared memory and no GPU placement, through the whole chain.
"""

from __future__ import annotations

import copy

import pytest
from overlay_kit import build_bundle, project, templates

import overlays
from foundation.frameworks import ADAPTERS

PLACEMENT = {"nodeSelector": {"gpu.acme.com/model": "h100"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}
CLUSTER = project({"prod": {"gpuTypes": {"h100": PLACEMENT}, "scheduling": {"queue": "prod"}}})
EXTRA_ROLES = {
    "tensorflow": {"ps": {"replicas": 2, "resources": {"cpu": "2"}}, "evaluator": {}},
    "mpi": {"launcher": {"resources": {"cpu": "1"}}},
    "paddle": {"ps": {"replicas": 1}},
    "mxnet": {"server": {"replicas": 2}},
}


def busy_spec(framework: str, gang) -> dict:
    spec = {
        "nodes": 3,
        "resources": {"gpu": 2, "gpuType": "h100", "cpu": "4", "memory": "16Gi", "sharedMemory": "2Gi"},
        "roles": EXTRA_ROLES.get(framework, {}),
        "storage": [
            {"name": "data", "mountPath": "/data", "claim": "datasets", "readOnly": True},
            {"name": "out", "mountPath": "/out", "size": "20Gi"},
        ],
        "scheduling": {"priority": "high", "gang": gang, "nodeSelector": {"pool": "train"}},
        "policy": {"backoffLimit": 1},
        "serviceAccount": {"create": True, "rules": [{"resources": ["pods"], "verbs": ["get"]}]},
    }
    if framework == "pytorch":
        spec["elastic"] = {"minNodes": 2, "maxNodes": 4}
    if ADAPTERS[framework].facts.kueue_unmanaged:  # the environment's queue would be refused for this kind
        spec["scheduling"]["queue"] = None
    return spec


CASES = [
    pytest.param(framework, gang, id=f"{framework} with {gang['scheduler']}")
    for framework in ADAPTERS
    for gang in ({"scheduler": "volcano"}, {"scheduler": "coscheduling", "timeoutSeconds": 30})
]


def _bundle(framework, gang):
    return build_bundle(busy_spec(framework, gang), framework=framework, project_=CLUSTER)


def _run(bundle):
    for step in overlays.STEPS:
        bundle = step(bundle)
    return bundle


# steps after the three overlays (e.g. Argo CD sync waves) annotate, they add no component
OVERLAY_STEPS = tuple(step for step in overlays.STEPS if step.__module__.startswith("overlays."))


def test_steps_are_declared_in_order():
    assert [step.__module__ for step in overlays.STEPS][:3] == ["overlays.rbac", "overlays.storage", "overlays.scheduling"]


@pytest.mark.parametrize(("framework", "gang"), CASES)
def test_each_step_applied_twice_equals_once(framework, gang):
    bundle = _bundle(framework, gang)
    for step in overlays.STEPS:
        once = step(bundle)
        assert step(once) == once, step.__module__
        bundle = once
    assert _run(bundle) == bundle


@pytest.mark.parametrize(("framework", "gang"), CASES)
def test_steps_do_not_mutate_their_input(framework, gang):
    bundle = _bundle(framework, gang)
    for step in overlays.STEPS:
        before = copy.deepcopy(bundle)
        after = step(bundle)
        assert bundle == before, step.__module__
        assert after.job == before.job  # the base stays the base; changes live in components
        after.rendered_job()
        assert after == step(before)
        bundle = after


@pytest.mark.parametrize(("framework", "gang"), CASES)
def test_each_step_writes_only_its_own_component(framework, gang):
    bundle = _bundle(framework, gang)
    for step in OVERLAY_STEPS:
        name = step.__module__.split(".")[-1]
        after = step(bundle)
        assert [c.name for c in after.components] == [c.name for c in bundle.components] + [name]
        bundle = after


@pytest.mark.parametrize(("framework", "gang"), CASES)
def test_roles_off_the_gpu_get_no_gpu_no_shm_no_gpu_placement(framework, gang):
    bundle = _run(_bundle(framework, gang))
    accelerated = {p.replica_type for p in bundle.adapter.plan(bundle.target.spec) if p.accelerated}
    for rtype, pod in templates(bundle.rendered_job(), bundle).items():
        spec = pod["spec"]
        container = spec["containers"][0]
        volumes = {v["name"] for v in spec["volumes"]}
        assert {"data", "out"} <= volumes  # storage reaches every role
        assert spec["nodeSelector"]["pool"] == "train"  # so does the job's own selector
        if rtype in accelerated:
            assert container["resources"]["limits"]["nvidia.com/gpu"] == "2"
            assert "dshm" in volumes
            assert spec["nodeSelector"]["gpu.acme.com/model"] == "h100"
            assert spec["tolerations"] == PLACEMENT["tolerations"]
        else:
            assert "nvidia.com/gpu" not in str(container.get("resources", {})), rtype
            assert "dshm" not in volumes, rtype
            assert "gpu.acme.com/model" not in spec["nodeSelector"], rtype
            assert "tolerations" not in spec, rtype


@pytest.mark.parametrize(("framework", "gang"), CASES)
def test_rendered_job_keeps_everything_lowering_wrote(framework, gang):
    """Patches only add: every base field is still there after all three components."""
    bundle = _run(_bundle(framework, gang))
    rendered = bundle.rendered_job()

    def contained(base, full, path="") -> None:
        if isinstance(base, dict):
            for key, value in base.items():
                assert key in full, f"{path}/{key} lost"
                contained(value, full[key], f"{path}/{key}")
        elif isinstance(base, list):  # lists are only appended to, so indexes hold
            assert len(full) >= len(base), f"{path} lost items"
            for i, item in enumerate(base):
                contained(item, full[i], f"{path}/{i}")
        else:
            assert base == full, path

    contained(bundle.job, rendered)
