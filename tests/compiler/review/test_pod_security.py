"""Pod security levels as the compiler reports and applies them (the admission oracle,
test_pod_security_admission.py, decides whether they are right; this pins the words, the
positions and what policy.podSecurityDefaults writes)."""

from __future__ import annotations

import pytest

from compiler import podsecurity
from compiler_builders import compile_docs, job_doc, job_text, project_doc, run_cli

RESTRICTED = "apiVersion: trainforge.dev/v1alpha1\nkind: Project\npolicy: {podSecurity: restricted}\n"


def validate(tmp_path, monkeypatch, spec: str, *, project: str = RESTRICTED, framework: str = "pytorch"):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trainforge.yaml").write_text(project, encoding="utf-8")
    (tmp_path / "job.yaml").write_text(job_text(spec, framework=framework), encoding="utf-8")
    return run_cli("validate", ".")


def test_restricted_names_each_missing_setting_where_it_belongs(tmp_path, monkeypatch):
    run = validate(tmp_path, monkeypatch, "podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
                                          "        securityContext: {runAsUser: 1000}\n")

    defaults = "or set policy.podSecurityDefaults: true to have the compiler write it"
    assert run.errors() == [
        "job.yaml:9:5: error: spec.podTemplate.spec.securityContext.runAsNonRoot: pod security level 'restricted'"
        " forbids pods that may run as root (Running as Non-root); set podTemplate.spec.securityContext.runAsNonRoot:"
        " true, with an image (or runAsUser) that is not root, or ask for policy.podSecurity: baseline in"
        " trainforge.yaml",
        "job.yaml:9:5: error: spec.podTemplate.spec.securityContext.seccompProfile: pod security level 'restricted'"
        " forbids pods without a seccomp profile (Seccomp); set podTemplate.spec.securityContext.seccompProfile:"
        f" {{type: RuntimeDefault}}, {defaults}",
        "job.yaml:12:11: error: spec.podTemplate.spec.containers[0].securityContext.allowPrivilegeEscalation: pod"
        " security level 'restricted' forbids leaving allowPrivilegeEscalation unset in container 'pytorch'"
        f" (Privilege Escalation); set securityContext.allowPrivilegeEscalation: false, {defaults}",
        "job.yaml:12:11: error: spec.podTemplate.spec.containers[0].securityContext.capabilities.drop: pod security"
        " level 'restricted' forbids keeping the default capabilities (no drop: [ALL]) in container 'pytorch'"
        f" (Capabilities); set securityContext.capabilities.drop: [ALL], {defaults}",
    ]


def test_a_misspelled_setting_is_one_error_the_misspelling_not_also_the_setting_restricted_misses(
        tmp_path, monkeypatch):
    project = RESTRICTED.replace("{podSecurity: restricted}", "{podSecurity: restricted, podSecurityDefaults: true}")
    run = validate(tmp_path, monkeypatch, "podTemplate:\n  spec:\n    securityContext:\n      runAsNonroot: true\n"
                                          "    containers:\n      - nmae: sidecar\n        image: busybox\n",
                   project=project)

    assert run.errors() == [  # not "forbids pods that may run as root" at securityContext, nor "name is required"
        "job.yaml:11:9: error: spec.podTemplate.spec.securityContext.runAsNonroot: unknown field 'runAsNonroot'; did"
        " you mean 'runAsNonRoot'? see `kubectl explain pod.spec.securityContext` for the fields",
        "job.yaml:13:11: error: spec.podTemplate.spec.containers[0].nmae: unknown field 'nmae'; did you mean 'name'?"
        " see `kubectl explain pod.spec.containers` for the fields",
    ]


def test_with_the_defaults_only_run_as_non_root_is_left_to_the_user(tmp_path, monkeypatch):
    project = RESTRICTED.replace("{podSecurity: restricted}", "{podSecurity: restricted, podSecurityDefaults: true}")
    assert [e.split(": error: ")[1].split(":")[0] for e in validate(tmp_path, monkeypatch, "", project=project).errors()] \
        == ["spec.podTemplate.spec.securityContext.runAsNonRoot"]
    ok = "podTemplate: {spec: {securityContext: {runAsNonRoot: true}}}\n"
    assert validate(tmp_path, monkeypatch, ok, project=project).exit_code == 0


@pytest.mark.parametrize(("framework", "spec", "expected"), [
    pytest.param("pytorch", "nodes: 2\n",
                 "job.yaml:8:10: error: spec.nodes: pod security level 'restricted' refuses the Worker pods: the"
                 " Training Operator adds init container 'init-pytorch' without a securityContext (Capabilities,"
                 " Privilege Escalation); set controller: train-controller in trainforge.yaml (the init containers"
                 " it adds meet restricted), or run it elastic (Worker pods only), on one node, or in an environment"
                 " at baseline", id="pytorch workers beside a master get the operator's init-pytorch"),
    pytest.param("mpi", "",
                 "job.yaml:6:3: error: spec.framework: pod security level 'restricted' refuses the Launcher pods: the"
                 " Training Operator adds init container 'kubectl-delivery' without a securityContext (Capabilities,"
                 " Privilege Escalation); set controller: train-controller in trainforge.yaml (the init containers"
                 " it adds meet restricted), or run MPI jobs in an environment whose policy.podSecurity is baseline",
                 id="the mpi launcher gets the operator's kubectl-delivery"),
])
def test_restricted_refuses_what_the_operator_adds_even_to_a_ready_template(
        tmp_path, monkeypatch, framework, spec, expected):
    project = RESTRICTED.replace("{podSecurity: restricted}", "{podSecurity: restricted, podSecurityDefaults: true}")
    ready = "podTemplate: {spec: {securityContext: {runAsNonRoot: true}}}\n"

    run = validate(tmp_path, monkeypatch, spec + ready, project=project, framework=framework)

    assert run.errors() == [expected]


def test_the_defaults_write_three_settings_and_keep_explicit_values(tmp_path):
    project = project_doc(policy={"podSecurity": "restricted", "podSecurityDefaults": True})
    pod = {"spec": {"securityContext": {"runAsNonRoot": True}, "initContainers": [
        {"name": "warm", "image": "busybox", "securityContext": {"capabilities": {"drop": ["ALL", "NET_RAW"]}}}]}}
    result = compile_docs(tmp_path, job_doc(podTemplate=pod), project=project)

    assert result.ok, [d.text() for d in result.diagnostics]
    (bundle,) = result.bundles["default"]
    spec = bundle.job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert spec["securityContext"] == {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["containers"][0]["securityContext"] == {"allowPrivilegeEscalation": False,
                                                        "capabilities": {"drop": ["ALL"]}}
    assert spec["initContainers"][0]["securityContext"] == {"allowPrivilegeEscalation": False,
                                                            "capabilities": {"drop": ["ALL", "NET_RAW"]}}


def test_the_defaults_leave_privileged_containers_without_allow_privilege_escalation_false():
    """The API server refuses allowPrivilegeEscalation: false beside privileged or CAP_SYS_ADMIN."""
    template = {"spec": {"containers": [{"name": "a", "securityContext": {"privileged": True}},
                                        {"name": "b", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}}

    hardened = podsecurity.harden(template)

    assert [c["securityContext"].get("allowPrivilegeEscalation") for c in hardened["spec"]["containers"]] == [None, None]


def test_privileged_checks_nothing_and_each_level_adds_to_the_one_below():
    template = {"spec": {"hostIPC": True, "containers": [{"name": "a"}]}}

    found = {level: {f.control for f in podsecurity.findings(template, level)} for level in podsecurity.LEVELS}

    assert found["privileged"] == set()
    assert found["baseline"] == {"Host Namespaces"}
    assert found["baseline"] < found["restricted"]
