"""`status --wait`: a script waits for its jobs (every one must reach the condition; one
that fails first, or the timeout, exits 1 saying which), and the clear one-line ends of
a run that cannot read the cluster or the specs."""

from __future__ import annotations

import json
import textwrap

from status_kit import cli, compiled, project, spec, train_controller, write

from testworld import stages


def test_wait_for_succeeded_exits_0_once_every_job_succeeded(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "one.yaml", spec("one", pod={stages.RUN_SECONDS: "1"}))
    write(jobs, "two.yaml", spec("two", nodes=2, pod={stages.RUN_SECONDS: "2"}))
    with train_controller(pod_world, pod_namespace):
        pod_world.kubectl("apply", "--server-side", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": compiled(jobs)}))
        outcome = cli(pod_world, "status", jobs, "--wait", "Succeeded", "--timeout", "3m", "--format", "json")
    assert outcome.code == 0, outcome.stderr
    assert outcome.stderr.startswith("train-compile: every job reached Succeeded (")
    assert [(j["name"], j["state"]) for j in outcome.json["jobs"]] == [("one", "Succeeded"), ("two", "Succeeded")]


def test_wait_ends_with_exit_1_when_a_job_fails_first(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "fails.yaml", spec("fails", restart="Never", pod={stages.RUN_SECONDS: "1", stages.EXIT_CODE: "2"}))
    with train_controller(pod_world, pod_namespace):
        pod_world.kubectl("apply", "--server-side", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": compiled(jobs)}))
        outcome = cli(pod_world, "status", jobs, "--wait", "Succeeded", "--timeout", "3m")
    assert outcome.code == 1
    assert outcome.stderr == f"train-compile: {pod_namespace}/fails failed before reaching Succeeded\n"
    assert f"{pod_namespace}/fails  PyTorchJob  Failed for " in outcome.stdout
    assert "  - fails-master-0: Failed, Error: exit code 2" in outcome.stdout.splitlines()


def test_wait_times_out_with_exit_1_naming_the_jobs_not_there(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "never.yaml", spec("never"))
    outcome = cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2s")
    assert outcome.code == 1
    assert outcome.stderr == f"train-compile: timed out after 2s waiting for Running: {pod_namespace}/never is absent\n"


def test_an_unreachable_cluster_is_one_line_and_exit_1(tmp_path):
    config = tmp_path / "kubeconfig"
    config.write_text(textwrap.dedent("""\
        apiVersion: v1
        kind: Config
        clusters: [{name: c, cluster: {server: "https://127.0.0.1:9"}}]
        users: [{name: u, user: {token: t}}]
        contexts: [{name: x, context: {cluster: c, user: u}}]
        current-context: x
        """))
    jobs = project(tmp_path / "repo", "ml")
    write(jobs, "a.yaml", spec("a"))
    from compiler_builders import run_cli

    run = run_cli("status", jobs, "--kubeconfig", config)
    assert run.exit_code == 1 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith("train-compile: cannot reach the cluster at https://127.0.0.1:9: ")
    assert line.endswith("; is it running and is the kubeconfig's server right?")


def test_bad_specs_are_diagnostics_and_exit_1_before_any_cluster_read(tmp_path):
    jobs = project(tmp_path, "ml")
    (jobs / "bad.yaml").write_text("apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata: {name: bad}\n"
                                   "spec: {framework: pytorch, image: x, nodez: 2}\n")
    from compiler_builders import run_cli

    run = run_cli("status", jobs, "--kubeconfig", tmp_path / "no-such-kubeconfig")
    assert run.exit_code == 1
    [error] = run.errors()
    assert error.endswith("bad.yaml:4:38: error: spec.nodez: unknown field 'nodez'; did you mean 'nodes'? allowed "
                          "here: args, command, elastic, env, environments, framework, image, initializer, nodes, "
                          "podTemplate, policy, processesPerNode, resources, roles, runtime, scheduling, serviceAccount, "
                          "storage, workingDir")
    assert run.stderr.splitlines()[-1] == "train-compile: 1 error(s) in the specs; the cluster was not read"
