"""The rbac overlay alone: ServiceAccount/Role/RoleBinding and serviceAccountName."""

from __future__ import annotations

import pytest
from overlay_kit import build_bundle, component_yaml, kubernetes_errors, templates

from overlays import rbac

RULE = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}


def _objects(bundle):
    return {(o["kind"], o["metadata"]["name"]): o for o in rbac.apply(bundle).component("rbac").resources}


def test_create_with_rules_snapshot(yaml_snapshot):
    bundle = build_bundle(
        {"nodes": 2, "serviceAccount": {"create": True, "rules": [RULE], "imagePullSecrets": ["regcred"]}}
    )
    assert component_yaml(bundle, rbac.apply(bundle).component("rbac")) == yaml_snapshot


def test_mpi_launcher_gets_its_own_account_snapshot(yaml_snapshot):
    bundle = build_bundle(
        {"nodes": 2, "serviceAccount": {"create": True, "rules": [RULE], "imagePullSecrets": ["regcred"]}},
        framework="mpi",
    )
    assert component_yaml(bundle, rbac.apply(bundle).component("rbac")) == yaml_snapshot


def test_mpi_launcher_account_is_bound_to_the_user_rules_and_workers_keep_their_own():
    bundle = build_bundle({"nodes": 2, "serviceAccount": {"create": True, "rules": [RULE]}}, framework="mpi")
    objects = _objects(bundle)
    assert set(objects) == {
        ("ServiceAccount", "mini"),
        ("ServiceAccount", "mini-launcher"),
        ("Role", "mini"),
        ("RoleBinding", "mini"),
    }
    subjects = [s["name"] for s in objects[("RoleBinding", "mini")]["subjects"]]
    assert subjects == ["mini", "mini-launcher"]
    pods = templates(rbac.apply(bundle).rendered_job(), bundle)
    assert pods["Launcher"]["spec"]["serviceAccountName"] == "mini-launcher"
    assert pods["Worker"]["spec"]["serviceAccountName"] == "mini"


def test_every_pod_template_gets_the_account():
    bundle = build_bundle(
        {"nodes": 2, "roles": {"ps": {"replicas": 1}, "evaluator": {}}, "serviceAccount": {"create": True}},
        framework="tensorflow",
    )
    pods = templates(rbac.apply(bundle).rendered_job(), bundle)
    assert set(pods) == {"Chief", "Worker", "PS", "Evaluator"}
    assert {p["spec"]["serviceAccountName"] for p in pods.values()} == {"mini"}


def test_create_without_rules_makes_only_the_service_account():
    bundle = build_bundle({"serviceAccount": {"create": True}})
    assert set(_objects(bundle)) == {("ServiceAccount", "mini")}


def test_create_with_a_name_uses_it_for_every_object():
    bundle = build_bundle({"serviceAccount": {"create": True, "name": "trainer", "rules": [RULE]}})
    assert set(_objects(bundle)) == {("ServiceAccount", "trainer"), ("Role", "trainer"), ("RoleBinding", "trainer")}


def test_name_without_create_only_sets_the_pod_field():
    bundle = build_bundle({"nodes": 2, "serviceAccount": {"name": "shared-sa"}}, framework="mpi")
    component = rbac.apply(bundle).component("rbac")
    assert component.resources == ()
    pods = templates(rbac.apply(bundle).rendered_job(), bundle)
    assert {p["spec"]["serviceAccountName"] for p in pods.values()} == {"shared-sa"}


def test_no_service_account_writes_no_component():
    bundle = build_bundle({"nodes": 2})
    assert rbac.apply(bundle).components == ()
    assert rbac.apply(build_bundle({"serviceAccount": {"create": False}})).components == ()


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param(RULE, id="a plain rule is copied as written"),
        pytest.param(
            {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["*"], "resourceNames": ["a"]},
            id="a wildcard the user wrote out is kept, nothing more",
        ),
    ],
)
def test_rules_are_exactly_the_listed_ones(rule):
    bundle = build_bundle({"serviceAccount": {"create": True, "rules": [rule]}})
    assert _objects(bundle)[("Role", "mini")]["rules"] == [rule]


def test_no_wildcard_appears_unless_written():
    bundle = build_bundle({"serviceAccount": {"create": True, "rules": [RULE]}})
    role = _objects(bundle)[("Role", "mini")]
    assert "*" not in str(role["rules"])


def test_pod_template_account_wins_over_the_overlay():
    bundle = build_bundle(
        {"serviceAccount": {"name": "from-spec"}, "podTemplate": {"spec": {"serviceAccountName": "from-template"}}}
    )
    pods = templates(rbac.apply(bundle).rendered_job(), bundle)
    assert pods["Master"]["spec"]["serviceAccountName"] == "from-template"


@pytest.mark.parametrize("framework", ["pytorch", "mpi"])
def test_objects_validate_against_the_kubernetes_schemas(framework):
    bundle = build_bundle(
        {"nodes": 2, "serviceAccount": {"create": True, "rules": [RULE], "imagePullSecrets": ["regcred"]}},
        framework=framework,
        metadata={"labels": {"team": "nlp"}},
    )
    for obj in rbac.apply(bundle).component("rbac").resources:
        assert kubernetes_errors(obj) == [], obj
