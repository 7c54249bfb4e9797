"""The mpi-operator's MPIJob (`kubeflow.org/v2beta1`, the mpi-operator target) in Argo CD and Flux.

Its conditions as the mpi-operator v0.8.0 writes them (pkg/controller/mpi_job_controller.go
and _status.go), through the /status subresource: `Created` first; `Running` once the
launcher pod and every worker run; on a suspend `Suspended` True and `Running` False, on a
resume `Suspended` False (reason MPIJobResumed); `Succeeded` from the launcher Job's
Complete (Running then False); `Failed` from the launcher Job's Failed (its reason, e.g.
`BackoffLimitExceeded/Error`) or when a worker was evicted (`MPIJobEvicted`). It declares
`Restarting` and never sets it. One Argo CD check and one Flux `healthCheckExprs` entry serve
both MPIJob versions: both engines key a check by group and kind (Flux refuses a second entry
for a GroupKind and then reconciles nothing). `status` reads the same words.
"""

from __future__ import annotations

from typing import Optional

import pytest

from compiler.gitops import argocd, flux, health
from foundation.runs.state import job_state
from health_eval import ARGO_TO_FLUX, run_cel, run_lua

API_VERSION = "kubeflow.org/v2beta1"
T0, T1, T2 = "2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z", "2026-01-01T00:02:00Z"


def condition(ctype: str, status: str = "True", *, reason: str, message: str, at: str = T0) -> dict:
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": at, "lastUpdateTime": at}


def mpijob(conditions: Optional[list[dict]] = None) -> dict:
    obj: dict = {"apiVersion": API_VERSION, "kind": "MPIJob",
                 "metadata": {"name": "pi", "namespace": "hpc", "creationTimestamp": T0},
                 "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": {}}}
    if conditions is not None:
        obj["metadata"]["managedFields"] = [{
            "manager": "mpi-operator", "operation": "Update", "apiVersion": API_VERSION, "time": T0,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "subresource": "status"}]
        obj["status"] = {"conditions": conditions}
    return obj


CREATED = condition("Created", reason="MPIJobCreated", message="MPIJob hpc/pi is created.")
RUNNING = condition("Running", reason="MPIJobRunning", message="MPIJob hpc/pi is running.", at=T1)
STOPPED = condition("Running", "False", reason="MPIJobSuspended", message="MPIJob hpc/pi is suspended.", at=T1)
SUSPENDED = condition("Suspended", reason="MPIJobSuspended", message="MPIJob suspended", at=T1)
RESUMED = condition("Suspended", "False", reason="MPIJobResumed", message="MPIJob resumed", at=T2)
DONE_RUNNING = condition("Running", "False", reason="MPIJobRunning", message="MPIJob hpc/pi is running.", at=T1)
SUCCEEDED = condition("Succeeded", reason="MPIJobSucceeded", message="MPIJob hpc/pi successfully completed.", at=T2)
FAILED = condition("Failed", reason="BackoffLimitExceeded/Error",
                   message="Job has reached the specified backoff limit: ", at=T2)
EVICTED = condition("Failed", reason="MPIJobEvicted", message="1/2 workers are evicted", at=T2)

CASES = [
    pytest.param(mpijob(), "Progressing", "InProgress", "Created", id="no status yet"),
    pytest.param(mpijob([CREATED]), "Progressing", "InProgress", "Created", id="created, pods starting"),
    pytest.param(mpijob([CREATED, RUNNING]), "Progressing", "InProgress", "Running", id="running"),
    pytest.param(mpijob([CREATED, STOPPED, SUSPENDED]), "Suspended", "InProgress", "Suspended",
                 id="suspended (by git or by Kueue)"),
    pytest.param(mpijob([CREATED, RUNNING, RESUMED]), "Progressing", "InProgress", "Running",
                 id="resumed and running again"),
    pytest.param(mpijob([CREATED, DONE_RUNNING, SUCCEEDED]), "Healthy", "Current", "Succeeded", id="succeeded"),
    pytest.param(mpijob([CREATED, DONE_RUNNING, FAILED]), "Degraded", "Failed", "Failed",
                 id="failed: the launcher Job reached its backoffLimit"),
    pytest.param(mpijob([CREATED, RUNNING, EVICTED]), "Degraded", "Failed", "Failed", id="failed: a worker evicted"),
]


def _flux_entry() -> dict:
    (entry,) = [e for e in flux.health_check_exprs() if e["kind"] == "MPIJob"]  # its apiVersion names the group only
    return entry


@pytest.mark.parametrize(("obj", "argo", "flux_status", "state"), CASES)
def test_argo_cd_flux_and_status_read_a_v2beta1_mpijob_alike(obj, argo, flux_status, state):
    script = argocd.health_keys()["resource.customizations.health.kubeflow.org_MPIJob"]

    assert run_lua(script, obj)["status"] == argo
    assert run_cel(_flux_entry(), obj) == flux_status == ARGO_TO_FLUX[argo]
    assert job_state(obj).state == state


def test_the_deciding_conditions_message_is_shown():
    script = health.lua_script("MPIJob")
    assert run_lua(script, mpijob([CREATED, DONE_RUNNING, FAILED]))["message"] == FAILED["message"]
    assert run_lua(script, mpijob([CREATED, RUNNING]))["message"] == RUNNING["message"]


def test_one_check_per_engine_serves_both_mpijob_versions_and_the_ignore_rules_name_each():
    keys = [k for k in argocd.health_keys() if k.endswith("_MPIJob")]
    assert keys == ["resource.customizations.health.kubeflow.org_MPIJob"]
    entries = [(e["apiVersion"].split("/")[0], e["kind"]) for e in flux.health_check_exprs()]
    assert entries.count(("kubeflow.org", "MPIJob")) == 1 and len(entries) == len(set(entries))  # no GroupKind twice
    versions = [r["target"]["version"] for r in flux.ignore_rules() if r["target"]["kind"] == "MPIJob"]
    assert versions == ["v1", "v2beta1"]
    with pytest.raises(ValueError, match="MPIJob has no health check at kubeflow.org/v3"):
        health.cel_expressions("MPIJob", "kubeflow.org/v3")
