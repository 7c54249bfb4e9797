"""The Python side of the admission rules (foundation/admission.py, the controller's reconcile-time
check) gives exactly the table's messages: what the policies and upstream's webhook answer."""

from __future__ import annotations

import pytest
from admission_cases import CASES, Case, case_id, job

from foundation import admission
from controller.jobs import checks
from controller.jobs.kinds import KINDS


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_rules_give_the_tables_messages(case: Case) -> None:
    assert sorted(admission.errors(case.job, case.kind, case.old)) == sorted(case.errors)
    assert admission.warnings(case.job, case.kind) == list(case.warnings)


@pytest.mark.parametrize("case", [c for c in CASES if c.old is None], ids=case_id)
def test_the_reconcile_time_check_is_the_same_table(case: Case) -> None:
    found = checks.problems(case.job, KINDS[case.kind])
    assert sorted(found) == sorted(case.errors)
    if found:
        assert checks.failure_message(KINDS[case.kind], found) == \
            f"{case.kind} failed validation because {admission.aggregate(found)}"


def test_several_errors_read_as_kubernetes_aggregates_them() -> None:
    assert admission.aggregate(["a: x"]) == "a: x"
    assert admission.aggregate(["a: x", "b: y"]) == "[a: x, b: y]"


def test_replica_errors_come_in_upstreams_order_one_rule_at_a_time() -> None:
    body = job("PyTorchJob", "n", {"Master": {"template": {"spec": {"containers": [{"name": "x"}]}}}, "Worker": 0})
    assert admission.errors(body, "PyTorchJob") == [
        "spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: must be required",
        "spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: must have at least one container with name pytorch",
        "spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",
        "spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1",
    ]


def test_a_job_without_its_replica_map_is_refused_by_the_crd_and_by_the_rules() -> None:
    """Both CRDs require the map, so no admission check sees it missing; the rule stays for parity."""
    body = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "n"}, "spec": {}}
    assert admission.errors(body, "TFJob") == ["spec.tfReplicaSpecs: Required value: must be required"]


def test_the_table_covers_every_rule_of_every_kind() -> None:
    """Each rule of each kind is broken by at least one case (the map's presence: the CRD's, above)."""
    for kind in admission.KIND_RULES:
        _, rules = admission.rules_for(kind)
        for rule in (r for r in rules if r.name != "replica specs present"):
            broken = [c for c in CASES if c.kind == kind and rule.py(admission.KIND_RULES[kind], admission._view(c.job, admission.KIND_RULES[kind], c.old))
                      and (c.old is not None or not rule.update_only)]
            assert broken, f"{kind}: no case breaks {rule.name!r}"


def _mpi(**replicas):
    """An MPIJob with the table builder's replicas (containers named, with images)."""
    specs = job("PyTorchJob", "m", replicas)["spec"]["pytorchReplicaSpecs"]
    return {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "m"}, "spec": {"mpiReplicaSpecs": specs}}


@pytest.mark.parametrize("kind,body,message", [
    ("MPIJob", _mpi(Worker=1), "MPIReplicaSpec is not valid: Master ReplicaSpec must be present"),
    ("MPIJob", _mpi(Launcher=2, Worker=1), "MPIReplicaSpec is not valid: There must be only 1 launcher replica"),
    ("MPIJob", _mpi(Launcher=1, Trainer=1), "MPIReplicaType is Trainer but must be one of [Launcher Worker]"),
    ("MPIJob", _mpi(Launcher={"template": {"spec": {"containers": []}}}),
     "MPIReplicaSpecs is not valid: containers definition expected in Launcher"),
    ("MPIJob", _mpi(Launcher={"template": {"spec": {"containers": [{"name": "mpi"}]}}}),
     "MPIReplicaSpec is not valid: Image is undefined in the container of Launcher"),
    ("MPIJob", _mpi(Launcher={"template": {"spec": {"containers": [{"image": "x"}]}}}),
     "MPIReplicaSpec is not valid: ImageName is undefined in the container of Launcher"),
    ("MPIJob", _mpi(Launcher=1, Worker=0), None),
    ("MXJob", {"metadata": {"name": "1mx"}, "spec": {"mxReplicaSpecs": {}}},
     f"MXJob name is invalid: [{admission.DNS1035_ERROR}]"),
    ("MXJob", {"metadata": {"name": "mx"}, "spec": {"mxReplicaSpecs": {"Scheduler": {"template": {"spec": {
        "containers": [{"name": "main", "image": "x"}]}}}}}}, "MXJobSpec is not valid"),
    ("MXJob", {"metadata": {"name": "mx"}, "spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": {
        "containers": [{"name": "mxnet", "image": "x"}]}}}}}}, None),
], ids=["mpi without launcher", "two launchers", "mpi unknown type", "mpi no containers", "mpi no image",
        "mpi container without name", "mpi valid", "mxjob bad name", "mxjob without mxnet container", "mxjob valid"])
def test_the_reconcilers_checks_give_upstreams_first_error(kind, body, message) -> None:
    assert admission.reconciler_errors(body, kind) == ([message] if message else [])
