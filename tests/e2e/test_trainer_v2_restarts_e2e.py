"""Whole-job restarts (`policy.restartScope: job`) on the real Kubeflow Trainer v2.3.0 + JobSet v0.12.0.

The compiler gives each job a TrainingRuntime of its own: the stock runtime with a JobSet
`failurePolicy` (maxRestarts = backoffLimit, BlockingRecreate), Jobs that fail on their first
failed pod and, for `restart: ExitCode`, a Job podFailurePolicy plus a JobSet rule that fail
the job at once on exit codes 1-127. The objects are applied as Argo CD would, wave by wave,
into one small world (Trainer and JobSet with their webhooks, the job controller and garbage
collector, kube-scheduler, kwok); nodes run until the test ends one of them with an exit code
(kwok reads it from the pod's annotations: testworld/stages.py). Every verdict is the engines'
own: JobSet's `status.restarts` and conditions, the TrainJob's conditions, the pods and Jobs
the API server holds, and, watched event by event, that no two attempts' pods ever coexist.

1. `gang` (pytorch, 2 nodes, backoffLimit 2): one node exits 1, and both nodes' Job and pods
   are re-created (new UIDs, restart attempt n+1, JobSet restarts n+1); twice; the third
   failure fails the JobSet (ReachedMaxRestarts) and so the TrainJob.
2. `exit-codes` (jax, 2 nodes, ExitCode, backoffLimit 2), alongside: exit 137 restarts the
   whole job; exit 1 then fails it at once, with one restart of its two used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from e2e_kit import running
from trainer_v2_kit import (JOBSETS, PODS, RESTART_ATTEMPT, RESTARTS, active, apply_in_waves, condition,
                            make_restart_world, wait_trainjobs)

from compiler.emit.render import rendered_objects
from compiler.pipeline import compile_sources
from testworld import stages
from testworld.watching import Missing, wait_for
from testworld.world import World

NAMESPACE = "v2-restarts"
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
INDEX = "batch.kubernetes.io/job-completion-index"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with running(make_restart_world(), "the Trainer v2 restart world") as world:
        result = compile_sources([RESTARTS])
        assert result.ok, [d.text() for d in result.diagnostics]
        apply_in_waves(world, rendered_objects(result, "default"))
        yield world


class Attempts:
    """Every pod event of one job, in the API server's order: the restart attempts whose pods
    exist at once (a violation if ever two), and the pod UIDs each attempt had."""

    def __init__(self, job: str) -> None:
        self.job, self.overlaps, self.uids = job, [], {}

    def see(self, pods: dict[Any, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        mine = {k[1]: p for k, p in pods.items() if p["metadata"]["labels"].get(JOBSET_NAME) == self.job}
        live = {p["metadata"]["labels"][RESTART_ATTEMPT] for p in mine.values()}
        if len(live) > 1:
            self.overlaps.append(sorted((n, p["metadata"]["labels"][RESTART_ATTEMPT]) for n, p in mine.items()))
        for p in mine.values():
            self.uids.setdefault(p["metadata"]["labels"][RESTART_ATTEMPT], set()).add(p["metadata"]["uid"])
        return mine


def running_attempt(world: World, attempts: Attempts, attempt: int) -> dict[str, dict[str, Any]]:
    """Both nodes of restart attempt ``attempt`` Running (and no pod of another attempt left)."""
    def check(pods: dict[Any, dict[str, Any]]) -> Any:
        mine = attempts.see(pods)
        up = [p for p in mine.values() if p["status"].get("phase") == "Running"
              and p["metadata"]["labels"][RESTART_ATTEMPT] == str(attempt) and not p["metadata"].get("deletionTimestamp")]
        return {p["metadata"]["labels"][INDEX]: p for p in up} if len(up) == len(mine) == 2 else \
            Missing(f"{attempts.job} pods: {sorted((n, p['metadata']['labels'][RESTART_ATTEMPT], p['status'].get('phase')) for n, p in mine.items())}")
    return wait_for(world.client, PODS, check, namespace=NAMESPACE, timeout=180,
                    what=f"{attempts.job}: both nodes of attempt {attempt} running")


def end_node(world: World, pod: dict[str, Any], code: int) -> None:
    """The node's program exits with ``code`` (kwok ends the container at once)."""
    world.client.patch(PODS, NAMESPACE, pod["metadata"]["name"], {"metadata": {"annotations": {
        stages.RUN_SECONDS: "0", stages.EXIT_CODE: str(code)}}})


def jobset_where(world: World, job: str, want, what: str) -> dict[str, Any]:
    def check(objects: dict[Any, dict[str, Any]]) -> Any:
        found = objects.get((NAMESPACE, job))
        return found if found is not None and want(found) else Missing(str((found or {}).get("status")))
    return wait_for(world.client, JOBSETS, check, namespace=NAMESPACE, timeout=180, what=f"JobSet {job} {what}")


def test_one_nodes_failure_restarts_the_whole_jobset_up_to_the_limit_then_the_trainjob_fails(world):
    attempts = Attempts("gang")
    for attempt in range(3):
        nodes = running_attempt(world, attempts, attempt)
        assert jobset_where(world, "gang", lambda j: True, "exists")["status"].get("restarts", 0) == attempt
        end_node(world, nodes["1"], 1)  # node 1 fails; node 0 runs on
        if attempt < 2:
            jobset_where(world, "gang", lambda j, n=attempt + 1: j["status"].get("restarts") == n,
                         f"restarted {attempt + 1} time(s)")

    failed = jobset_where(world, "gang", lambda j: "Failed" in active(j), "Failed")
    assert failed["status"]["restarts"] == 2
    assert condition(failed, "Failed")["reason"] == "ReachedMaxRestarts", failed["status"]
    (trainjob,) = wait_trainjobs(world, NAMESPACE, lambda j: "Failed" in active(j), {"gang"}, "Failed").values()
    assert condition(trainjob, "Failed")["reason"] == "ReachedMaxRestarts", trainjob["status"]
    assert not attempts.overlaps, attempts.overlaps[:3]
    assert sorted(attempts.uids) == ["0", "1", "2"]
    assert all(len(uids) == 2 for uids in attempts.uids.values()), attempts.uids  # every attempt: two new pods
    assert len(set().union(*attempts.uids.values())) == 6


def test_exit_code_restarts_the_job_on_a_signal_and_fails_it_at_once_on_an_error(world):
    attempts = Attempts("exit-codes")
    nodes = running_attempt(world, attempts, 0)
    end_node(world, nodes["0"], 137)  # killed: the whole job restarts
    jobset_where(world, "exit-codes", lambda j: j["status"].get("restarts") == 1, "restarted once")
    nodes = running_attempt(world, attempts, 1)
    end_node(world, nodes["1"], 1)  # a bug: restarting would not help

    failed = jobset_where(world, "exit-codes", lambda j: "Failed" in active(j), "Failed")
    assert failed["status"]["restarts"] == 1, failed["status"]
    # the exit code's rule, not the limit: one of two restarts was left
    assert condition(failed, "Failed")["reason"] == "FailJobSetFailurePolicyAction", failed["status"]
    (trainjob,) = wait_trainjobs(world, NAMESPACE, lambda j: "Failed" in active(j), {"exit-codes"}, "Failed").values()
    assert condition(trainjob, "Failed")["reason"] == "FailJobSetFailurePolicyAction", trainjob["status"]
    assert not attempts.overlaps, attempts.overlaps[:3]
