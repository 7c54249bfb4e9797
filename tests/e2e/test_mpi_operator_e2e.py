"""Compiled v2beta1 MPIJobs on the real mpi-operator v0.8.0, synced by Flux and Argo CD, queued by Kueue v0.19.2.

One world (`mpi_operator_kit`), one base commit and one head commit per engine. The base:
a job that succeeds (its environment's Kustomization Ready, its Application Healthy), one
whose pods fail under restart Never and backoffLimit 1 (the launcher's Job retries once, the
failed workers are never made again, the MPIJob Failed: Flux Failed, Argo CD Degraded), the
plan's cases running or suspended, a job whose TTL deletes only its launcher Job, and a
low-priority job holding Kueue's quota. Then `train-compile plan` of the head, offline, and
the head committed: each case asserts that what the engines and the mpi-operator did is what
the plan said (a resume starts a new run, a scale-up adds a worker from the new spec beside
the old ones while the launcher Job keeps its template and backoffLimit, a suspend deletes
the workers), and the high-priority job preempts the low one with neither engine undoing
Kueue's suspend. Kueue v0.17.0 admits and preempts compiled MPIJobs in
tests/testworld/engines/test_kueue_versions_world.py, whose worlds run both releases anyway.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from e2e_kit import running as started
from mpi_operator_kit import (BATCH_JOBS, MPIJOBS, QUEUE, Repo, active, app_resource, condition, get, image,
                              make_world, mpi_spec, namespace, queue_objects, running, train_compile, wait_job,
                              wait_pods, wait_workload)
from plan_engines_kit import planned

from testworld import gitops, kueue
from testworld.watching import Missing, wait_for

ENGINES = gitops.ENGINES
IMAGE_2 = "ghcr.io/acme/mpi-bench:2"
# what the plan says of the head, offline, per (environment, job)
SAID = {("runs", "held"): ["restarts-run"], ("runs", "reshape"): ["mixed-run", "ignored-until-next-run"],
        ("runs", "stopper"): ["suspends-run"], ("runs", "ttl"): [], ("queued", "q-low"): [],
        ("queued", "q-high"): []}


class State:
    base: dict[tuple[str, str], dict] = {}  # (namespace, name) -> what the base left: uids, images
    plans: dict[str, dict] = {}


STATE = State()


@pytest.fixture(scope="module")
def world() -> Iterator:
    with started(make_world(kueue.V0_19), "the mpi-operator world (Kueue v0.19.2)") as world:
        yield world


@pytest.fixture(scope="module")
def repo(world) -> Repo:
    return Repo(gitops.Loop(world), ENGINES)


def test_the_base_syncs_and_its_jobs_run_fail_wait_and_queue(world, repo):
    for engine in ENGINES:
        world.kubectl("create", "namespace", namespace(engine, "queued"))
        world.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": queue_objects(engine, cpu="2")}))
    repo.setup()
    repo.write("pi", mpi_spec("pi", "ok", seconds="3"))
    repo.write("broken", mpi_spec("broken", "bad", seconds="2", exit_code="1",
                                  policy={"restart": "Never", "backoffLimit": 1}))
    repo.write("held", mpi_spec("held", "runs", seconds="3", policy={"suspend": True}))
    repo.write("reshape", mpi_spec("reshape", "runs", policy={"backoffLimit": 2}))
    repo.write("stopper", mpi_spec("stopper", "runs"))
    repo.write("ttl", mpi_spec("ttl", "runs", seconds="2", policy={"ttlAfterFinished": "5s"}))
    repo.write("q-low", mpi_spec("q-low", "queued", scheduling={"priority": "low"}))
    sha = repo.publish_and_commit("mpi-operator: the base")
    repo.install()

    for engine in ENGINES:
        ok, bad, runs, queued = (namespace(engine, e) for e in ("ok", "bad", "runs", "queued"))
        wait_job(world, ok, "pi", "Succeeded")
        failed = wait_job(world, bad, "broken", "Failed")
        assert condition(failed, "Failed")["reason"].startswith("BackoffLimitExceeded"), condition(failed, "Failed")
        launcher = get(world, BATCH_JOBS, bad, "broken-launcher")
        assert launcher["spec"]["backoffLimit"] == 1 and launcher["status"].get("failed") == 2, launcher["status"]
        workers = wait_pods(world, bad, "broken", "worker", lambda ps: len(ps) == 2, "left as they ended")
        assert {p["status"]["phase"] for p in workers} == {"Failed"}  # never made again
        assert (failed["status"].get("replicaStatuses") or {}).get("Launcher", {}).get("failed") == 2
        held = wait_job(world, runs, "held", "Suspended")
        assert get(world, BATCH_JOBS, runs, "held-launcher")["spec"]["suspend"] is True
        for name in ("reshape", "stopper"):
            wait_job(world, runs, name, "Running")
        pods = wait_pods(world, runs, "reshape", "worker", lambda ps: running(ps, 2), "Running")
        launcher_pod, = wait_pods(world, runs, "reshape", "launcher", lambda ps: running(ps, 1), "Running")
        STATE.base[(runs, "reshape")] = {"workers": {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods},
                                         "launcher": launcher_pod["metadata"]["uid"]}
        assert held["spec"]["runPolicy"]["suspend"] is True
        wait_workload(world, queued, "q-low", lambda w: condition(w, "Admitted").get("status") == "True", "admitted")
        wait_pods(world, queued, "q-low", "worker", lambda ps: running(ps, 2), "Running")

    # the engines' own verdicts: the succeeding environment healthy, the failing one failed
    repo.loop.wait_flux("mpi-ok", sha, ready="True")
    flux_bad = repo.loop.wait_flux("mpi-bad", sha, ready="False")
    assert "MPIJob/flux-bad/broken status: 'Failed'" in condition(flux_bad, "Ready")["message"], condition(flux_bad, "Ready")
    repo.loop.wait_argocd("mpi-ok", sha, health="Healthy")
    repo.loop.wait_argocd("mpi-bad", sha, health="Degraded")
    runs_app = repo.loop.wait_argocd("mpi-runs", sha, health="Progressing",
                                     ok=lambda a: app_resource(a, "MPIJob", "held").get("health", {}).get("status") == "Suspended")
    assert app_resource(runs_app, "MPIJob", "reshape")["health"]["status"] == "Progressing"
    # the queued job: Kueue flipped suspend and wrote its labels; the ignore rules keep it Synced
    repo.loop.wait_argocd("mpi-queued", sha, health="Progressing")


def test_a_ttl_deletes_only_the_launcher_job_and_the_mpijob_stays_finished(world, repo):
    """No `reruns-finished` here: the TTL is the launcher Job's, so no engine creates the MPIJob again."""
    uids = {}
    for engine in ENGINES:
        runs = namespace(engine, "runs")
        uids[runs] = wait_job(world, runs, "ttl", "Succeeded")["metadata"]["uid"]
        wait_for(world.client, BATCH_JOBS, lambda objs: True if (runs, "ttl-launcher") not in objs else Missing("there"),
                 namespace=runs, timeout=90, what=f"{runs}/ttl-launcher deleted by its TTL")
    repo.loop.poke()  # both engines look at git again: the MPIJob is there, nothing to create
    repo.loop.wait_argocd("mpi-runs", repo.shas[0], health="Progressing")
    for runs, uid in uids.items():
        again = get(world, MPIJOBS, runs, "ttl")
        assert again["metadata"]["uid"] == uid and "Succeeded" in active(again)
        assert get(world, BATCH_JOBS, runs, "ttl-launcher") is None


def test_the_plan_of_the_head_says_what_each_change_will_do(repo):
    repo.edit("held", lambda d: d["spec"].pop("policy"))
    repo.edit("reshape", lambda d: d["spec"].update(nodes=3, image=IMAGE_2, policy={"backoffLimit": 5}))
    repo.edit("stopper", lambda d: d["spec"].update(policy={"suspend": True}))
    repo.write("q-high", mpi_spec("q-high", "queued", scheduling={"priority": "high"}))
    for engine in ENGINES:
        plan = repo.plan(engine)
        STATE.plans[engine] = plan
        got = {key: planned(plan, *key)["hazards"] for key in SAID}
        assert got == SAID, json.dumps(plan, indent=1)[:4000]
        assert planned(plan, "runs", "reshape")["kind"] == "MPIJob"


def test_the_head_syncs_and_each_job_does_what_the_plan_said(world, repo):
    sha = repo.publish_and_commit("mpi-operator: the head")
    for engine in ENGINES:
        runs, queued = namespace(engine, "runs"), namespace(engine, "queued")
        # restarts-run: the resumed job runs from the head spec, to the end
        wait_job(world, runs, "held", "Succeeded")
        # mixed-run: a third worker from the new spec beside the two running old ones
        pods = wait_pods(world, runs, "reshape", "worker", lambda ps: len(ps) == 3 and running(ps, 3), "three Running")
        before = STATE.base[(runs, "reshape")]
        assert {p["metadata"]["name"]: image(p) for p in pods} == {
            "reshape-worker-0": "ghcr.io/acme/mpi-bench:1", "reshape-worker-1": "ghcr.io/acme/mpi-bench:1",
            "reshape-worker-2": IMAGE_2}
        assert {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods if p["metadata"]["name"] != "reshape-worker-2"} \
            == before["workers"]
        # ignored-until-next-run: the launcher Job was made once, its template and backoffLimit stay
        launcher = get(world, BATCH_JOBS, runs, "reshape-launcher")
        assert (launcher["metadata"]["generation"], launcher["spec"]["backoffLimit"]) == (1, 2)
        assert image(launcher["spec"]["template"]) == "ghcr.io/acme/mpi-bench:1"
        launcher_pod, = wait_pods(world, runs, "reshape", "launcher", lambda ps: len(ps) == 1, "one")
        assert launcher_pod["metadata"]["uid"] == before["launcher"]
        assert "Running" in active(get(world, MPIJOBS, runs, "reshape"))
        # suspends-run: the workers deleted, the launcher Job suspended
        wait_job(world, runs, "stopper", "Suspended")
        wait_pods(world, runs, "stopper", "worker", lambda ps: not ps, "deleted")
        assert get(world, BATCH_JOBS, runs, "stopper-launcher")["spec"]["suspend"] is True
        # Kueue: the high-priority job preempts the low one, which Kueue suspends
        wait_workload(world, queued, "q-high", lambda w: condition(w, "Admitted").get("status") == "True", "admitted")
        wait_workload(world, queued, "q-low", lambda w: condition(w, "Evicted").get("reason") == "Preempted", "preempted")
        low = wait_job(world, queued, "q-low", "Suspended")
        assert low["spec"]["runPolicy"]["suspend"] is True
        wait_pods(world, queued, "q-low", "worker", lambda ps: not ps, "deleted by the preemption")
        wait_pods(world, queued, "q-high", "worker", lambda ps: running(ps, 2), "Running")
    # neither engine undoes Kueue's suspend of the preempted job on a later sync
    repo.loop.wait_argocd("mpi-queued", sha, health="Progressing")
    repo.loop.flux.reconcile("Kustomization", "mpi-queued")
    repo.loop.wait_flux("mpi-queued", sha, ready="False")
    for engine in ENGINES:
        low = get(world, MPIJOBS, namespace(engine, "queued"), "q-low")
        assert low["spec"]["runPolicy"]["suspend"] is True and low["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == QUEUE


def test_status_reads_the_v2beta1_mpijobs_and_their_pods_by_role(world, repo):
    done = train_compile("status", str(repo.jobs("flux")), "--env", "runs", "--format", "json",
                         "--kubeconfig", str(world.kubeconfig))
    assert done.returncode in (0, 3, 4), done.stderr  # 4: drift (git moved on from what some jobs run)
    jobs = {j["name"]: j for j in json.loads(done.stdout)["jobs"]}
    assert {n: j["state"] for n, j in jobs.items()} == {"held": "Succeeded", "reshape": "Running",
                                                        "stopper": "Suspended", "ttl": "Succeeded"}
    assert jobs["reshape"]["kind"] == "MPIJob" and jobs["reshape"]["pods"] == {
        "Launcher": {"Running": 1}, "Worker": {"Running": 3}}
