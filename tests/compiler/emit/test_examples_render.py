"""Every example compiles, kustomize renders the tree, and the cluster would keep all of it.

Three independent checks on each example set (the top-level files, each project folder)
and environment: `kubectl kustomize OUT/<env>` prints the same objects as
`train-compile render`; every rendered object of a group we hold a CRD for validates
against that CRD's served `openAPIV3Schema`; and no field sits where the API server
would prune it (a field the structural schema does not declare is silently dropped, so
a misspelled or misplaced field would pass validation and vanish in the cluster).
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
import yaml
from testworld.assets import kubectl_path
from testworld.paths import MPI_OPERATOR_CRD

from compiler_builders import example_sets, pruned_fields, run_cli, shared_dir

KUBECTL = str(kubectl_path())
CRD_FOLDERS = ("kubeflow-v1", "scheduling", "trainer-v2.3.0")

SETS = example_sets()


@functools.cache
def crd_schemas() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(group, version, kind) -> openAPIV3Schema of every served version of the reference CRDs."""
    schemas = {}
    files = [p for folder in CRD_FOLDERS for p in sorted((shared_dir() / "reference" / "crds" / folder).glob("*.yaml"))]
    for path in [*files, MPI_OPERATOR_CRD]:  # the mpi-operator's v2beta1 MPIJob (target mpi-operator)
        crd = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)  # C: CRDs are large
        names = crd["spec"]["names"]
        for version in crd["spec"]["versions"]:
            if version.get("served"):
                key = (crd["spec"]["group"], version["name"], names["kind"])
                schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def schema_for(obj: dict[str, Any]) -> dict[str, Any] | None:
    group, _, version = obj["apiVersion"].rpartition("/")
    return crd_schemas().get((group, version, obj["kind"]))


def _pytorch_schema() -> dict[str, Any]:
    return crd_schemas()[("kubeflow.org", "v1", "PyTorchJob")]


def _minimal_pytorchjob(**template_spec: Any) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "busybox:1.36"}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "walker", "labels": {"team": "x"}},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {
            "metadata": {"labels": {"team": "x"}},
            "spec": {"containers": [container], **template_spec},
        }}}},
    }


def test_the_reference_crds_are_there_for_all_seven_kinds_and_the_mpi_operators_mpijob():
    kinds = {kind for group, version, kind in crd_schemas() if (group, version) == ("kubeflow.org", "v1")}
    assert kinds == {"PyTorchJob", "TFJob", "MPIJob", "XGBoostJob", "PaddleJob", "JAXJob", "MXJob"}
    assert ("kubeflow.org", "v2beta1", "MPIJob") in crd_schemas()


def test_the_walker_accepts_a_job_with_only_declared_fields():
    assert list(pruned_fields(_minimal_pytorchjob(), _pytorch_schema())) == []


@pytest.mark.parametrize(
    ("mutate", "pruned"),
    [
        pytest.param(lambda job: job["spec"].update(nprocsPerNode="8"), "spec.nprocsPerNode",
                     id="a misspelled spec field is pruned"),
        pytest.param(lambda job: job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
                     ["containers"][0].update(gpu=1),
                     "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].gpu",
                     id="an unknown field inside a container is pruned"),
        pytest.param(lambda job: job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"]
                     .update(team="x"),
                     "spec.pytorchReplicaSpecs.Master.template.metadata.team",
                     id="a label written beside labels instead of under it is pruned"),
        pytest.param(lambda job: job.update(status2={}), "status2", id="an unknown top-level field is pruned"),
    ],
)
def test_the_walker_finds_a_field_the_server_would_prune(mutate, pruned):
    job = _minimal_pytorchjob()
    mutate(job)

    assert list(pruned_fields(job, _pytorch_schema())) == [pruned]


def test_the_walker_keeps_free_form_maps_and_preserved_subtrees():
    schema = {"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }}

    assert list(pruned_fields({"labels": {"any": "x"}, "raw": {"any": {"deep": 1}}}, schema)) == []
    assert list(pruned_fields({"labels": {}, "other": 1}, schema)) == ["other"]


def test_the_crd_schema_rejects_a_job_with_a_wrong_type():
    job = _minimal_pytorchjob()
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "one"

    with pytest.raises(jsonschema.ValidationError, match="'one' is not of type 'integer'"):
        jsonschema.validate(job, _pytorch_schema())


def yaml_12(text: str) -> list:
    from ruamel.yaml import YAML

    return [doc for doc in YAML(typ="safe").load_all(text) if doc is not None]


# --- the examples ----------------------------------------------------------------------


@functools.cache
def _built(set_name: str, out: str) -> dict[str, Any]:
    """Build one example set with the CLI; returns {env: rendered objects}."""
    (paths,) = [p for name, p in SETS if name == set_name]
    run = run_cli("build", *paths, "-o", out)
    assert run.exit_code == 0, run.stderr
    envs = sorted(p.name for p in Path(out).iterdir())
    rendered = {}
    for env in envs:
        render = run_cli("render", *paths, "--env", env)
        assert render.exit_code == 0, render.stderr
        rendered[env] = [doc for doc in yaml.safe_load_all(render.stdout) if doc is not None]
    return rendered


@pytest.fixture(scope="module")
def build_root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("examples-build")


def _set_env_params() -> list:
    """(set, env) pairs known before building: environments come from the project file."""
    params = []
    for name, paths in SETS:
        project = paths[0] / "trainforge.yaml" if paths[0].is_dir() else None
        declared = yaml.safe_load(project.read_text()).get("environments") if project else None
        envs = sorted(declared or ["default"])
        params += [pytest.param(name, env, id=f"{name}, environment {env}") for env in envs]
    return params


def test_there_is_one_example_per_framework_and_a_kitchen_sink():
    top = {p.name for p in SETS[0][1]}
    frameworks = {yaml.safe_load(p.read_text())["spec"]["framework"] for p in SETS[0][1]}
    assert frameworks == {"pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax", "mxnet"}
    assert "kitchen-sink.yaml" in top


@pytest.mark.parametrize(("set_name", "env"), _set_env_params())
def test_kubectl_kustomize_renders_what_train_compile_render_prints(build_root, set_name, env):
    out = build_root / set_name.replace(" ", "-")
    rendered = _built(set_name, str(out))[env]

    proc = subprocess.run([KUBECTL, "kustomize", str(out / env)], capture_output=True, text=True, timeout=60)

    assert proc.returncode == 0, proc.stderr
    kustomized = [doc for doc in yaml.safe_load_all(proc.stdout) if doc is not None]
    assert len(kustomized) >= 1
    assert kustomized == rendered
    # the same under a YAML 1.2 reader (kustomize's own, and JSON's): `3e-5` must stay a string
    render = run_cli("render", *dict(SETS)[set_name], "--env", env)
    assert yaml_12(proc.stdout) == yaml_12(render.stdout) == rendered


@pytest.mark.parametrize(("set_name", "env"), _set_env_params())
def test_rendered_objects_validate_against_the_upstream_crds(build_root, set_name, env):
    objects = _built(set_name, str(build_root / set_name.replace(" ", "-")))[env]
    checked = 0
    for obj in objects:
        schema = schema_for(obj)
        if schema is None:
            assert not obj["apiVersion"].startswith("kubeflow.org/"), f"no CRD for {obj['kind']}"
            continue
        jsonschema.validate(obj, schema, cls=jsonschema.Draft7Validator)
        checked += 1
    assert checked >= 1


@pytest.mark.parametrize(("set_name", "env"), _set_env_params())
def test_rendered_objects_hold_no_field_the_api_server_would_prune(build_root, set_name, env):
    objects = _built(set_name, str(build_root / set_name.replace(" ", "-")))[env]
    pruned = {
        f"{obj['kind']}/{obj['metadata']['name']}": list(pruned_fields(obj, schema))
        for obj in objects
        if (schema := schema_for(obj)) is not None
    }

    assert pruned and all(fields == [] for fields in pruned.values()), pruned
