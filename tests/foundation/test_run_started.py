"""When a run has started (foundation.runs.started): the one rule of train-controller, the plan and status.

Pure: pods and records as the API server stores them. The controller side (an edit of a run
that has not started is taken, of a started one held) is tests/controller/test_controller_run_start.py;
the plan's side below, through `plan --live`'s own reading of the cluster's objects.
"""

from __future__ import annotations

from typing import Any

import pytest

from compiler.plan import judge, live
from compiler.plan.aspects import job_aspects
from compiler.plan.hazards import OURS, V1
from compiler.targets import api
from foundation.runs import started as runstart

RECORD = "bert-5d1c0e9a47"


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = (), record: str | None = RECORD,
        **annotations: str) -> dict[str, Any]:
    notes = {**({runstart.RECORD: record} if record else {}), **annotations}
    return {"metadata": {"name": "bert-master-0", "annotations": notes,
                         "ownerReferences": [{"controller": True, "uid": "job-uid"}]},
            "status": {"containerStatuses": list(containers), "initContainerStatuses": list(init)}}


def record(name: str = RECORD, number: int = 1, **annotations: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": annotations, "ownerReferences": [{"controller": True,
                                                                                         "uid": "job-uid"}]},
            "revision": number}


WAITING = {"name": "pytorch", "state": {"waiting": {"reason": "ImagePullBackOff"}}}
CREATING = {"name": "pytorch", "state": {"waiting": {"reason": "ContainerCreating"}}}
RUNNING = {"name": "pytorch", "state": {"running": {"startedAt": "2026-11-28T07:00:00Z"}}}
ENDED = {"name": "pytorch", "state": {"terminated": {"exitCode": 0}}}
CRASHED = {"name": "pytorch", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
           "lastState": {"terminated": {"exitCode": 137}}}
INIT_DONE = {"name": "init-pytorch", "state": {"terminated": {"exitCode": 0}}}
INIT_RUNNING = {"name": "init-pytorch", "state": {"running": {}}}


@pytest.mark.parametrize("pods, expected", [
    ([], False),
    ([pod(WAITING)], False),
    ([pod(CREATING)], False),
    ([pod(WAITING, init=(INIT_DONE,))], False),
    ([pod(WAITING, init=(INIT_RUNNING,))], False),
    ([pod(RUNNING)], True),
    ([pod(ENDED)], True),
    ([pod(CRASHED)], True),
    ([pod(WAITING), pod(RUNNING)], True),
    ([pod(WAITING, **{runstart.STARTED: "true"})], True),
    ([pod(RUNNING, record="bert-0000000000")], False),
    ([pod(RUNNING, **{runstart.PREVIOUS: "suspend"})], False),
    ([pod(RUNNING, record=None)], True),
], ids=[
    "no pod yet", "a pod whose image cannot be pulled", "a pod whose containers are being created",
    "an init container that ended does not count", "an init container still running does not count",
    "a running container", "a container that ended", "a container waiting to restart after it ran",
    "one pod running beside one stuck", "a pod created for a started run says so",
    "a pod built from another record is not the run's", "a pod of a suspended run is not the run's",
    "a pod made before records counts for the run",
])
def test_a_run_has_started_once_one_of_its_containers_ran(pods: list[dict[str, Any]], expected: bool) -> None:
    assert runstart.started(pods, record()) is expected


def test_the_record_keeps_the_start_when_no_pod_shows_it_and_a_suspension_ends_it() -> None:
    assert runstart.started([pod(WAITING)], record(**{runstart.STARTED: "true"}))
    assert not runstart.started([pod(RUNNING)], record(**{runstart.ENDED: "suspended"}))


def test_the_first_start_is_the_earliest_own_container_start_init_containers_left_out() -> None:
    early_init = {"name": "init-pytorch", "state": {"terminated": {"exitCode": 0, "startedAt": "2026-11-28T06:00:00Z"}}}
    restarted = {"name": "pytorch", "state": {"running": {"startedAt": "2026-11-28T07:05:00Z"}},
                 "lastState": {"terminated": {"exitCode": 137, "startedAt": "2026-11-28T07:01:00Z"}}}
    assert runstart.first_start([pod(WAITING, init=(early_init,))]) is None
    assert runstart.first_start([pod(RUNNING), pod(restarted)]) == "2026-11-28T07:00:00Z"
    assert runstart.first_start([pod(restarted)]) == "2026-11-28T07:01:00Z"


def test_the_current_record_is_the_highest_number_not_being_deleted() -> None:
    old, new = record("a", 1), record("b", 2)
    gone = {**record("c", 3), "metadata": {**record("c", 3)["metadata"], "deletionTimestamp": "2026-11-28T07:00:00Z"}}
    assert runstart.current_record([new, old, gone]) is new and runstart.current_record([]) is None


# ---------------------------------------------------------------------------------- the plan
PLAN_FACTS = api("kubeflow-v1").plan


def job(image: str) -> dict[str, Any]:
    replica = {"replicas": 1, "restartPolicy": "OnFailure",
               "template": {"spec": {"containers": [{"name": "pytorch", "image": image}]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "bert", "namespace": "ml", "uid": "job-uid"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica}},
            "status": {"conditions": [{"type": "Created", "status": "True", "lastTransitionTime": "2026-11-28T07:00:00Z"}]}}


@pytest.mark.parametrize("children, started, hazards", [
    ([], None, ["ignored-until-next-run"]),
    ([record(), pod(WAITING)], False, []),
    ([record(), pod(RUNNING)], True, ["ignored-until-next-run"]),
], ids=["no record: train-controller has not run it, the plan predicts a started run",
        "a record and no container ran: the change is taken", "a container ran: the change is held"])
def test_plan_live_holds_a_change_only_for_a_started_run(children: list[dict[str, Any]], started: bool | None,
                                                         hazards: list[str]) -> None:
    old, new = job("a:1"), job("a:typo")
    objects = [{**old, "kind": "PyTorchJob"}, *({**c, "kind": "Pod" if "status" in c else "ControllerRevision"}
                                                for c in children)]
    states = live.index(objects)
    found = live.state_of(states.get(("PyTorchJob", "ml", "bert")), states)
    assert found.state == "Created" and found.started is started
    verdict = judge.update(job_aspects(old, new, PLAN_FACTS), judge.Context((V1, OURS), found.state,
                                                                           started=found.started))
    assert verdict.ordered() == hazards, verdict.clauses
    if started is False:
        assert any("has not started" in c for c in verdict.clauses), verdict.clauses
