"""The plan and the controller read a run the same way, over generated jobs and edits.

Two properties, each over a few hundred cases from a seeded generator (no control plane):

- an edit of a running, unqueued job under train-controller: `train-compile plan` says
  `ignored-until-next-run` (compiler.plan.aspects + judge) exactly when train-controller's pass
  would defer it to the next run (controller.jobs.run_records.next_step on the run record of
  the job before the edit: a suspended job's record is marked ended, as its suspending pass
  leaves it). Jobs of every kind, with replica counts, images, env, resources, restart
  policies (a default written out or left implicit), run policy fields, scheduling policies,
  elastic bounds and Worker counts, suspend, the restart scope and labels and annotations.
- a job's state: what `plan --live` judges hazards by (compiler.plan.live.state_of) is what
  `status` prints (compiler.cli.live.gather.report), for generated condition lists and child
  Job counts.

A failing case prints its seed, the edits and both answers. Breaking the rule on one side
fails these: the plan deciding by the compiled objects' raw difference (the rule before
foundation.runs.spec) misses a default written out, and a `next_step` that ignores the ended
mark defers a resumed job's edit.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from compiler.cli.live.gather import report
from compiler.cli.live.specs import SpecJob
from compiler.plan import judge
from compiler.plan.aspects import job_aspects
from compiler.plan.hazards import OURS, V1
from compiler.plan.live import state_of
from compiler.targets import api
from controller.jobs.kinds import KINDS
from controller.jobs.run_record import ENDED, HASH_LABEL, SUSPENDED
from controller.jobs.run_records import DEFER, next_step
from controller.jobs.run_policy import is_suspended
from foundation.frameworks.defaulting import defaulted
from foundation.runs.spec import run_spec, spec_hash
from schemas import marks

CASES = 400
DEFERRED = "ignored-until-next-run"
PLAN_FACTS = api(V1).plan


# ---------------------------------------------------------------------------------- jobs
def _container(kind: str, rng: random.Random) -> dict[str, Any]:
    facts = KINDS[kind].facts
    out: dict[str, Any] = {"name": facts.container, "image": f"example.com/{facts.name}:{rng.randint(1, 3)}"}
    if rng.random() < 0.5:
        out["env"] = [{"name": "LR", "value": rng.choice(["0.1", "0.01"])}]
    if rng.random() < 0.5:
        out["resources"] = {"limits": {"nvidia.com/gpu": rng.choice([1, 2, 8])}}
    if facts.port_name is not None and rng.random() < 0.3:  # the default port, written out
        out["ports"] = [{"name": facts.port_name, "containerPort": facts.port}]
    return out


def _replica(kind: str, rng: random.Random, count: int) -> dict[str, Any]:
    out: dict[str, Any] = {"template": {"spec": {"containers": [_container(kind, rng)]}}}
    if rng.random() < 0.8:
        out["replicas"] = count
    choice = rng.random()
    if choice < 0.3:
        out["restartPolicy"] = KINDS[kind].facts.default_restart  # the default, written out
    elif choice < 0.5:
        out["restartPolicy"] = rng.choice(["OnFailure", "Never", "ExitCode", "Always"])
    return out


def generated_job(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(sorted(KINDS))
    facts = KINDS[kind].facts
    types = [t for t in facts.replica_types if rng.random() < 0.7] or [facts.replica_types[-1]]
    spec: dict[str, Any] = {facts.replica_specs: {t: _replica(kind, rng, rng.randint(1, 3)) for t in types}}
    if facts.elastic and "Worker" in types and rng.random() < 0.4:
        spec["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": rng.randint(2, 6)}
    policy: dict[str, Any] = {}
    for name, values in (("backoffLimit", [0, 3]), ("activeDeadlineSeconds", [600, 3600]),
                         ("ttlSecondsAfterFinished", [60]), ("cleanPodPolicy", ["None", "Running", "All"]),
                         ("suspend", [True, False])):
        if rng.random() < 0.3:
            policy[name] = rng.choice(values)
    if rng.random() < 0.3:
        policy["schedulingPolicy"] = {"minAvailable": rng.randint(1, 3)}
    if policy:
        spec["runPolicy"] = policy
    meta: dict[str, Any] = {"name": "j", "namespace": "ns", "uid": "u-1", "labels": {"team": "nlp"}}
    if rng.random() < 0.3:
        meta["annotations"] = {marks.RESTART_SCOPE: marks.RESTART_SCOPE_JOB}
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": meta, "spec": spec}


# ---------------------------------------------------------------------------------- edits
def _replicas(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"][KINDS[job["kind"]].facts.replica_specs]


def _some(job: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    return _replicas(job)[rng.choice(sorted(_replicas(job)))]


def _pod(job: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    return _some(job, rng)["template"]["spec"]["containers"][0]


def _count(job, rng):
    _some(job, rng)["replicas"] = rng.randint(1, 4)


def _worker_count(job, rng):
    worker = _replicas(job).get("Worker")
    if worker is not None:
        worker["replicas"] = rng.randint(1, 6)


def _image(job, rng):
    _pod(job, rng)["image"] = f"example.com/x:{rng.randint(1, 3)}"


def _env(job, rng):
    pod = _pod(job, rng)
    if pod.pop("env", None) is None:
        pod["env"] = [{"name": "SEED", "value": str(rng.randint(0, 2))}]


def _resources(job, rng):
    _pod(job, rng)["resources"] = {"limits": {"nvidia.com/gpu": rng.choice([1, 4])}}


def _restart_policy(job, rng):
    replica = _some(job, rng)
    if rng.random() < 0.5:
        replica.pop("restartPolicy", None)
    else:
        replica["restartPolicy"] = rng.choice(["OnFailure", "Never", "ExitCode", "Always",
                                               KINDS[job["kind"]].facts.default_restart])


def _default_port(job, rng):
    facts = KINDS[job["kind"]].facts
    if facts.port_name is not None:
        _pod(job, rng)["ports"] = [{"name": facts.port_name, "containerPort": facts.port}]


def _run_policy(job, rng):
    policy = job["spec"].setdefault("runPolicy", {})
    name = rng.choice(["backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished", "cleanPodPolicy"])
    if name in policy and rng.random() < 0.5:
        del policy[name]
    else:
        policy[name] = {"backoffLimit": rng.randint(0, 5), "activeDeadlineSeconds": rng.choice([60, 7200]),
                        "ttlSecondsAfterFinished": 30, "cleanPodPolicy": rng.choice(["None", "All"])}[name]


def _scheduling(job, rng):
    policy = job["spec"].setdefault("runPolicy", {})
    if "schedulingPolicy" in policy and rng.random() < 0.4:
        del policy["schedulingPolicy"]
    else:
        policy["schedulingPolicy"] = {"minAvailable": rng.randint(1, 3), "priorityClass": rng.choice(["hi", "lo"])}


def _suspend(job, rng):
    policy = job["spec"].setdefault("runPolicy", {})
    policy["suspend"] = not policy.get("suspend", False)


def _elastic(job, rng):
    if KINDS[job["kind"]].facts.elastic and "Worker" in _replicas(job):
        if "elasticPolicy" in job["spec"] and rng.random() < 0.3:
            del job["spec"]["elasticPolicy"]
        else:
            job["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": rng.randint(2, 8)}


def _scope(job, rng):
    annotations = job["metadata"].setdefault("annotations", {})
    if annotations.pop(marks.RESTART_SCOPE, None) is None:
        annotations[marks.RESTART_SCOPE] = marks.RESTART_SCOPE_JOB


def _metadata(job, rng):
    job["metadata"]["labels"]["team"] = rng.choice(["nlp", "vision"])
    job["metadata"].setdefault("annotations", {})["owner"] = rng.choice(["a", "b"])


def _template_labels(job, rng):
    _some(job, rng)["template"].setdefault("metadata", {})["labels"] = {"tier": rng.choice(["a", "b"])}


EDITS: list[Callable[[dict[str, Any], random.Random], None]] = [
    _count, _worker_count, _image, _env, _resources, _restart_policy, _default_port, _run_policy, _scheduling,
    _suspend, _elastic, _scope, _metadata, _template_labels]


def generated_edit(job: dict[str, Any], rng: random.Random) -> tuple[dict[str, Any], list[str]]:
    new = copy.deepcopy(job)
    names = []
    for edit in rng.sample(EDITS, rng.randint(1, 3)):
        edit(new, rng)
        names.append(edit.__name__.strip("_"))
    return new, names


# ---------------------------------------------------------------------------------- both sides
def plan_defers(old: dict[str, Any], new: dict[str, Any], state: str, started: bool | None) -> bool:
    """What `train-compile plan` says of the edit under train-controller, the job in `state`
    (`started`: what --live read of its run; None offline)."""
    verdict = judge.update(job_aspects(old, new, PLAN_FACTS), judge.Context((V1, OURS), state, started=started))
    return DEFERRED in verdict.hazards


def controller_defers(old: dict[str, Any], new: dict[str, Any], started: bool) -> bool:
    """Whether train-controller's pass on `new` defers its change: the run record is the one
    the run of `old` left (ended if `old` was suspended), and a suspended job's pass starts none;
    a run that has not started is replaced, not deferred."""
    kind = KINDS[new["kind"]]
    if is_suspended(defaulted(new, kind)):
        return False  # the suspended branch: the run ends, nothing is deferred
    hashed = spec_hash(run_spec(old, kind))
    record = {"metadata": {"name": f"j-{hashed}", "labels": {HASH_LABEL: hashed},
                           "annotations": {ENDED: SUSPENDED} if is_suspended(defaulted(old, kind)) else {}}}
    return next_step(record, spec_hash(run_spec(new, kind)), started=started) == DEFER


@pytest.mark.parametrize("seed", range(4), ids=lambda s: f"seed {s}")
def test_the_plan_says_deferred_exactly_when_the_controller_defers(seed: int) -> None:
    rng = random.Random(seed)
    found = {True: 0, False: 0}
    for case in range(CASES // 4):
        old = generated_job(rng)
        new, edits = generated_edit(old, rng)
        state = rng.choice(["unknown", "Created", "Running", "Restarting"])
        # offline the plan cannot know whether the run started, and predicts for a started one
        started = True if state == "unknown" else rng.choice([True, False])
        plan = plan_defers(old, new, state, None if state == "unknown" else started)
        controller = controller_defers(old, new, started)
        assert plan == controller, (f"seed {seed} case {case}: {old['kind']} edited by {edits} in state {state}: "
                                    f"started={started}: the plan says deferred={plan}, the controller defers={controller}\n"
                                    f"old={old}\nnew={new}")
        found[controller] += 1
    assert found[True] and found[False], found  # both answers were exercised


# ---------------------------------------------------------------------------------- states
T0 = datetime(2026, 11, 28, 7, 0, tzinfo=timezone.utc)


def _time(rng: random.Random) -> Any:
    at = T0 + timedelta(seconds=rng.randint(0, 4))
    return rng.choice([at.strftime("%Y-%m-%dT%H:%M:%SZ"), at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                       at.isoformat(), None, "yesterday"])


def generated_live_job(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(["PyTorchJob", "TFJob", "TrainJob"])
    types = ["Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed", "Complete", "PodsReady"]
    conditions = [{"type": rng.choice(types), "status": rng.choice(["True", "True", "False"]),
                   "lastTransitionTime": _time(rng), "reason": "r", "message": "m"} for _ in range(rng.randint(0, 4))]
    status: dict[str, Any] = {"conditions": conditions}
    if kind == "TrainJob" and rng.random() < 0.6:
        status["jobsStatus"] = [{"name": "node", "active": rng.randint(0, 1), "ready": rng.randint(0, 1)}]
    api_version = "trainer.kubeflow.org/v1alpha1" if kind == "TrainJob" else "kubeflow.org/v1"
    return {"apiVersion": api_version, "kind": kind, "status": status,
            "metadata": {"name": "j", "namespace": "ns", "creationTimestamp": "2026-11-28T06:00:00Z"}}


def test_the_plans_state_of_a_job_is_the_state_status_prints() -> None:
    rng = random.Random(7)
    seen = set()
    for case in range(CASES):
        obj = generated_live_job(rng)
        spec = SpecJob("prod", "ns", "j", obj["kind"], obj["apiVersion"], "jobs/j.yaml", 1, {"metadata": {}, "spec": {}})
        printed = report(spec, obj, pods={}, events={}, now=T0).state
        planned = state_of(obj)
        assert printed is not None
        assert (planned.state, planned.since) == (printed.state, printed.since_time), (case, obj)
        seen.add(planned.state)
    assert seen == {"Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed"}
