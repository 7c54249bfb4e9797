"""`policy.restartScope: pod | job` under kubeflow-v1 (issue 38 item 1).

`job` reaches train-controller as `schemas.marks.RESTART_SCOPE` on the compiled job's own
metadata (never on a pod template); `pod`, or nothing, writes nothing, so the output of every
other job stays byte for byte what it was. Under `controller: training-operator` it is an
error at the `restartScope` line that names train-controller (its exact text is pinned in
test_invalid_specs.py). The trainer-v2 lowering is test_restart_scope_v2.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from compiler_builders import compile_docs, job_doc, project_doc

from compiler.emit import tree
from schemas.marks import RESTART_SCOPE, RESTART_SCOPE_JOB

TRAIN_CONTROLLER = project_doc(defaults={"controller": "train-controller"},
                               environments={"dev": {}, "prod": {"controller": "training-operator"}})


def errors(result) -> list[str]:
    return [d.text() for d in result.diagnostics if d.severity == "error"]


def jobs(result, env: str) -> list[dict[str, Any]]:
    assert not errors(result), errors(result)
    return [bundle.rendered_job() for bundle in result.bundles[env]]


def pod_templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    specs = next(v for k, v in job["spec"].items() if k.endswith("ReplicaSpecs"))
    return [replica["template"] for replica in specs.values()]


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax", "mxnet"])
def test_job_scope_under_train_controller_marks_the_jobs_metadata_and_no_pod_template(tmp_path, framework):
    doc = job_doc(framework, nodes=2, policy={"restartScope": "job", "backoffLimit": 2, "restart": "OnFailure"})
    doc["metadata"]["annotations"] = {"acme.dev/owner": "ml"}

    (job,) = jobs(compile_docs(tmp_path, doc, project=project_doc(defaults={"controller": "train-controller"})),
                  "default")

    assert job["metadata"]["annotations"] == {"acme.dev/owner": "ml", RESTART_SCOPE: RESTART_SCOPE_JOB}
    assert job["spec"]["runPolicy"] == {"backoffLimit": 2}
    assert all(RESTART_SCOPE not in str(t.get("metadata")) for t in pod_templates(job))


@pytest.mark.parametrize("scope", [None, "pod"], ids=["an unset scope", "restartScope pod"])
def test_pod_scope_or_none_writes_what_the_job_wrote_before(tmp_path, scope):
    policy = {"restart": "OnFailure", "backoffLimit": 3}
    before = tree.files(compile_docs(tmp_path, job_doc(nodes=3, policy=policy), project=TRAIN_CONTROLLER))
    scoped = {**policy, **({"restartScope": scope} if scope else {})}
    after = tree.files(compile_docs(tmp_path, job_doc(nodes=3, policy=scoped), project=TRAIN_CONTROLLER))

    assert after == before
    assert RESTART_SCOPE not in "".join(after.values())


def test_an_environment_override_scopes_one_environment_only(tmp_path):
    doc = job_doc(nodes=2, environments={"dev": {"policy": {"restartScope": "job"}}})

    result = compile_docs(tmp_path, doc, project=TRAIN_CONTROLLER)

    (dev,), (prod,) = jobs(result, "dev"), jobs(result, "prod")
    assert dev["metadata"]["annotations"] == {RESTART_SCOPE: RESTART_SCOPE_JOB}
    assert "annotations" not in prod["metadata"]


def test_job_scope_in_an_environment_run_by_the_training_operator_is_refused_there(tmp_path):
    result = compile_docs(tmp_path, job_doc(nodes=2, policy={"restartScope": "job"}), project=TRAIN_CONTROLLER)

    (error,) = errors(result)
    assert "jobs.yaml:13:4: error: spec.policy.restartScope: the Training Operator (controller:" \
        " training-operator in environment 'prod') restarts only the failed pod" in error, error
    assert error.endswith("set controller: train-controller (defaults or environments.prod in trainforge.yaml),"
                          " which restarts the whole job, or remove restartScope"), error
