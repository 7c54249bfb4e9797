"""`status --wait`: a script waits for its jobs (every one must reach the condition; one
that fails first, or the timeout, exits 1 saying which, and why its pods wait), saying how
far they are while it waits, and the clear one-line ends of a run that cannot read the
cluster or the specs."""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from status_kit import cli, compiled, project, spec, train_controller, write

from compiler.cli.live.waiting import EVERY
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
    *progress, last = outcome.stderr.splitlines()
    assert re.fullmatch(r"train-compile: every job reached Succeeded \(\d+s\)", last), last
    assert progress and all(re.match(r"train-compile: waiting for Succeeded \(\d+s\): [01]/2 there; ", line)
                            for line in progress), progress
    assert [(j["name"], j["state"]) for j in outcome.json["jobs"]] == [("one", "Succeeded"), ("two", "Succeeded")]


def test_wait_ends_with_exit_1_when_a_job_fails_first(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "fails.yaml", spec("fails", restart="Never", pod={stages.RUN_SECONDS: "1", stages.EXIT_CODE: "2"}))
    with train_controller(pod_world, pod_namespace):
        pod_world.kubectl("apply", "--server-side", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": compiled(jobs)}))
        outcome = cli(pod_world, "status", jobs, "--wait", "Succeeded", "--timeout", "3m")
    assert outcome.code == 1
    assert outcome.stderr.splitlines()[-1] == f"train-compile: {pod_namespace}/fails failed before reaching Succeeded"
    assert f"{pod_namespace}/fails  PyTorchJob  Failed for " in outcome.stdout
    assert "  - master-0: Failed, Error: exit code 2" in outcome.stdout.splitlines()


def test_wait_times_out_with_exit_1_naming_the_jobs_not_there(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "never.yaml", spec("never"))
    outcome = cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2s")
    assert outcome.code == 1
    assert outcome.stderr.splitlines() == [
        f"train-compile: waiting for Running (0s): 0/1 there; {pod_namespace}/never absent",
        f"train-compile: timed out after 2s waiting for Running: {pod_namespace}/never is absent"]


def test_a_wait_says_why_pods_wait_and_its_timeout_names_the_reason_and_the_field(pod_world, pod_namespace, tmp_path):
    """The test world's kubelet fails to pull an image its pattern matches (`typo`): a real cause."""
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "typo.yaml", spec("typo", image="ghcr.io/acme/train:typo"))
    with train_controller(pod_world, pod_namespace):
        pod_world.kubectl("apply", "--server-side", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": compiled(jobs)}))
        outcome = cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", f"{EVERY + 3:g}s")
    assert outcome.code == 1
    *progress, last = outcome.stderr.splitlines()
    assert progress[0] == f"train-compile: waiting for Running (0s): 0/1 there; {pod_namespace}/typo absent" or \
        progress[0].startswith(f"train-compile: waiting for Running (0s): 0/1 there; {pod_namespace}/typo Created")
    # after EVERY seconds of the same, a line with why the pods wait
    assert re.search(r"; pods: typo-master-0 (ErrImagePull|ImagePullBackOff)$", progress[-1]), progress
    assert re.fullmatch(rf"train-compile: timed out after {EVERY + 3:g}s waiting for Running: {pod_namespace}/typo is "
                        r"Created: typo-master-0 (ErrImagePull|ImagePullBackOff); image ghcr.io/acme/train:typo "
                        r"cannot be pulled: spec.image, jobs/typo.yaml:\d+", last), last


@pytest.mark.parametrize(("server", "why"), [
    ("https://127.0.0.1:9", "connection refused"),
    ("https://no-such-host.invalid:6443", "no such host"),
], ids=["a port nothing listens on", "a host name no resolver knows"])
@pytest.mark.parametrize("command", ["status", "logs"])
def test_an_unreachable_cluster_is_one_line_and_exit_1(tmp_path, server, why, command):
    config = tmp_path / "kubeconfig"
    config.write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
        users: [{{name: u, user: {{token: t}}}}]
        contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
        current-context: x
        """))
    jobs = project(tmp_path / "repo", "ml")
    write(jobs, "a.yaml", spec("a"))
    from compiler_builders import run_cli

    run = run_cli(command, jobs if command == "status" else jobs / "a.yaml", "--kubeconfig", config)
    assert run.exit_code == 1 and run.stdout == ""
    assert run.stderr == f"train-compile: cannot reach {server}: {why}; is the cluster up? check --kubeconfig/--context\n"


def test_bad_specs_are_diagnostics_and_exit_1_before_any_cluster_read(tmp_path):
    jobs = project(tmp_path, "ml")
    (jobs / "bad.yaml").write_text("apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata: {name: bad}\n"
                                   "spec: {framework: pytorch, image: x, nodez: 2}\n")
    from compiler_builders import run_cli

    run = run_cli("status", jobs, "--kubeconfig", tmp_path / "no-such-kubeconfig")
    assert run.exit_code == 1
    [error] = run.errors()
    # the compiler's own diagnostic, whole (its list of allowed fields is the review's: tests/compiler/review)
    assert "bad.yaml:4:38: error: spec.nodez: unknown field 'nodez'; did you mean 'nodes'? allowed here: args," in error
    assert run.stderr.splitlines()[-1] == "train-compile: 1 error(s) in the specs; the cluster was not read"
