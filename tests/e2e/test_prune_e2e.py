"""A job removed from git is deleted and never runs again: real Flux and Argo CD prune a
failed, a running and a finished job of every target, and no pod is created afterwards.

The world (`prune_kit`) runs each target's real controller on its own namespace:
kubeflow-v1 PyTorchJobs under train-controller and under the upstream operator v1.9.4,
trainer-v2 TrainJobs under Kubeflow Trainer v2.3.0 + JobSet v0.12.0. Each round is one
base commit (the three jobs in every environment, for both engines) and one head commit
(all of them removed); a recorder sees every pod created. A round ends on positive
signals only: every engine reports the head commit synced, no pruned job is left in the
API, their pods are collected, and the recorder has delivered a marker pod created after
all that. Then not one pod may have been created since the head commit.

Why: Argo CD prunes with foreground propagation by default; the job then lingers with a
deletionTimestamp while the garbage collector deletes its children, and Trainer v2.3.0
re-creates the JobSet of a failed or running TrainJob meanwhile (kubeflow/trainer#3737):
the job ran again until the garbage collector won a round (with foreground pruning this
test saw 6 to 165 pods created, none of a kubeflow-v1 job). The generated Applications say `PrunePropagationPolicy=background`
(and carry the background resources finalizer, checked when an Application is deleted);
Flux always prunes in the background. A loaded machine (busy loops on every core during
the prune) is where the foreground race was won by the Trainer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest
from e2e_kit import active, running
from prune_kit import (PODS, PYTORCHJOBS, STATES, TARGETS, Recorder, by_job, cpu_load, create_namespaces, key,
                       make_world, pod_marker, pytorchjob_marker, wait_gone, wait_states, write_sources)

from testworld import gitops
from testworld.argocd import NAMESPACE as ARGOCD_NAMESPACE
from testworld.argocd import REFRESH
from testworld.flux import NAMESPACE as FLUX_NAMESPACE
from testworld.watching import RESOURCES, Missing, wait_for
from testworld.world import World

ENGINES = gitops.ENGINES
PREFIX = "prune"
APPS = [f"{PREFIX}-{env}" for env in TARGETS]  # one Kustomization / Application per environment


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with running(make_world(), "the pruning world") as world:
        create_namespaces(world)
        yield world


@pytest.fixture(scope="module")
def loop(world) -> gitops.Loop:
    return gitops.Loop(world)


@pytest.fixture(scope="module")
def recorder(world) -> Iterator[Recorder]:
    rec = Recorder(world, PODS, pod_marker)
    try:
        yield rec
    finally:
        rec.stop()


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("prune-sources")
    return {engine: root / engine for engine in ENGINES}


def keeper(engine: str) -> str:
    """A finished job that stays in git: an environment is never empty (a build with no
    TrainJob is an error), and the engines' health settles on it."""
    return f"{engine}-keeper"


def jobs_of(engine: str, round_: str) -> dict[str, str]:
    return {f"{engine}-{state}-{round_}": state for state in STATES}


def commit(loop: gitops.Loop, sources: dict[str, Path], jobs: dict[str, dict[str, str]], message: str) -> str:
    """engine -> {job name: state}: exactly these jobs in git for that engine, committed."""
    for engine in ENGINES:
        write_sources(sources[engine], {keeper(engine): "finished", **jobs[engine]})
        # a short Flux timeout: a running job holds each reconciliation's health wait that long
        loop.publish(engine, sources[engine], prefix=PREFIX, folder=f"{PREFIX}/", timeout="10s")
    return loop.commit(message)


def synced(loop: gitops.Loop, sha: str) -> None:
    """Every Kustomization applied `sha` and is Ready; every Application synced it, its
    sync operation done, Healthy (only the finished keepers are left)."""
    for name in APPS:
        loop.flux.reconcile("Kustomization", name)  # its last health wait may have timed out
        loop.wait_flux(name, sha, ready="True", timeout=300)
        loop.wait_argocd(name, sha, timeout=300)


class State:
    keepers: dict[tuple[str, str], str] = {}  # (namespace, name) -> uid


STATE = State()


def keeper_uids(world: World) -> dict[tuple[str, str], str]:
    return {(ns, keeper(e)): world.client.get(res, ns, keeper(e))["metadata"]["uid"]
            for e in ENGINES for ns, res, _ in TARGETS.values()}


def test_the_keepers_sync_and_the_applications_prune_in_the_background(world, loop, sources):
    sha = commit(loop, sources, {e: {} for e in ENGINES}, "prune: the keepers")
    for engine in ENGINES:
        loop.install(engine, f"{PREFIX}/")
    loop.poke()
    wait_states(world, {keeper(e): "finished" for e in ENGINES})
    synced(loop, sha)
    STATE.keepers = keeper_uids(world)
    for name in APPS:
        app = world.client.get(RESOURCES["Application"], ARGOCD_NAMESPACE, name)
        assert "PrunePropagationPolicy=background" in app["spec"]["syncPolicy"]["syncOptions"]
        assert app["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io/background"]


ROUNDS = [pytest.param("idle", id="on an idle machine"), pytest.param("loaded", id="on a loaded machine")]


@pytest.mark.parametrize("round_", ROUNDS)
def test_no_pod_is_created_after_failed_running_and_finished_jobs_are_pruned(world, loop, sources, recorder,
                                                                             round_):
    jobs = {engine: jobs_of(engine, round_) for engine in ENGINES}
    commit(loop, sources, jobs, f"prune: failed, running and finished jobs ({round_})")
    wait_states(world, {n: s for e in ENGINES for n, s in jobs[e].items()})
    recorder.caught_up()
    start = recorder.mark()

    with cpu_load() if round_ == "loaded" else nullcontext():
        head = commit(loop, sources, {e: {} for e in ENGINES}, f"prune: remove them ({round_})")
        synced(loop, head)
        wait_gone(world, {n for e in ENGINES for n in jobs[e]})
    recorder.caught_up()

    assert by_job(recorder.created(start)) == {}  # namespace/job -> pods created
    assert keeper_uids(world) == STATE.keepers  # what stayed in git was not touched


def ttl_runs(events: list[tuple[str, dict]], namespace: str, name: str) -> int:
    """How often the job ran to Succeeded and was then deleted (by its TTL)."""
    return sum(1 for t, o in events if t == "DELETED" and key(o) == (namespace, name) and "Succeeded" in active(o))


def argocd_holds(loop: gitops.Loop, app: str, job: str, sha: str) -> None:
    """The Application compared the cluster after a refresh, saw the job Missing, and
    started no sync: auto-sync skipped ("most recent sync already to" `sha`)."""
    loop.argocd.refresh(app)

    def check(objects):
        obj = objects.get((ARGOCD_NAMESPACE, app)) or {}
        status = obj.get("status") or {}
        mine = [r for r in status.get("resources") or [] if r.get("name") == job and r.get("kind") == "PyTorchJob"]
        seen = (REFRESH in (obj["metadata"].get("annotations") or {}), [(r.get("status"), (r.get("health") or {}).get(
            "status")) for r in mine], "operation" in obj, ((status.get("operationState") or {}).get("syncResult") or {}).get(
            "revision"))
        return obj if seen == (False, [("OutOfSync", "Missing")], False, sha) else Missing(str(seen))
    wait_for(loop.world.client, RESOURCES["Application"], check, namespace=ARGOCD_NAMESPACE, timeout=180,
             what=f"{app} refreshed with {job} Missing and no sync")


def test_a_job_kept_in_git_runs_again_after_its_ttl_deleted_it(world, loop, sources):
    """`policy.ttlAfterFinished` on a job kept in git, as `train-compile flux`/`argocd`
    configure the engines, under train-controller and the upstream operator: the job runs,
    its controller deletes it, and each engine creates it again, so it runs again: Flux at
    its next reconciliation (every `--interval`), Argo CD (no self-heal) not on a refresh
    but at the next commit to the repository, even one that changes nothing it syncs."""
    jobs = Recorder(world, PYTORCHJOBS, pytorchjob_marker)
    v1 = [TARGETS[env][0] for env in ("ours", "upstream")]
    try:
        base = commit(loop, sources, {e: {f"{e}-ttl": "ttl"} for e in ENGINES}, "prune: a job with a TTL")
        jobs.wait(lambda ev: all(ttl_runs(ev, ns, f"{e}-ttl") == 1 for e in ENGINES for ns in v1),
                  "every TTL job ran and was deleted")
        for env in ("ours", "upstream"):
            argocd_holds(loop, f"{PREFIX}-{env}", "argocd-ttl", base)

        for env in ("ours", "upstream"):  # Flux's next reconciliation, asked for now
            loop.flux.reconcile("Kustomization", f"{PREFIX}-{env}")
        jobs.wait(lambda ev: all(ttl_runs(ev, ns, "flux-ttl") == 2 for ns in v1), "Flux's TTL jobs ran again")
        jobs.caught_up()
        assert all(len(jobs.created(namespace=ns, name="argocd-ttl")) == 1 for ns in v1)  # Argo CD held

        (loop.repo.path / "NOTES.md").write_text("A commit that changes no job.\n")
        loop.commit("notes")
        jobs.wait(lambda ev: all(ttl_runs(ev, ns, "argocd-ttl") == 2 for ns in v1), "Argo CD's TTL jobs ran again")
    finally:
        jobs.stop()
    head = commit(loop, sources, {e: {} for e in ENGINES}, "prune: the TTL jobs leave git")
    synced(loop, head)
    wait_gone(world, {f"{e}-ttl" for e in ENGINES})


def test_deleting_the_applications_and_kustomizations_deletes_their_jobs_without_a_rerun(world, loop, sources,
                                                                                      recorder):
    """Argo CD deletes an Application's resources with the propagation its finalizer names
    (background here); Flux deletes a Kustomization's with prune: true, in the background."""
    jobs = {engine: jobs_of(engine, "deleted") for engine in ENGINES}
    commit(loop, sources, jobs, "prune: failed, running and finished jobs (deleted with their engine objects)")
    wait_states(world, {n: s for e in ENGINES for n, s in jobs[e].items()})
    recorder.caught_up()
    start = recorder.mark()

    world.kubectl("delete", "-n", ARGOCD_NAMESPACE, "applications.argoproj.io", *APPS, "--wait=false")
    world.kubectl("delete", "-n", FLUX_NAMESPACE, "kustomizations.kustomize.toolkit.fluxcd.io", *APPS,
                  "--wait=false")
    for res, ns in ((RESOURCES["Application"], ARGOCD_NAMESPACE), (RESOURCES["Kustomization"], FLUX_NAMESPACE)):
        wait_for(world.client, res, lambda objects, ns=ns: Missing(str(sorted(objects))) if any(
            (ns, n) in objects for n in APPS) else True, namespace=ns, timeout=300, what=f"{res.kind}s deleted")
    wait_gone(world, {n for e in ENGINES for n in [*jobs[e], keeper(e)]})
    recorder.caught_up()

    assert by_job(recorder.created(start)) == {}  # namespace/job -> pods created
