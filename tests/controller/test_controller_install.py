"""The install folder as a user applies it: `kubectl kustomize` renders it, the real API
server accepts every object (server-side dry run), and the gang-scheduling components add
exactly the flag the controller reads, with a value it maps to the intended scheduler, as the
upstream-order component adds --no-pods-first."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.jobs.gang import scheduler_for
from testworld.assets import kubectl_path

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "controller" / "install"
KUBECTL = str(kubectl_path())


def render(folder: Path) -> list[dict[str, Any]]:
    out = subprocess.run([KUBECTL, "kustomize", str(folder)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def overlay(tmp_path: Path, component: str | None, *more: str) -> Path:
    """A user's kustomization beside the repo: install as a resource, maybe a gang component
    and other components (folders of controller/install)."""
    body: dict[str, Any] = {"resources": [os.path.relpath(INSTALL, tmp_path)]}
    folders = ([INSTALL / "gang" / component] if component else []) + [INSTALL / m for m in more]
    if folders:
        body["components"] = [os.path.relpath(folder, tmp_path) for folder in folders]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(body))
    return tmp_path


def controller_args(docs: list[dict[str, Any]]) -> list[str]:
    deployment = next(d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "train-controller")
    return deployment["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize("component,volcano", [(None, None), ("volcano", True), ("scheduler-plugins", False)])
def test_gang_components_add_the_flag_the_controller_reads(tmp_path, component, volcano) -> None:
    base = controller_args(render(INSTALL))
    args = controller_args(render(overlay(tmp_path, component)))
    gang = [a for a in args if a.startswith("--gang-scheduler-name")]
    if component is None:
        assert args == base and gang == []
        return
    assert args[:-1] == base and len(gang) == 1  # appended, nothing else touched
    scheduler = scheduler_for(gang[0].split("=", 1)[1])
    assert scheduler is not None and scheduler.volcano is volcano


def test_the_upstream_order_component_adds_the_flag_and_combines_with_gang(tmp_path) -> None:
    from controller.__main__ import main

    base = controller_args(render(INSTALL))
    args = controller_args(render(overlay(tmp_path, "volcano", "upstream-order")))
    assert args[:-2] == base and args[-2:] == ["--gang-scheduler-name=volcano", "--no-pods-first"]
    params = main.make_context("train-controller", list(args)).params  # the flags parse as the CLI reads them
    assert params["pods_first"] is False and params["gang_scheduler_name"] == "volcano"
    assert main.make_context("train-controller", list(base)).params["pods_first"] is True  # the default


def test_the_api_server_accepts_the_whole_install(control_plane, tmp_path) -> None:
    control_plane.kubectl("create", "namespace", "trainforge-system", check=False)  # a dry run creates nothing
    docs = render(overlay(tmp_path, "volcano", "upstream-order"))
    assert {d["kind"] for d in docs} >= {"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
                                          "ClusterRoleBinding", "Role", "RoleBinding", "Deployment",
                                          "PodDisruptionBudget"}
    manifest = tmp_path / "install.yaml"
    manifest.write_text(yaml.safe_dump_all(docs))
    out = control_plane.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server",
                                "--field-manager=install-test", "-f", str(manifest))
    assert out.stdout.count("serverside-applied") == len(docs), out.stdout


ISSUE_20 = ('spec.runPolicy.managedBy: Unsupported value: "kueue.x-k8s.io/other-controller": supported values:'
            ' "kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator"')


def test_a_user_applies_the_install_and_its_policies_refuse_what_upstream_refuses(world_factory) -> None:
    """`kubectl apply --server-side -k controller/install` on an empty cluster (Kubernetes 1.32):
    everything is applied, the policies are active and the job of issue 20 is refused at create
    with upstream's message, while a valid job and a MultiKueue one are admitted."""
    world = world_factory([], upstream_crds=False)
    out = world.kubectl("apply", "--server-side", "-k", str(INSTALL))
    docs = render(INSTALL)
    assert out.stdout.count("serverside-applied") == len(docs), out.stdout
    policies = {d["metadata"]["name"] for d in docs if d["kind"] == "ValidatingAdmissionPolicy"}
    assert policies == {"trainforge-pytorchjob", "trainforge-pytorchjob-deprecations", "trainforge-tfjob",
                        "trainforge-xgboostjob", "trainforge-paddlejob", "trainforge-jaxjob"}
    world.kubectl("create", "namespace", "team-a")

    def pytorchjob(name: str, managed_by: str | None) -> str:
        run_policy = f"\n  runPolicy: {{managedBy: {managed_by}}}" if managed_by else ""
        return (f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {{name: {name}, namespace: team-a}}\n"
                f"spec:{run_policy}\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n"
                "      template: {spec: {containers: [{name: pytorch, image: example.com/train:1}]}}\n")

    deadline = time.monotonic() + 30  # a new policy is enforced a moment after it is written
    while True:
        bad = world.kubectl("create", "-f", "-", input=pytorchjob("issue-20", "kueue.x-k8s.io/other-controller"),
                            check=False)
        if bad.returncode != 0 or time.monotonic() > deadline:
            break
        world.kubectl("delete", "pytorchjob", "issue-20", "-n", "team-a")
        time.sleep(0.3)
    assert bad.returncode != 0, "the policy never refused the job"
    assert "ValidatingAdmissionPolicy 'trainforge-pytorchjob' with binding 'trainforge-pytorchjob' denied request: " \
        + ISSUE_20 in bad.stderr, bad.stderr
    assert "(Forbidden)" in bad.stderr
    for name, managed_by in (("fine", None), ("with-kueue", "kueue.x-k8s.io/multikueue")):
        world.kubectl("create", "-f", "-", input=pytorchjob(name, managed_by))


def test_the_no_admission_component_leaves_out_exactly_the_policies(tmp_path) -> None:
    """For clusters older than 1.30: the install without its admission policies, nothing else changed."""
    full = render(INSTALL)
    without = render(overlay(tmp_path, None, "no-admission"))
    policy_kinds = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}
    assert len([d for d in full if d["kind"] in policy_kinds]) == 12
    assert without == [d for d in full if d["kind"] not in policy_kinds]


@pytest.mark.parametrize("namespace", [None, "ml-platform"])
def test_the_lease_is_granted_only_where_the_controller_runs(tmp_path, namespace) -> None:
    """No ClusterRole rule names leases; the Role that does lives in the namespace the
    Deployment runs in (its POD_NAMESPACE, where the Lease is), bound to its ServiceAccount,
    also when a user's kustomization moves the install to another namespace."""
    folder = overlay(tmp_path, None)
    if namespace:
        body = yaml.safe_load((folder / "kustomization.yaml").read_text())
        (folder / "kustomization.yaml").write_text(yaml.safe_dump({**body, "namespace": namespace}))
    docs = render(folder)
    by_kind = lambda kind: [d for d in docs if d["kind"] == kind]  # noqa: E731
    assert not [r for d in by_kind("ClusterRole") for r in d["rules"] if "leases" in r["resources"]]
    (deployment,), (account,) = by_kind("Deployment"), by_kind("ServiceAccount")
    runs_in = deployment["metadata"]["namespace"]
    assert runs_in == (namespace or "trainforge-system")
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    leases = [d for d in by_kind("Role") if any("leases" in r["resources"] for r in d["rules"])]
    assert [(d["metadata"]["namespace"], d["rules"]) for d in leases] == [
        (runs_in, [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]}])]
    (binding,) = [d for d in by_kind("RoleBinding") if d["roleRef"]["name"] == leases[0]["metadata"]["name"]]
    subject = {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": runs_in}
    assert binding["metadata"]["namespace"] == runs_in and binding["subjects"] == [subject]
    assert account["metadata"]["namespace"] == runs_in
    assert by_kind("ClusterRoleBinding")[0]["subjects"] == [subject]


def test_the_disruption_budget_keeps_one_replica_and_lets_a_drain_evict_the_other() -> None:
    docs = render(INSTALL)
    (pdb,) = [d for d in docs if d["kind"] == "PodDisruptionBudget"]
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert pdb["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["minAvailable"] == 1 and "maxUnavailable" not in pdb["spec"]
    assert deployment["spec"]["replicas"] - pdb["spec"]["minAvailable"] >= 1, "a drain could never evict a replica"
    assert pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
