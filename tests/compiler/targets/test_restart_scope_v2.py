"""`policy.restartScope: job` under trainer-v2: a TrainingRuntime of the job's own (issue 38 item 1).

A v2.3 TrainJob cannot set a JobSet failurePolicy (runtimePatches reach pod fields only), so the
compiler writes a copy of the job's stock runtime with `failurePolicy.maxRestarts` =
backoffLimit, BlockingRecreate, Jobs that fail on their first pod failure, and (ExitCode) the
v1 split of exit codes; the TrainJob names it. What v2.3 cannot express is an error at its
line, pinned here. That the real Trainer v2.3.0 + JobSet v0.12.0 restart such a job as a whole
is tests/e2e/test_trainer_v2_restarts_e2e.py; that the API server takes the objects,
test_trainer_v2_server.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from compiler_builders import compile_docs, job_doc, job_text, project_doc, run_cli, shared_dir

from compiler.emit import tree
from compiler.targets.trainer_v2_restarts import PERMANENT_EXIT_CODES
from foundation.frameworks.stock_runtimes import STOCK_RUNTIMES
from schemas.marks import RESTART_SCOPE

RELEASE = shared_dir() / "reference" / "crds" / "trainer-v2.3.0" / "runtimes"
PROJECT = project_doc(environments={"dev": {"controller": "train-controller"}, "prod": {"target": "trainer-v2"}})
JOB_SCOPE = {"restartScope": "job", "backoffLimit": 3}


def bundle(folder: Path, doc: dict[str, Any], env: str = "prod"):
    result = compile_docs(folder, doc, project=PROJECT)
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    assert not errors, "\n".join(errors)
    (found,) = result.bundles[env]
    return found


def runtime_of(found) -> dict[str, Any]:
    (component,) = [c for c in found.components if c.name == "runtime"]
    (runtime,) = component.resources
    return runtime


def errors_of(tmp_path: Path, spec: str, framework: str = "pytorch") -> list[str]:
    (tmp_path / "trainforge.yaml").write_text(yaml.safe_dump(PROJECT))
    (tmp_path / "job.yaml").write_text(job_text(spec, framework=framework))
    return [line.split("job.yaml:", 1)[1] for line in run_cli("validate", tmp_path).errors()]


def test_the_stock_runtime_copies_are_the_v2_3_0_release_files():
    release = {(d := yaml.safe_load(p.read_text()))["metadata"]["name"]: d["spec"] for p in RELEASE.glob("*.yaml")}

    assert {name: stock.spec() for name, stock in STOCK_RUNTIMES.items()} == release


@pytest.mark.parametrize(("framework", "stock", "jobs"), [
    ("pytorch", "torch-distributed", ["node"]), ("mpi", "deepspeed-distributed", ["node", "launcher"]),
    ("jax", "jax-distributed", ["node"]), ("xgboost", "xgboost-distributed", ["node"])])
def test_job_scope_names_a_copy_of_the_stock_runtime_that_restarts_as_a_whole(tmp_path, framework, stock, jobs):
    doc = job_doc(framework, name="llm", namespace="ml", labels={"team": "nlp"}, nodes=2, policy=JOB_SCOPE)

    found = bundle(tmp_path, doc)
    job, runtime = found.rendered_job(), runtime_of(found)

    assert job["spec"]["runtimeRef"] == {"name": "llm", "kind": "TrainingRuntime"}
    assert "annotations" not in job["metadata"]  # train-controller's mark is for kubeflow-v1 jobs only
    assert runtime["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and runtime["kind"] == "TrainingRuntime"
    assert runtime["metadata"] == {"name": "llm", "namespace": "ml", "labels": {"team": "nlp"},
                                   "annotations": {"argocd.argoproj.io/sync-wave": "-1"}}
    jobset = runtime["spec"]["template"]["spec"]
    assert jobset["failurePolicy"] == {"maxRestarts": 3, "restartStrategy": "BlockingRecreate"}
    assert [r["name"] for r in jobset["replicatedJobs"]] == jobs
    for replicated in jobset["replicatedJobs"]:
        assert replicated["template"]["spec"]["backoffLimit"] == 0
        assert replicated["template"]["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    # the rest is the stock runtime as released
    for replicated in jobset["replicatedJobs"]:
        replicated["template"]["spec"].pop("backoffLimit")
        replicated["template"]["spec"]["template"]["spec"].pop("restartPolicy")
    jobset.pop("failurePolicy")
    assert runtime["spec"] == STOCK_RUNTIMES[stock].spec()


def test_restart_on_failure_is_what_job_scope_means_and_changes_nothing(tmp_path):
    plain = runtime_of(bundle(tmp_path, job_doc(policy=JOB_SCOPE)))
    on_failure = runtime_of(bundle(tmp_path, job_doc(policy={**JOB_SCOPE, "restart": "OnFailure"})))

    assert on_failure == plain


def test_exit_code_fails_the_job_on_1_to_127_and_restarts_it_on_128_and_above(tmp_path):
    runtime = runtime_of(bundle(tmp_path, job_doc("mpi", nodes=2, policy={**JOB_SCOPE, "restart": "ExitCode"})))

    jobset = runtime["spec"]["template"]["spec"]
    assert jobset["failurePolicy"]["rules"] == [
        {"name": "permanentExitCode", "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}]
    assert PERMANENT_EXIT_CODES == list(range(1, 128))
    for replicated in jobset["replicatedJobs"]:
        assert replicated["template"]["spec"]["podFailurePolicy"] == {"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": PERMANENT_EXIT_CODES}}]}


def test_a_stock_runtime_named_in_the_spec_is_the_one_copied(tmp_path):
    runtime = runtime_of(bundle(tmp_path, job_doc("mpi", runtime="mlx-distributed", policy=JOB_SCOPE)))

    assert runtime["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"][
        "containers"][0]["image"] == "ghcr.io/kubeflow/trainer/mlx-runtime"


def test_one_file_restarts_as_a_whole_on_both_targets(tmp_path):
    doc = job_doc(nodes=2, policy=JOB_SCOPE)

    dev, prod = bundle(tmp_path, doc, "dev"), bundle(tmp_path, doc, "prod")

    assert dev.rendered_job()["metadata"]["annotations"] == {RESTART_SCOPE: "job"}
    assert dev.rendered_job()["spec"]["runPolicy"] == {"backoffLimit": 3} and not dev.components
    assert runtime_of(prod)["spec"]["template"]["spec"]["failurePolicy"]["maxRestarts"] == 3


def test_the_runtime_is_a_component_of_the_job_folder(tmp_path):
    files = tree.files(compile_docs(tmp_path, job_doc(name="llm", namespace="ml", policy=JOB_SCOPE), project=PROJECT))

    assert yaml.safe_load(files["prod/ml/llm/kustomization.yaml"])["components"] == ["runtime"]
    assert yaml.safe_load(files["prod/ml/llm/runtime/kustomization.yaml"])["resources"] == ["trainingruntime-llm.yaml"]
    assert yaml.safe_load(files["prod/ml/llm/runtime/trainingruntime-llm.yaml"])["kind"] == "TrainingRuntime"


@pytest.mark.parametrize("scope", [None, "pod"], ids=["an unset scope", "restartScope pod"])
def test_pod_scope_or_none_writes_no_runtime(tmp_path, scope):
    policy = {"activeDeadline": "1h", **({"restartScope": scope} if scope else {})}

    found = bundle(tmp_path, job_doc(policy=policy))

    assert found.rendered_job()["spec"]["runtimeRef"] == {"name": "torch-distributed", "kind": "ClusterTrainingRuntime"}
    assert not found.components


FIX_RESTART = ("remove restart (any failure restarts the whole job), or write OnFailure, or ExitCode (exit codes 1-127"
               " fail the job, 128-255 restart it)")


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param("policy: {restartScope: job}\n", [
        "8:12: error: spec.policy.restartScope: Trainer v2 counts whole-job restarts against the JobSet's"
        " failurePolicy.maxRestarts, which needs a limit; add backoffLimit: N, the restarts before the job fails"],
        id="job scope without a backoffLimit has no limit to lower"),
    pytest.param("runtime: {name: torch-team, kind: TrainingRuntime}\npolicy: {restartScope: job, backoffLimit: 2}\n", [
        "9:12: error: spec.policy.restartScope: whole-job restarts are the JobSet failurePolicy of the runtime, and the"
        " compiler copies only a stock runtime; TrainingRuntime torch-team is not one; give torch-team failurePolicy"
        " {maxRestarts: N, restartStrategy: BlockingRecreate} and its Jobs backoffLimit: 0, and remove restartScope"
        " and backoffLimit; or remove runtime (the job then runs on a copy of its framework's stock runtime)"],
        id="job scope on a runtime the compiler cannot see is the runtime's business"),
    pytest.param("policy: {restartScope: job, backoffLimit: 2, restart: Never}\n", [
        f"8:48: error: spec.policy.restart: restart: Never retries no exit, so the job would never restart; {FIX_RESTART}"],
        id="restart never beside job scope retries nothing"),
    pytest.param("policy: {restartScope: job, backoffLimit: 2, restart: Always}\n", [
        "8:48: error: spec.policy.restart: restart: Always restarts a pod that exited 0, and a node of a Trainer v2 job"
        f" is a Job's pod, which cannot; {FIX_RESTART}"],
        id="restart always beside job scope cannot be a Job's"),
    pytest.param("policy: {restartScope: pod, backoffLimit: 2}\n", [
        "8:31: error: spec.policy.backoffLimit: a Trainer v2.3 TrainJob cannot limit the restarts of a pod:"
        " runtimePatches set neither the pods' restartPolicy nor the Jobs' backoffLimit; remove it, or unset it for"
        " this environment with environments.prod.policy.backoffLimit: null, or set restartScope: job with a"
        " backoffLimit (the whole job restarts, up to backoffLimit times)"],
        id="a backoffLimit with pod scope has no place in a v2.3 TrainJob"),
])
def test_what_v2_3_cannot_restart_is_a_positioned_error(tmp_path, spec, expected):
    assert errors_of(tmp_path, spec) == expected


def test_the_errors_point_into_the_environment_override(tmp_path):
    spec = "environments:\n  prod: {policy: {restartScope: job}}\n"

    assert [e.split(": error: ")[0] + ":" + e.split(": ")[2] for e in errors_of(tmp_path, spec)] == [
        "9:21:spec.environments.prod.policy.restartScope"]
