"""Real Flux and Argo CD sync compiled trainer-v2 TrainJobs from git into a world running the
real Kubeflow Trainer v2.3.0 and JobSet v0.12.0 (webhooks on 127.0.0.1): TrainJob ->
JobSet -> batch/v1 Jobs (kube-controller-manager's job controller) -> pods kube-scheduler
places on kwok nodes. Every assertion reads the engines' own status or the API server.

The scenarios run in order on one repository, each a commit, for both engines at once
(each on its own namespaces, `<engine>-<namespace>`):
1. examples/project-v2's `prod` (trainer-v2) environment, one job per stock runtime
   (torch, deepspeed/MPI, jax, xgboost), plus a job whose quantities are not in canonical
   form: all Complete; t5-jax, suspended in git, waits until Kueue (emulated: no Kueue in
   this world) flips `spec.suspend`, then completes. Beside them `whole-job`
   (`restartScope: job`: a TrainingRuntime of its own, which Trainer's webhook needs before
   the TrainJob, dry runs included) Completes too, in a namespace git creates: under stock
   kustomize-controller flags the environment's prerequisites Kustomization applies the
   Namespace and the runtime, and the environment's Kustomization, which depends on it,
   the TrainJob.
2. a re-sync of the finished jobs with an edit of a mutable field (an annotation): both
   engines apply it with no drift and no refusal, and nothing runs again. Before the
   compiler wrote quantities as Trainer's webhook stores them, this commit was refused:
   `spec.trainer: Invalid value: "object": field is immutable`.
3. a failing TrainJob: Failed; Argo CD Degraded with the job's message, Flux names it.
4. the failed TrainJob and `whole-job` removed from git are pruned with their JobSets (and
   `whole-job`'s runtime, by the prerequisites' Kustomization), and a TrainJob created
   suspended from git (Argo CD: Suspended; Flux: in progress until its timeout), then
   resumed from git: it runs to Complete.

Scenario 4 once failed on a fresh machine, twice: Argo CD pruned the failed TrainJob with
its default foreground propagation; Trainer v2.3.0 ignores the deletionTimestamp and
drops the Failed condition (kubeflow/trainer#3737), so it re-created the JobSet and its
pods as fast as the garbage collector deleted them, and the TrainJob stayed until the
garbage collector won a round (the scenario passed when it won the first). The generated Applications now
prune in the background (`PrunePropagationPolicy=background`): the TrainJob is gone at
once and nothing reconciles it; the scenario checks that the prune ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_kit import running
from trainer_v2_kit import (JOBSETS, NAMESPACES, PROJECT, RUNTIMES, SOLO, TRAINJOBS, active, condition, get,
                            make_world, pods_of, project_sources, storage_for, wait_trainjobs)

from testworld import gitops
from testworld.watching import Missing, wait_for
from testworld.world import World

ENGINES = gitops.ENGINES
EXAMPLE = {"llm-finetune", "allreduce-mpi", "fraud-xgboost", "t5-jax"}  # one per stock runtime
APP = KUSTOMIZATION = "v2-prod"
SOLO_APP = "solo-e2e"
PREREQUISITES = "solo-e2e-prerequisites"  # the Flux Kustomization of the solo environment's runtimes
OWNER = "kustomize.toolkit.fluxcd.io/name"


def complete(job: dict) -> bool:
    return "Complete" in active(job)


class State:
    sha = ""
    uids: dict[tuple[str, str], tuple[str, str]] = {}


STATE = State()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with running(make_world(), "the Trainer v2 GitOps world") as world:
        yield world


@pytest.fixture(scope="module")
def loop(world) -> gitops.Loop:
    return gitops.Loop(world)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """engine -> {"project": project-v2, "solo": the scenario jobs}, namespaces prefixed."""
    root = tmp_path_factory.mktemp("v2-sources")
    out = {}
    for engine in ENGINES:
        solo = project_sources(SOLO, engine, root / engine / "solo")
        (solo / "fails.yaml").unlink()  # scenario 3
        (solo / "paused.yaml").unlink()  # scenario 4
        out[engine] = {"project": project_sources(PROJECT, engine, root / engine / "project"), "solo": solo}
    return out


def wait_pruned(world: World, namespace: str, name: str, timeout: float = 180, *, runtime: bool = False) -> None:
    """The TrainJob is gone, and so is its JobSet (none re-created: the last word of a watch),
    and with ``runtime`` its own TrainingRuntime."""
    for res in (TRAINJOBS, JOBSETS, *([RUNTIMES] if runtime else [])):
        wait_for(world.client, res, lambda objects, res=res: Missing(f"{res.kind} {namespace}/{name} still there")
                 if (namespace, name) in objects else True, namespace=namespace, timeout=timeout,
                 what=f"{res.kind} {namespace}/{name} pruned")


def publish(loop: gitops.Loop, sources: dict[str, dict[str, Path]]) -> None:
    for engine in ENGINES:
        loop.publish(engine, sources[engine]["project"], prefix="v2", env="prod", timeout="3m")
        # a suspended job keeps Flux's health check waiting for the whole timeout (Flux has
        # no Suspended): short, so the resume commit is not held for long
        loop.publish(engine, sources[engine]["solo"], prefix="solo", folder="solo/", env="e2e", timeout="2m")


def test_the_examples_trainer_v2_environment_runs_every_stock_runtime_to_complete(world, loop, sources):
    for engine in ENGINES:
        storage_for(world, f"{engine}-ml")
    publish(loop, sources)
    STATE.sha = loop.commit("trainer-v2: examples/project-v2 prod and a job with written quantities")
    for engine in ENGINES:
        loop.install(engine)
        loop.install(engine, "solo")
    loop.poke()

    for engine in ENGINES:
        wait_trainjobs(world, f"{engine}-ml", complete, EXAMPLE - {"t5-jax"}, "Complete")
        wait_trainjobs(world, f"{engine}-v2", complete, {"quantities", "whole-job"}, "Complete")
        jobset = world.client.get(JOBSETS, f"{engine}-v2", "whole-job")  # built from the job's own runtime
        assert jobset["spec"]["failurePolicy"]["maxRestarts"] == 1, (engine, jobset["spec"].get("failurePolicy"))
        held = wait_trainjobs(world, f"{engine}-ml", lambda j: "Suspended" in active(j), {"t5-jax"}, "Suspended")
        assert not pods_of(world, f"{engine}-ml", "t5-jax"), engine
        assert held["t5-jax"]["spec"]["suspend"] is True
    app = loop.wait_argocd(APP, STATE.sha, health="Suspended")
    jobs = {r["name"]: r["health"]["status"] for r in app["status"]["resources"] if r["kind"] == "TrainJob"}
    assert jobs == {"llm-finetune": "Healthy", "allreduce-mpi": "Healthy", "fraud-xgboost": "Healthy",
                    "t5-jax": "Suspended"}, jobs
    loop.wait_argocd(SOLO_APP, STATE.sha)
    loop.wait_flux("solo-e2e", STATE.sha, ready="True")
    loop.wait_flux(PREREQUISITES, STATE.sha, ready="True")
    # stock kustomize-controller: no --custom-apply-stage-kinds gives TrainingRuntimes a stage of their own
    [flags] = [c.extra for c in loop.flux.procs if c.name == "kustomize-controller"]
    assert not [f for f in flags if f.startswith("--custom-apply-stage-kinds")], flags
    # one owner each: the runtime and the namespace git created are the prerequisites' Kustomization's
    runtime = world.client.get(RUNTIMES, "flux-v2", "whole-job")
    namespace = world.client.get(NAMESPACES, None, "flux-v2")
    assert runtime["metadata"]["labels"][OWNER] == namespace["metadata"]["labels"][OWNER] == PREREQUISITES
    assert get(world, "flux-v2", "whole-job")["metadata"]["labels"][OWNER] == "solo-e2e"

    # What Kueue does on admission (no Kueue here): resume the job; the engines leave
    # spec.suspend of a queued job to Kueue.
    for engine in ENGINES:
        world.kubectl("patch", "trainjob", "t5-jax", "-n", f"{engine}-ml", "--type=merge",
                      "--field-manager=kueue-admission", "-p", '{"spec": {"suspend": false}}')
        wait_trainjobs(world, f"{engine}-ml", complete, {"t5-jax"}, "Complete")
        for name in EXAMPLE:
            pods = pods_of(world, f"{engine}-ml", name)
            assert pods and all(p["spec"]["nodeName"].startswith("gke-a100-") for p in pods) or name == "fraud-xgboost"
    loop.poke()
    loop.wait_flux(KUSTOMIZATION, STATE.sha, ready="True")
    loop.wait_argocd(APP, STATE.sha)
    for engine in ENGINES:
        for ns, name in ((f"{engine}-ml", n) for n in EXAMPLE):
            job = get(world, ns, name)
            STATE.uids[(ns, name)] = (job["metadata"]["uid"], condition(job, "Complete")["lastTransitionTime"])
        job = get(world, f"{engine}-v2", "quantities")
        STATE.uids[(f"{engine}-v2", "quantities")] = (job["metadata"]["uid"], condition(job, "Complete")["lastTransitionTime"])


def test_a_resync_of_finished_jobs_with_an_edited_annotation_is_applied_without_drift_or_refusal(world, loop, sources):
    for engine in ENGINES:
        gitops.edit_spec(sources[engine]["project"] / "fraud-xgboost.yaml",
                         lambda d: d["metadata"]["annotations"].__setitem__("acme.dev/owner", "fraud-ml"))
    publish(loop, sources)
    STATE.sha = loop.commit("trainer-v2: fraud-xgboost has a new owner")
    for name in (KUSTOMIZATION, "solo-e2e"):
        k = loop.wait_flux(name, STATE.sha, ready="True", timeout=180)
        assert condition(k, "Ready")["reason"] == "ReconciliationSucceeded", k["status"]
    for name in (APP, SOLO_APP):
        app = loop.wait_argocd(name, STATE.sha, timeout=180)
        assert app["status"]["operationState"]["phase"] == "Succeeded", app["status"]["operationState"]
        drift = [r for r in app["status"]["resources"] if r.get("status") != "Synced"]
        assert not drift, drift
    for (ns, name), (uid, done) in STATE.uids.items():
        job = get(world, ns, name)
        assert (job["metadata"]["uid"], condition(job, "Complete")["lastTransitionTime"]) == (uid, done), (ns, name)
        if name == "fraud-xgboost":
            assert job["metadata"]["annotations"]["acme.dev/owner"] == "fraud-ml", ns


def test_a_failing_trainjob_is_failed_degraded_in_argocd_and_named_by_flux(world, loop, sources):
    for engine in ENGINES:
        (sources[engine]["solo"] / "fails.yaml").write_text((SOLO / "fails.yaml").read_text())
    publish(loop, sources)
    STATE.sha = loop.commit("trainer-v2: a job that fails")
    failed = {}
    for engine in ENGINES:
        jobs = wait_trainjobs(world, f"{engine}-v2", lambda j: "Failed" in active(j), {"fails"}, "Failed")
        failed[engine] = condition(jobs["fails"], "Failed")
    app = loop.wait_argocd(SOLO_APP, STATE.sha, health="Degraded")
    health = next(r["health"] for r in app["status"]["resources"] if r["kind"] == "TrainJob" and r["name"] == "fails")
    assert health == {"status": "Degraded", "message": failed["argocd"]["message"]}, (health, failed["argocd"])
    k = loop.wait_flux("solo-e2e", STATE.sha, ready="False", reason="HealthCheckFailed", timeout=240)
    message = condition(k, "Ready")["message"]
    assert "TrainJob/flux-v2/fails status: 'Failed'" in message, message


def test_a_trainjob_suspended_in_git_is_held_then_resumed_from_git(world, loop, sources):
    for engine in ENGINES:
        (sources[engine]["solo"] / "fails.yaml").unlink()
        (sources[engine]["solo"] / "whole-job.yaml").unlink()
        (sources[engine]["solo"] / "paused.yaml").write_text((SOLO / "paused.yaml").read_text())
    publish(loop, sources)
    STATE.sha = loop.commit("trainer-v2: drop fails and whole-job, a suspended job")
    for engine in ENGINES:
        wait_pruned(world, f"{engine}-v2", "fails")
        wait_pruned(world, f"{engine}-v2", "whole-job", runtime=True)
        wait_trainjobs(world, f"{engine}-v2", lambda j: "Suspended" in active(j), {"paused"}, "Suspended")
        assert not pods_of(world, f"{engine}-v2", "paused"), engine
    loop.wait_argocd(SOLO_APP, STATE.sha, health="Suspended")
    k = loop.wait_flux("solo-e2e", STATE.sha, ready="False", reason="HealthCheckFailed", timeout=240)
    message = condition(k, "Ready")["message"]
    assert "TrainJob/flux-v2/paused status: 'InProgress'" in message, message  # Flux has no Suspended

    for engine in ENGINES:
        gitops.edit_spec(sources[engine]["solo"] / "paused.yaml", lambda d: d["spec"].pop("policy"))
    publish(loop, sources)
    STATE.sha = loop.commit("trainer-v2: resume paused")
    for engine in ENGINES:
        jobs = wait_trainjobs(world, f"{engine}-v2", complete, {"paused"}, "Complete")
        assert jobs["paused"]["spec"]["suspend"] is False, engine
    loop.wait_flux("solo-e2e", STATE.sha, ready="True")
    app = loop.wait_argocd(SOLO_APP, STATE.sha)
    assert not [r for r in app["status"]["resources"] if r.get("status") != "Synced"]
