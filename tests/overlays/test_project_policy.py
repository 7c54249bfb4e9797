"""Project policy through the CLI: exit 1 and the exact `file:line:col` of the offence.

Each case writes a `trainforge.yaml` and one job file into a fresh folder and runs
`train-compile validate` on it from inside that folder, so paths print as `job.yaml`.
The expected lines are pinned whole (position, field path, what, fix).
"""

from __future__ import annotations

import textwrap

import pytest
from click.testing import CliRunner

from compiler.cli.main import main

PROJECT = """\
apiVersion: trainforge.dev/v1alpha1
kind: Project
environments:
  dev:
    policy: {maxGpusPerJob: 4, allowedNamespaces: [ml]}
  prod: {}
policy:
  maxGpusPerJob: 16
  allowedNamespaces: [ml]
  requiredLabels: [team]
"""
TO_PRIVILEGED = "or ask for policy.podSecurity: privileged in trainforge.yaml"
GPU_FIX = "lower nodes or resources.gpu (and GPUs in podTemplate), or ask for a higher policy.maxGpusPerJob"


def job(spec: str, metadata: str = "  namespace: ml\n  labels: {team: a}\n") -> str:
    return (
        "apiVersion: trainforge.dev/v1alpha1\nkind: TrainJob\nmetadata:\n  name: big\n"
        + metadata
        + "spec:\n  framework: pytorch\n  image: busybox\n"
        + textwrap.indent(textwrap.dedent(spec), "  ")
    )


def validate(tmp_path, monkeypatch, text: str, *args: str, project: str = PROJECT):
    (tmp_path / "trainforge.yaml").write_text(project)
    (tmp_path / "job.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    return CliRunner().invoke(main, ["validate", ".", *args])


CASES = [
    pytest.param(
        job("nodes: 4\nresources: {gpu: 8}\n"),
        ["job.yaml:11:20: error: spec.resources.gpu: the job uses 32 GPUs over all pods; the policy allows"
         f" at most 16; {GPU_FIX}",
         "job.yaml:11:20: error: spec.resources.gpu: the job uses 32 GPUs over all pods; the policy in"
         f" environment 'dev' allows at most 4; {GPU_FIX}"],
        id="too many GPUs is reported per policy at the gpu value",
    ),
    pytest.param(
        job("nodes: 2\nresources: {gpu: 2}\nenvironments:\n  dev:\n    resources:\n      gpu: 4\n"),
        ["job.yaml:15:14: error: spec.environments.dev.resources.gpu: the job uses 8 GPUs over all pods;"
         f" the policy in environment 'dev' allows at most 4; {GPU_FIX}"],
        id="an environment override that breaks the limit is reported at the override",
    ),
    pytest.param(
        job("nodes: 2\nelastic: {minNodes: 2, maxNodes: 3}\nresources: {gpu: 6}\n"),
        ["job.yaml:12:20: error: spec.resources.gpu: the job uses 18 GPUs over all pods; the policy allows"
         f" at most 16; {GPU_FIX}",
         "job.yaml:12:20: error: spec.resources.gpu: the job uses 18 GPUs over all pods; the policy in"
         f" environment 'dev' allows at most 4; {GPU_FIX}"],
        id="an elastic job counts at maxNodes",
    ),
    pytest.param(
        job("nodes: 4\nresources: {gpu: 1}\npodTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
            "        resources: {limits: {nvidia.com/gpu: 8}, requests: {nvidia.com/gpu: 8}}\n      - name: sidecar\n"
            "        image: busybox\n        resources: {limits: {amd.com/gpu: 1}}\n"),
        ["job.yaml:12:3: error: spec.podTemplate: the job uses 36 GPUs over all pods; the policy allows"
         f" at most 16; {GPU_FIX}",
         "job.yaml:12:3: error: spec.podTemplate: the job uses 36 GPUs over all pods; the policy in"
         f" environment 'dev' allows at most 4; {GPU_FIX}"],
        id="GPUs a podTemplate adds count, and the podTemplate is named when it breaks the limit",
    ),
    pytest.param(
        job("nodes: 1\n", metadata="  namespace: research\n  labels: {team: a}\n"),
        ["job.yaml:5:14: error: metadata.namespace: namespace 'research' is not allowed by the policy;"
         " set metadata.namespace to one of ml",
         "job.yaml:5:14: error: metadata.namespace: namespace 'research' is not allowed by the policy in"
         " environment 'dev'; set metadata.namespace to one of ml"],
        id="a namespace outside the allowed list is reported at its value",
    ),
    pytest.param(
        job("nodes: 1\n", metadata="  namespace: ml\n  labels: {owner: b}\n"),
        ["job.yaml:6:3: error: metadata.labels: label 'team' is required by the policy;"
         " add team: <value> under metadata.labels"],
        id="a missing required label is reported at metadata.labels",
    ),
    pytest.param(
        job("nodes: 1\n", metadata="  namespace: ml\n"),
        ["job.yaml:3:1: error: metadata: label 'team' is required by the policy;"
         " add team: <value> under metadata.labels"],
        id="without any labels the required label is reported at metadata",
    ),
    pytest.param(
        job("podTemplate:\n  spec:\n    hostNetwork: true\n    hostPID: true\n"),
        ["job.yaml:12:7: error: spec.podTemplate.spec.hostNetwork: pod security level 'baseline' forbids"
         f" hostNetwork: true (Host Namespaces); remove hostNetwork, {TO_PRIVILEGED}",
         "job.yaml:13:7: error: spec.podTemplate.spec.hostPID: pod security level 'baseline' forbids"
         f" hostPID: true (Host Namespaces); remove hostPID, {TO_PRIVILEGED}"],
        id="host network and host PID are forbidden",
    ),
    pytest.param(
        job("podTemplate:\n  spec:\n    volumes:\n      - name: sock\n        hostPath: {path: /run}\n"),
        ["job.yaml:14:11: error: spec.podTemplate.spec.volumes[0].hostPath: pod security level 'baseline'"
         " forbids a hostPath volume (HostPath Volumes); use a PersistentVolumeClaim (spec.storage) or an"
         f" emptyDir, {TO_PRIVILEGED}"],
        id="a hostPath volume is forbidden",
    ),
    pytest.param(
        job("podTemplate:\n  spec:\n    initContainers:\n      - name: tune\n        image: busybox\n"
            "        securityContext: {privileged: true}\n"),
        ["job.yaml:15:29: error: spec.podTemplate.spec.initContainers[0].securityContext.privileged:"
         " pod security level 'baseline' forbids privileged: true in container 'tune' (Privileged Containers);"
         f" remove securityContext.privileged, {TO_PRIVILEGED}"],
        id="a privileged init container is forbidden",
    ),
    pytest.param(
        job("roles: {evaluator: {resources: {gpu: 1, gpuType: h100}}}\n", metadata="  namespace: ml\n"
            "  labels: {team: a}\n").replace("pytorch", "tensorflow"),
        ["job.yaml:10:52: error: spec.roles.evaluator.resources.gpuType: gpuType 'h100' needs a gpuTypes"
         " table in environment 'dev'; declare gpuTypes for this environment in trainforge.yaml, or remove"
         " gpuType",
         "job.yaml:10:52: error: spec.roles.evaluator.resources.gpuType: gpuType 'h100' needs a gpuTypes"
         " table in environment 'prod'; declare gpuTypes for this environment in trainforge.yaml, or remove"
         " gpuType"],
        id="a role's gpuType is checked against the environment like the job's",
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_violation_exits_1_at_the_exact_position(tmp_path, monkeypatch, text, expected):
    result = validate(tmp_path, monkeypatch, text)
    assert result.exit_code == 1
    assert result.stderr.splitlines()[:-1] == expected
    assert result.stderr.splitlines()[-1] == f"train-compile: {len(expected)} error(s); nothing was written"


def test_env_option_checks_one_environment(tmp_path, monkeypatch):
    result = validate(tmp_path, monkeypatch, job("nodes: 1\nresources: {gpu: 8}\n"), "--env", "prod")
    assert result.exit_code == 0, result.stderr
    result = validate(tmp_path, monkeypatch, job("nodes: 1\nresources: {gpu: 8}\n"), "--env", "dev")
    assert result.exit_code == 1
    assert "the policy in environment 'dev' allows at most 4" in result.stderr


def test_the_deprecated_allow_privileged_still_means_privileged_with_a_warning(tmp_path, monkeypatch):
    project = PROJECT.replace("  requiredLabels: [team]\n", "  requiredLabels: [team]\n  allowPrivileged: true\n")
    text = job("podTemplate:\n  spec:\n    hostNetwork: true\n")
    result = validate(tmp_path, monkeypatch, text, "--env", "prod", project=project)
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == (
        "trainforge.yaml:11:3: warning: policy.allowPrivileged: allowPrivileged is deprecated; policy.podSecurity"
        " sets the Pod Security Standards level; write podSecurity: privileged instead"
    )
    # dev has a policy of its own, which does not set it (the old replace semantics)
    assert validate(tmp_path, monkeypatch, text, "--env", "dev", project=project).exit_code == 1


def test_allow_privileged_beside_another_level_is_a_contradiction(tmp_path, monkeypatch):
    project = PROJECT + "  podSecurity: restricted\n  allowPrivileged: true\n"
    result = validate(tmp_path, monkeypatch, job("nodes: 1\n"), project=project)
    assert result.exit_code == 1
    assert (
        "trainforge.yaml:12:3: error: policy.allowPrivileged: allowPrivileged: true contradicts podSecurity:"
        " restricted; remove allowPrivileged (deprecated); podSecurity alone sets the level"
    ) in result.stderr.splitlines()


def test_an_environment_policy_inherits_the_project_level_unless_it_sets_one(tmp_path, monkeypatch):
    project = PROJECT.replace("  prod: {}\n", "  prod: {policy: {podSecurity: privileged}}\n") \
        + "  podSecurity: restricted\n"
    text = job("podTemplate:\n  spec:\n    hostIPC: true\n")
    result = validate(tmp_path, monkeypatch, text, project=project)
    lines = result.stderr.splitlines()
    # dev's own policy (GPU limit, namespaces) keeps restricted; prod's own level lets hostIPC through
    assert result.exit_code == 1
    assert any("spec.podTemplate.spec.hostIPC: pod security level 'restricted' forbids hostIPC: true" in line
               for line in lines)
    assert not any("environment 'prod'" in line for line in lines)
    assert validate(tmp_path, monkeypatch, text, "--env", "prod", project=project).exit_code == 0


def test_false_host_settings_are_fine(tmp_path, monkeypatch):
    text = job("podTemplate:\n  spec:\n    hostNetwork: false\n    containers:\n      - name: pytorch\n"
               "        securityContext: {privileged: false}\n")
    assert validate(tmp_path, monkeypatch, text).exit_code == 0


def test_positions_in_a_later_document_of_a_multi_document_file(tmp_path, monkeypatch):
    first = job("nodes: 1\n")
    second = job("nodes: 1\n", metadata="  namespace: other\n  labels: {team: a}\n").replace("name: big", "name: two")
    result = validate(tmp_path, monkeypatch, first + "---\n" + second, "--env", "prod")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        "job.yaml:16:14: error: metadata.namespace: namespace 'other' is not allowed by the policy;"
        " set metadata.namespace to one of ml"
    )


def test_build_refuses_to_write_on_a_violation(tmp_path, monkeypatch):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "trainforge.yaml").write_text(PROJECT)
    (tmp_path / "src" / "job.yaml").write_text(job("nodes: 4\nresources: {gpu: 8}\n"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["build", "src", "-o", "out"])
    assert result.exit_code == 1
    assert not (tmp_path / "out").exists()
