"""Pure status logic: upstream's condition algorithm and each framework's success and
failure rule, as plain data in and out."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from controller_kit import job

from controller.jobs import conditions as cond
from controller.jobs import status as st
from controller.jobs.kinds import KINDS
from schemas import upstream
from foundation.frameworks.defaulting import defaulted

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)


def types(status):
    return [(c["type"], c["status"], c["reason"]) for c in status.get("conditions", [])]


# --- the condition algorithm -------------------------------------------------------------


def test_new_conditions_are_appended_in_recency_order():
    s: dict = {}
    cond.set_condition(s, "Created", state="True", reason="XCreated", message="c", now=T0)
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="r", now=T0 + timedelta(seconds=5))
    assert types(s) == [("Created", "True", "XCreated"), ("Running", "True", "XRunning")]
    assert s["conditions"][1]["lastUpdateTime"] == s["conditions"][1]["lastTransitionTime"] == "2024-05-01T12:00:05Z"


def test_same_type_status_and_reason_is_a_no_op_timestamps_untouched():
    s: dict = {}
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="first", now=T0)
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="second", now=T0 + timedelta(minutes=1))
    assert s["conditions"] == [{"type": "Running", "status": "True", "reason": "XRunning", "message": "first",
                                "lastUpdateTime": "2024-05-01T12:00:00Z", "lastTransitionTime": "2024-05-01T12:00:00Z"}]


def test_new_reason_keeps_transition_time_and_moves_to_the_end():
    s: dict = {}
    cond.set_condition(s, "Suspended", state="True", reason="XSuspended", message="s", now=T0)
    cond.set_condition(s, "Created", state="True", reason="XCreated", message="c", now=T0)
    cond.set_condition(s, "Suspended", state="True", reason="XOther", message="s2", now=T0 + timedelta(minutes=1))
    assert types(s)[-1] == ("Suspended", "True", "XOther")
    assert s["conditions"][-1]["lastTransitionTime"] == "2024-05-01T12:00:00Z"
    assert s["conditions"][-1]["lastUpdateTime"] == "2024-05-01T12:01:00Z"


def test_restarting_and_running_replace_each_other():
    s: dict = {}
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="r", now=T0)
    cond.set_condition(s, "Restarting", state="True", reason="XRestarting", message="x", now=T0)
    assert types(s) == [("Restarting", "True", "XRestarting")]
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="r", now=T0)
    assert types(s) == [("Running", "True", "XRunning")]


@pytest.mark.parametrize("final", ["Succeeded", "Failed"])
def test_finishing_flips_running_to_false_and_keeps_it(final):
    s: dict = {}
    cond.set_condition(s, "Created", state="True", reason="XCreated", message="c", now=T0)
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="r", now=T0)
    cond.set_condition(s, final, state="True", reason=f"X{final}", message="done", now=T0 + timedelta(seconds=1))
    assert types(s) == [("Created", "True", "XCreated"), ("Running", "False", "XRunning"), (final, "True", f"X{final}")]
    assert s["conditions"][1]["lastTransitionTime"] == "2024-05-01T12:00:00Z"  # the flip keeps its timestamps


def test_nothing_changes_once_failed():
    s: dict = {}
    cond.set_condition(s, "Failed", state="True", reason="XFailed", message="f", now=T0)
    before = [dict(c) for c in s["conditions"]]
    cond.set_condition(s, "Succeeded", state="True", reason="XSucceeded", message="s", now=T0)
    cond.set_condition(s, "Running", state="True", reason="XRunning", message="r", now=T0)
    assert s["conditions"] == before


# --- per-framework rules ---------------------------------------------------------------


def ctx_for(body, statuses, *, pods=None, status=None):
    kind = KINDS[body["kind"]]
    body = defaulted({**body, "metadata": {**body["metadata"], "namespace": "ns"}}, kind)
    s = {"conditions": [], **(status or {}), "replicaStatuses": statuses}
    return st.Ctx(kind=kind, job=body, status=s, pods=pods or {}, now=T0)


def run_rule(body, statuses, **kw):
    ctx = ctx_for(body, statuses, **kw)
    st.update(ctx)
    return ctx


def test_pytorch_master_decides_success_and_stops():
    ctx = run_rule(job("PyTorchJob", "p", Master=1, Worker=2), {"Master": {"succeeded": 1}, "Worker": {"failed": 1}})
    assert types(ctx.status)[-1] == ("Succeeded", "True", "PyTorchJobSucceeded")
    assert ctx.status["conditions"][-1]["message"] == "PyTorchJob p is successfully completed."
    assert ctx.status["completionTime"] == "2024-05-01T12:00:00Z"
    assert ("Normal", "PyTorchJobSucceeded", "PyTorchJob p is successfully completed.") in ctx.events


def test_pytorch_elastic_succeeds_when_any_worker_succeeds():
    body = job("PyTorchJob", "p", Worker=3, spec={"elasticPolicy": {"maxReplicas": 4}})
    ctx = run_rule(body, {"Worker": {"succeeded": 1, "active": 2}})
    assert ctx.status["conditions"][-1]["message"] == "PyTorchJob ns/p successfully completed."


def test_pytorch_failed_replica_restarts_unless_never():
    restarting = run_rule(job("PyTorchJob", "p", Master=1, Worker=2), {"Master": {"active": 1}, "Worker": {"active": 1, "failed": 1}})
    assert types(restarting.status) == [("Restarting", "True", "PyTorchJobRestarting")]
    assert restarting.status["conditions"][-1]["message"] == "PyTorchJob p is restarting because 1 Worker replica(s) failed."
    failed = run_rule(job("PyTorchJob", "p", Master=1, Worker=2, restart="Never"), {"Master": {"active": 1}, "Worker": {"failed": 1}})
    assert types(failed.status)[-1] == ("Failed", "True", "PyTorchJobFailed")


def test_pytorch_failure_ignored_when_enough_replicas_are_up():
    ctx = run_rule(job("PyTorchJob", "p", Master=1, Worker=1, restart="Never"), {"Master": {"active": 1}, "Worker": {"active": 1, "failed": 1}})
    assert types(ctx.status) == [("Running", "True", "PyTorchJobRunning")]


def test_selector_is_filled_for_pytorch_paddle_jax_only():
    pt = run_rule(job("PyTorchJob", "p", Master=1), {"Master": {}})
    assert pt.status["replicaStatuses"]["Master"]["selector"] == (
        "training.kubeflow.org/job-name=p,training.kubeflow.org/operator-name=pytorchjob-controller,"
        "training.kubeflow.org/replica-type=master")
    tf = run_rule(job("TFJob", "t", Worker=1), {"Worker": {}})
    assert tf.status["replicaStatuses"]["Worker"] == {}


def _pod(name, index, phase, code=None):
    status = {"phase": phase}
    if code is not None:
        status["containerStatuses"] = [{"name": "tensorflow", "state": {"terminated": {"exitCode": code}}}]
    return {"metadata": {"name": name, "labels": {upstream.INDEX_LABEL: str(index)}}, "status": status}


def test_tensorflow_worker0_success_policy():
    pods = {"Worker": [_pod("t-worker-0", 0, "Succeeded", 0), _pod("t-worker-1", 1, "Running")]}
    default = run_rule(job("TFJob", "t", Worker=2), {"Worker": {"succeeded": 1, "active": 1}}, pods=pods)
    assert types(default.status)[-1] == ("Succeeded", "True", "TFJobSucceeded")
    all_workers = run_rule(job("TFJob", "t", Worker=2, spec={"successPolicy": "AllWorkers"}),
                           {"Worker": {"succeeded": 1, "active": 1}}, pods=pods)
    assert types(all_workers.status) == [("Running", "True", "TFJobRunning")]


def test_tensorflow_keeps_restarting_condition_instead_of_failing():
    prior = {"conditions": [{"type": "Restarting", "status": "True", "reason": "TFJobRestarting", "message": "m",
                             "lastUpdateTime": "x", "lastTransitionTime": "x"}]}
    ctx = ctx_for(job("TFJob", "t", Chief=1, Worker=2), {"Chief": {"active": 1}, "Worker": {"failed": 1, "active": 1}})
    ctx.status["conditions"] = prior["conditions"]
    st.update(ctx)
    assert types(ctx.status) == [("Restarting", "True", "TFJobRestarting")]


def test_tensorflow_dynamic_workers_ignore_worker_failures():
    ctx = run_rule(job("TFJob", "t", Chief=1, Worker=2, spec={"enableDynamicWorker": True}),
                   {"Chief": {"active": 1}, "Worker": {"failed": 1, "active": 1}})
    assert types(ctx.status) == [("Running", "True", "TFJobRunning")]


def test_xgboost_exitcode_restarts_anything_else_fails():
    restart = run_rule(job("XGBoostJob", "x", Master=1, Worker=1, restart="ExitCode"), {"Master": {"active": 1}, "Worker": {"failed": 1}})
    assert types(restart.status) == [("Restarting", "True", "XGBoostJobRestarting")]
    fail = run_rule(job("XGBoostJob", "x", Master=1, Worker=1, restart="OnFailure"), {"Master": {"active": 1}, "Worker": {"failed": 1}})
    assert types(fail.status)[-1] == ("Failed", "True", "XGBoostJobFailed")


def test_mpi_failure_reason_has_the_kind_twice():
    ctx = run_rule(job("MPIJob", "m", Launcher=1, Worker=1), {"Launcher": {"failed": 1}, "Worker": {}})
    assert types(ctx.status)[-1] == ("Failed", "True", "MPIJobMPIJobFailed")


def test_mxnet_single_worker_job_is_decided_by_the_worker():
    ctx = run_rule(job("MXJob", "mx", Worker=1), {"Worker": {"succeeded": 1}})
    assert types(ctx.status)[-1] == ("Succeeded", "True", "MXJobSucceeded")
