"""The project's `controller: training-operator | train-controller` (issue 25 item 1).

It says which controller turns an environment's kubeflow-v1 jobs into pods, so the pod
security review judges the init containers that controller really adds: under the default
`training-operator` a restricted environment refuses multi-node PyTorch and MPI jobs and
names `controller: train-controller` as a way out; under `train-controller` they compile.
It changes nothing in the compiled output. Whether the verdicts are right is decided by the
real PodSecurity admission (test_pod_security_admission.py, both controllers; and
tests/controller/test_restricted_pods.py, the pods train-controller creates on kwok).
"""

from __future__ import annotations

import copy

from typing import Any, get_args

import pytest
from compiler_builders import compile_docs, job_doc, project_doc

from compiler.emit.render import rendered_objects
from foundation.frameworks.base import INIT_SECURITY_CONTEXT
from foundation.progress.protocol import ENV_URL, VOLUME_NAME
from schemas.project import DEFAULT_PROJECT, ControllerName, Project

RESTRICTED = {"podSecurity": "restricted", "podSecurityDefaults": True}
READY = {"spec": {"securityContext": {"runAsNonRoot": True}}}  # the one setting the compiler never writes
JOBS = {  # the jobs whose pods get an operator init container
    "pytorch": job_doc("pytorch", name="torch", nodes=3, podTemplate=READY),
    "mpi": job_doc("mpi", name="mpi", nodes=2, podTemplate=READY),
}


def errors(result) -> list[str]:
    return [d.text() for d in result.diagnostics if d.severity == "error"]


def compile_with(tmp_path, job: dict[str, Any], **project: Any):
    return compile_docs(tmp_path, job, project=project_doc(**project))


def test_the_default_is_the_training_operator():
    assert DEFAULT_PROJECT.controller_for("default") == "training-operator"
    project = Project.model_validate({"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project",
                                      "defaults": {"controller": "train-controller"},
                                      "environments": {"a": {}, "b": {"controller": "training-operator"}}})
    assert (project.controller_for("a"), project.controller_for("b")) == ("train-controller", "training-operator")


def test_every_controller_a_project_may_name_states_its_init_containers():
    assert set(get_args(ControllerName)) == set(INIT_SECURITY_CONTEXT)


@pytest.mark.parametrize("framework", list(JOBS))
def test_under_the_training_operator_restricted_refuses_and_names_train_controller(tmp_path, framework):
    for project in ({"policy": RESTRICTED}, {"policy": RESTRICTED, "defaults": {"controller": "training-operator"}}):
        found = errors(compile_with(tmp_path, JOBS[framework], **project))

        assert len(found) == 1, found
        assert "the Training Operator adds init container" in found[0] and "without a securityContext" in found[0]
        assert "set controller: train-controller in trainforge.yaml (the init containers it adds meet restricted)" \
            in found[0]


@pytest.mark.parametrize("framework", list(JOBS))
def test_under_train_controller_restricted_accepts_multi_node_pytorch_and_mpi(tmp_path, framework):
    result = compile_with(tmp_path, JOBS[framework], policy=RESTRICTED, defaults={"controller": "train-controller"})

    assert result.ok, errors(result)


def test_an_environment_chooses_its_own_controller(tmp_path):
    result = compile_with(tmp_path, JOBS["pytorch"], policy=RESTRICTED, defaults={"controller": "train-controller"},
                          environments={"ours": {}, "upstream": {"controller": "training-operator"}})

    found = errors(result)
    assert len(found) == 1 and "the Training Operator adds init container 'init-pytorch'" in found[0], found
    ours = compile_with(tmp_path, JOBS["pytorch"], policy=RESTRICTED, defaults={"controller": "training-operator"},
                        environments={"ours": {"controller": "train-controller"}})
    assert ours.ok, errors(ours)


def _without_progress(objects: list[dict]) -> list[dict]:
    """The objects less what compiler.targets.progress adds for train-controller's endpoint."""
    out = copy.deepcopy(objects)
    for obj in out:
        for replica in (obj.get("spec") or {}).get("mpiReplicaSpecs", {}).values():
            pod = replica["template"]["spec"]
            pod["volumes"] = [v for v in pod.get("volumes", []) if v["name"] != VOLUME_NAME] or None
            for c in pod["containers"]:
                c["env"] = [e for e in c.get("env", []) if not e["name"].startswith("KUBEFLOW_TRAINER_")] or None
                c["volumeMounts"] = [m for m in c.get("volumeMounts", []) if m["name"] != VOLUME_NAME] or None
                for key in ("env", "volumeMounts"):
                    if c[key] is None:
                        del c[key]
            if pod["volumes"] is None:
                del pod["volumes"]
            if pod.get("serviceAccountName") == "default":
                del pod["serviceAccountName"]
    return out


def test_the_controller_changes_the_review_and_under_train_controller_adds_only_the_progress_endpoint(tmp_path):
    out = {}
    for controller in INIT_SECURITY_CONTEXT:
        result = compile_with(tmp_path, JOBS["mpi"], defaults={"controller": controller})
        assert result.ok, errors(result)
        out[controller] = rendered_objects(result, "default")

    assert out["training-operator"] == _without_progress(out["train-controller"])
    assert out["train-controller"] != out["training-operator"]
    launcher = next(o for o in out["train-controller"] if o["kind"] == "MPIJob")["spec"]["mpiReplicaSpecs"]["Launcher"]
    env = {e["name"]: e["value"] for e in launcher["template"]["spec"]["containers"][0]["env"]}
    assert env[ENV_URL].startswith("https://train-controller.trainforge-system.svc:10443/apis/kubeflow.org/v1/")
    assert env[ENV_URL].endswith("/mpijobs/" + launcher_job_name(out["train-controller"]) + "/status")


def launcher_job_name(objects: list[dict]) -> str:
    return next(o for o in objects if o["kind"] == "MPIJob")["metadata"]["name"]


def test_an_environment_lowering_to_trainer_v2_may_not_name_a_controller(tmp_path):
    result = compile_with(tmp_path, job_doc("pytorch", name="v2"), environments={
        "v2": {"target": "trainer-v2", "controller": "train-controller"}})

    assert [e.split("/trainforge.yaml:")[1] for e in errors(result)] == [
        "8:4: error: environments.v2.controller: controller: train-controller says who makes the"
        " pods of kubeflow-v1 jobs; environment 'v2' lowers to target trainer-v2, whose pods Kubeflow Trainer makes;"
        " remove controller from environment 'v2', or set its target: kubeflow-v1"]


def test_a_default_controller_does_not_apply_to_trainer_v2_environments(tmp_path):
    result = compile_with(tmp_path, job_doc("pytorch", name="v2", nodes=2), defaults={"controller": "train-controller"},
                          environments={"v1": {}, "v2": {"target": "trainer-v2"}})

    assert result.ok, errors(result)
