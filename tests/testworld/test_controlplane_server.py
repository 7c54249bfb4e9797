"""Real kube-apiserver behaviour the controller relies on, asserted against the
session control plane (upstream Kubeflow CRDs installed). Each test gets its own
namespace. Everything goes through ``control_plane.request`` / ``kubectl`` so the
assertions are about what the *server* answered (status code and message)."""

from __future__ import annotations

import copy
import json
import os
import time
from typing import Any

import pytest

from testworld.controlplane import ADMIN_USER, ControlPlane, KubectlError

pytestmark = pytest.mark.controlplane

KF = "/apis/kubeflow.org/v1"
needs_own_plane = pytest.mark.skipif(
    os.environ.get("USE_EXISTING_CLUSTER", "").lower() in {"1", "true"},
    reason="needs the control plane started by the test session (certs/audit log)",
)


def pytorchjob(name: str, *, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    default_spec = {
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [{"name": "pytorch", "image": "busybox:1.36"}]}},
            }
        }
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": default_spec if spec is None else spec,
    }


def jobs(ns: str, name: str = "", sub: str = "") -> str:
    path = f"{KF}/namespaces/{ns}/pytorchjobs"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def create_job(cp: ControlPlane, ns: str, name: str) -> dict[str, Any]:
    status, body = cp.request("POST", jobs(ns), pytorchjob(name))
    assert status == 201, body
    return body


# ---------------------------------------------------------------- validation
def test_pytorchjob_without_replica_specs_is_rejected_with_crd_message(control_plane, namespace):
    status, body = control_plane.request("POST", jobs(namespace), pytorchjob("no-replicas", spec={}))

    assert status == 422, body
    assert body["reason"] == "Invalid"
    assert "spec.pytorchReplicaSpecs: Required value" in body["message"]
    causes = {(c["field"], c["reason"]) for c in body["details"]["causes"]}
    assert ("spec.pytorchReplicaSpecs", "FieldValueRequired") in causes
    assert control_plane.request("GET", jobs(namespace, "no-replicas"))[0] == 404  # nothing stored


def test_pytorchjob_with_wrong_type_is_rejected_by_openapi_schema(control_plane, namespace):
    job = pytorchjob("bad-type")
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = "one"

    status, body = control_plane.request("POST", jobs(namespace), job)

    assert status == 422, body
    assert "spec.pytorchReplicaSpecs.Master.replicas: Invalid value" in body["message"]
    assert "must be of type integer" in body["message"]


def test_pod_with_invalid_name_is_rejected(control_plane, namespace):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "Bad_Name"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    status, body = control_plane.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)

    assert status == 422, body
    assert 'Pod "Bad_Name" is invalid' in body["message"]
    assert "a lowercase RFC 1123 subdomain must consist of" in body["message"]


def test_pod_is_defaulted_and_stays_pending_until_a_test_writes_its_status(control_plane, namespace):
    """No kubelet or scheduler runs: tests play kubelet through the status subresource."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "worker-0"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }
    status, created = control_plane.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
    assert status == 201, created
    assert created["spec"]["restartPolicy"] == "Always"  # server-side defaulting
    assert created["status"]["phase"] == "Pending"
    assert "nodeName" not in created["spec"]

    status, patched = control_plane.request(
        "PATCH",
        f"/api/v1/namespaces/{namespace}/pods/worker-0/status",
        {"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    )
    assert status == 200, patched
    assert patched["status"]["phase"] == "Running"


# ---------------------------------------------------------------- status subresource
def test_status_update_does_not_change_spec(control_plane, namespace):
    created = create_job(control_plane, namespace, "status-only")
    assert "status" not in created or not created["status"].get("conditions")  # create drops status

    obj = copy.deepcopy(created)
    obj["spec"]["runPolicy"] = {"backoffLimit": 7}  # must be ignored on /status
    obj["status"] = {"conditions": [{"type": "Created", "status": "True", "reason": "PyTorchJobCreated"}]}
    status, updated = control_plane.request("PUT", jobs(namespace, "status-only", "status"), obj)

    assert status == 200, updated
    assert updated["status"]["conditions"][0]["type"] == "Created"
    assert updated["spec"] == created["spec"]
    assert updated["metadata"]["generation"] == created["metadata"]["generation"]
    _, stored = control_plane.request("GET", jobs(namespace, "status-only"))
    assert stored["spec"] == created["spec"]
    assert stored["status"]["conditions"][0]["type"] == "Created"


def test_spec_update_does_not_change_status(control_plane, namespace):
    created = create_job(control_plane, namespace, "spec-only")
    obj = copy.deepcopy(created)
    obj["status"] = {"conditions": [{"type": "Created", "status": "True"}]}
    status, with_status = control_plane.request("PUT", jobs(namespace, "spec-only", "status"), obj)
    assert status == 200, with_status

    obj = copy.deepcopy(with_status)
    obj["spec"]["runPolicy"] = {"backoffLimit": 3}
    obj["status"] = {"conditions": [{"type": "Failed", "status": "True"}]}  # must be ignored on the main resource
    status, updated = control_plane.request("PUT", jobs(namespace, "spec-only"), obj)

    assert status == 200, updated
    assert updated["spec"]["runPolicy"]["backoffLimit"] == 3
    assert updated["status"] == with_status["status"]
    assert updated["metadata"]["generation"] == with_status["metadata"]["generation"] + 1


# ---------------------------------------------------------------- optimistic concurrency
def test_update_with_stale_resource_version_gets_409(control_plane, namespace):
    created = create_job(control_plane, namespace, "conflict")
    stale = copy.deepcopy(created)

    fresh = copy.deepcopy(created)
    fresh["metadata"].setdefault("labels", {})["round"] = "1"
    status, body = control_plane.request("PUT", jobs(namespace, "conflict"), fresh)
    assert status == 200, body
    assert body["metadata"]["resourceVersion"] != stale["metadata"]["resourceVersion"]

    stale["metadata"].setdefault("labels", {})["round"] = "stale"
    status, body = control_plane.request("PUT", jobs(namespace, "conflict"), stale)
    assert status == 409, body
    assert body["reason"] == "Conflict"
    assert "the object has been modified; please apply your changes to the latest version" in body["message"]

    stale["status"] = {"conditions": [{"type": "Running", "status": "True"}]}
    status, body = control_plane.request("PUT", jobs(namespace, "conflict", "status"), stale)
    assert status == 409, body  # the status subresource is guarded the same way


# ---------------------------------------------------------------- server-side apply dry-run
def test_server_side_dry_run_apply_validates_without_persisting(control_plane, namespace):
    ok = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", "-",
        input=json.dumps(pytorchjob("dry-ok")),
    )
    assert "pytorchjob.kubeflow.org/dry-ok serverside-applied (server dry run)" in ok.stdout
    assert control_plane.request("GET", jobs(namespace, "dry-ok"))[0] == 404  # dry run stored nothing

    with pytest.raises(KubectlError) as failed:
        control_plane.kubectl(
            "apply", "--server-side", "--dry-run=server", "-n", namespace, "-f", "-",
            input=json.dumps(pytorchjob("dry-bad", spec={})),
        )
    assert 'The PyTorchJob "dry-bad" is invalid' in failed.value.stderr  # kubectl's rendering of the 422
    assert "spec.pytorchReplicaSpecs: Required value" in failed.value.stderr


# ---------------------------------------------------------------- RBAC
@needs_own_plane
def test_rbac_is_enforced_for_non_admin_identities(control_plane, namespace):
    user = f"probe-{namespace}"[:60]
    kubeconfig = control_plane.add_user(user, groups=["trainforge:probes"])

    status, body = control_plane.request("GET", jobs(namespace), kubeconfig=kubeconfig)
    assert status == 403, body
    assert f'User "{user}" cannot list resource "pytorchjobs" in API group "kubeflow.org"' in body["message"]

    control_plane.kubectl("create", "role", "job-reader", "-n", namespace,
                          "--verb=get,list", "--resource=pytorchjobs.kubeflow.org")
    control_plane.kubectl("create", "rolebinding", "job-reader", "-n", namespace,
                          "--role=job-reader", f"--user={user}")
    deadline = time.monotonic() + 15  # the RBAC authorizer reads from an informer cache
    while (status := control_plane.request("GET", jobs(namespace), kubeconfig=kubeconfig)[0]) == 403:
        assert time.monotonic() < deadline, "RoleBinding never took effect"
        time.sleep(0.1)
    assert status == 200
    # ... and only what was granted
    assert control_plane.request("POST", jobs(namespace), pytorchjob("x"), kubeconfig=kubeconfig)[0] == 403


# ---------------------------------------------------------------- audit log
@needs_own_plane
def test_audit_log_records_create_with_verb_and_resource(control_plane, namespace):
    status, body = control_plane.request("POST", jobs(namespace), pytorchjob("audited"))
    assert status == 201, body

    events = [
        e for e in control_plane.audit_events()
        if e.get("verb") == "create"
        and e.get("objectRef", {}).get("resource") == "pytorchjobs"
        and e.get("objectRef", {}).get("namespace") == namespace
    ]
    assert len(events) == 1, events
    event = events[0]
    assert event["level"] == "Metadata"
    assert event["objectRef"]["apiGroup"] == "kubeflow.org"
    assert event["objectRef"]["apiVersion"] == "v1"
    assert event["user"]["username"] == ADMIN_USER
    assert event["responseStatus"]["code"] == 201
    assert event["requestURI"] == jobs(namespace)
    assert "requestObject" not in event  # Metadata level: no bodies


@needs_own_plane
def test_server_reports_pinned_version(control_plane):
    if os.environ.get("KUBEBUILDER_ASSETS"):
        pytest.skip("binaries come from KUBEBUILDER_ASSETS, version not pinned here")
    status, body = control_plane.request("GET", "/version")
    assert status == 200
    assert body["gitVersion"] == "v1.32.4"
