"""Real Kueue, v0.17.0 and v0.19.2, queues jobs that real Flux and Argo CD sync from git; train-controller runs them.

The GitOps world of tests/e2e (one per session) gets Kueue for this module, one release
after the other (the `kueue` fixture's params: pytest runs every scenario on v0.17.0, stops
it, then every scenario on v0.19.2), each confined to its round's two namespaces
(`flux-kueue`, `argocd-kueue`; `flux-kueue19`, `argocd-kueue19`) with its own repository
folder, Flux Kustomization and Argo CD Application (kueue_kit.Round). Kueue v0.19.2 enables
the integrations train-compile's Kueue notice names (its shipped configuration leaves the
kubeflow.org/v1 kinds out), so the notice is what queues its jobs. Per engine, the
platform team's objects (applied directly, as a cluster admin would): a ResourceFlavor
pinned to the A100 nodes, a ClusterQueue with 4 GPUs of it and preemption of lower
priorities, a LocalQueue `gpu-queue`, WorkloadPriorityClasses `low` (100) and `high`
(1000). The jobs are TrainJobs compiled with `scheduling.queue` and, with the
environment's `kueuePriority`, a priority label; each commit lands for both engines.

Every assertion reads Kueue's own status (Workloads' conditions and admissions, recorded
by a watch for the whole module), the jobs' status as train-controller writes it, and
the engines' own status: never a status written by hand. Where the releases differ (v0.19's
WaitForPodsReady, on by default: a PodsReady condition on each admitted Workload), the
assertion says which release does what.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_kit import active, app_resources, get_job, jobs_in, wait_gone, wait_jobs
from kueue_kit import (A100, ENGINES, FLUX_TIMEOUT, GPU, KUEUE_JOBS, QUOTA_FILES, QUOTA_GPUS, WORKLOADS, Round,
                       WorkloadLog, apply, cluster_queue_object, condition, frameworks, local_queue_object,
                       queue_objects)

from controller.jobs.kinds import KINDS
from testworld import gitops
from testworld.argocd import NAMESPACE as ARGOCD_NAMESPACE
from testworld.flux import NAMESPACE as FLUX_NAMESPACE
from testworld.flux import REQUESTED_AT
from testworld.kueue import V0_19, VERSION, Kueue
from testworld.watching import RESOURCES, Missing, wait_for

@pytest.fixture(scope="module", params=[VERSION, V0_19], ids=["kueue v0.17.0", "kueue v0.19.2"])
def kueue(request, world, tmp_path_factory) -> Iterator[Round]:
    """One release's round: Kueue started on the session world for it only (stopped after
    it, its webhooks removed), confined to the round's namespaces."""
    rnd = Round(request.param)
    rnd.part = Kueue(rnd.namespaces, frameworks(rnd.version, tmp_path_factory.mktemp("kueue-notice")),
                     version=rnd.version)
    rnd.part.build()
    rnd.part.start(world)
    try:
        yield rnd
    finally:
        rnd.part.stop()


@pytest.fixture(scope="module")
def workloads(world, kueue) -> Iterator[WorkloadLog]:
    log = WorkloadLog(world.kubeconfig, kueue.namespaces)
    try:
        yield log
    finally:
        log.stop()


@pytest.fixture(scope="module")
def kueue_sources(kueue, tmp_path_factory) -> dict[str, Path]:
    """engine -> the round's sources folder: the project file and the job files added so far."""
    root = tmp_path_factory.mktemp(f"{kueue.name}-sources")
    out = {}
    for engine in ENGINES:
        (root / engine).mkdir()
        shutil.copy(KUEUE_JOBS / "trainforge.yaml", root / engine / "trainforge.yaml")
        out[engine] = root / engine
    return out


def commit(loop: gitops.Loop, rnd: Round, sources: dict[str, Path], files: list[str], message: str) -> str:
    for engine in ENGINES:
        rnd.sources([KUEUE_JOBS / f for f in files], engine, sources[engine])
        loop.publish(engine, sources[engine], prefix=rnd.prefix, folder=f"{rnd.prefix}/", timeout=FLUX_TIMEOUT)
    return loop.commit(f"{message} ({rnd.version})")


def argocd_at(loop: gitops.Loop, rnd: Round, sha: str, health: str | None = None,
              timeout: float = 240) -> dict[str, Any]:
    """The Application once its last sync operation applied `sha` (and its health is
    `health`, if given). Its sync status is not required: Argo CD v3.2 reports Kueue-managed
    jobs OutOfSync (see test_argocd_shows_kueue_managed_jobs_synced)."""
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        app = objects.get((ARGOCD_NAMESPACE, rnd.app))
        status = (app or {}).get("status") or {}
        operation = status.get("operationState") or {}
        got = ((operation.get("syncResult") or {}).get("revision"), operation.get("phase"),
               (status.get("health") or {}).get("status"))
        if got[0] == sha and got[1] == "Succeeded" and health in (None, got[2]):
            return app
        return Missing(f"operation revision/phase, health {got}; {operation.get('message')}")
    return wait_for(loop.world.client, RESOURCES["Application"], check, namespace=ARGOCD_NAMESPACE,
                    timeout=timeout, what=f"Application {rnd.app} synced {sha[:8]} ({health or 'any health'})")


def flux_reapplies(loop: gitops.Loop, rnd: Round, *, running: str = "", timeout: float = 240) -> dict[str, Any]:
    """Ask Flux to reconcile now and wait until it handled that request: it applied git
    over the live jobs again (server-side apply, the generated `.spec.ignore`). Ready, or,
    while the job `running` runs, not Ready only because its health check timed out on it."""
    world, name = loop.world, rnd.kustomization
    loop.flux.reconcile("Kustomization", name)
    token = world.client.get(RESOURCES["Kustomization"], FLUX_NAMESPACE, name)["metadata"]["annotations"][
        REQUESTED_AT]

    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        obj = objects.get((FLUX_NAMESPACE, name)) or {}
        status = obj.get("status") or {}
        ready = condition(obj, "Ready")
        if status.get("lastHandledReconcileAt") != token:
            return Missing(f"handled {status.get('lastHandledReconcileAt')} (want {token}); Ready {ready}")
        return obj if ready.get("status") in ("True", "False") else Missing(f"Ready {ready}")
    obj = wait_for(world.client, RESOURCES["Kustomization"], check, namespace=FLUX_NAMESPACE, timeout=timeout,
                   what=f"Kustomization {name} reconciled on request")
    ready = condition(obj, "Ready")
    if running and ready["status"] == "False":
        assert ready["reason"] == "HealthCheckFailed", ready  # applied; only the wait ended
        assert f"{running} status: 'InProgress'" in ready["message"], ready
    else:
        assert ready["status"] == "True", ready
    return obj


def flux_ready(loop: gitops.Loop, rnd: Round, sha: str) -> None:
    """Flux Ready at `sha` once the jobs are done: its last health wait may have timed out
    on a running job, so ask again (as the GitOps loop does for its 20 s Kustomization)."""
    loop.flux.reconcile("Kustomization", rnd.kustomization)
    loop.wait_flux(rnd.kustomization, sha, ready="True")


def finished_workload(loop: gitops.Loop, namespace: str, job: str, timeout: float = 120) -> dict[str, Any]:
    """The job's Workload once Kueue declared it Finished (a moment after the job's own
    Succeeded condition)."""
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        mine = [w for (ns, _), w in objects.items() if ns == namespace and any(
            o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])]
        done = [w for w in mine if condition(w, "Finished").get("status") == "True"]
        return done[0] if done else Missing(f"{job}'s workloads: {[w.get('status') for w in mine]}")
    return wait_for(loop.world.client, WORKLOADS, check, namespace=namespace, timeout=timeout,
                    what=f"the Workload of {namespace}/{job} Finished")


def pods_of(loop: gitops.Loop, namespace: str, job: str) -> list[dict[str, Any]]:
    return loop.world.client.list(RESOURCES["Pod"], namespace=namespace,
                                  label_selector=f"training.kubeflow.org/job-name={job}")["items"]


def test_queued_jobs_of_four_kinds_run_within_the_gpu_quota(world, loop, kueue, workloads, kueue_sources):
    for engine in ENGINES:
        world.kubectl("create", "namespace", kueue.ns(engine))
        for obj in queue_objects(kueue, engine):
            apply(world, obj)
    sha = commit(loop, kueue, kueue_sources, QUOTA_FILES, "jobs: four queued kinds")
    for engine in ENGINES:
        loop.install(engine, f"{kueue.prefix}/")
    loop.poke()

    quota = jobs_in([KUEUE_JOBS / f for f in QUOTA_FILES])
    for engine in ENGINES:
        wait_jobs(loop, engine, lambda j: "Succeeded" in active(j), quota, "Succeeded", timeout=300)
    for engine in ENGINES:
        ns = kueue.ns(engine)
        for kind, name in quota:
            # on v0.19 a Workload at all proves the notice: its kind is queued because the round
            # enabled what the notice names (kueue_kit.frameworks)
            last = finished_workload(loop, ns, name)
            assert condition(last, "Finished")["reason"] == "Succeeded", last["status"]
            # WaitForPodsReady, on by default from v0.19: the admitted Workload's pods all became ready
            pods_ready = condition(last, "PodsReady")
            if kueue.version == V0_19:
                assert pods_ready["status"] == "True", last["status"]
            else:
                assert pods_ready == {}, last["status"]
            assert last["spec"]["priority"] == 100 and last["spec"]["priorityClassRef"]["name"] == "low"
            # created suspended by Kueue's webhook (git says nothing), resumed on admission
            job = get_job(loop, kind, ns, name)
            assert job["spec"]["runPolicy"]["suspend"] is False
            for replica in job["spec"][KINDS[kind].facts.replica_specs].values():
                assert replica["template"]["spec"]["nodeSelector"] == A100  # the flavor's labels
            assert {p["spec"]["nodeName"].split("-")[0] for p in pods_of(loop, ns, name)} == {"a100"}
        # 8 GPUs asked for, 4 in the quota: two jobs at a time, the others held
        assert workloads.peak[kueue.cluster_queue(engine)] == QUOTA_GPUS, workloads.peak
        held = [w for w in workloads.history if w["metadata"]["namespace"] == ns
                and condition(w, "QuotaReserved").get("reason") == "Pending"]
        assert held, "no Workload ever waited for quota"
    flux_ready(loop, kueue, sha)
    app = argocd_at(loop, kueue, sha, "Healthy")
    assert {r["health"]["status"] for r in app_resources(app, "TFJob").values()} == {"Healthy"}
    # the CRDs' conversion webhook answers: v1beta1 reads of v1beta2 objects
    lq = json.loads(world.kubectl("get", "localqueues.v1beta1.kueue.x-k8s.io", "-n", kueue.namespaces[0], "-o",
                                  "json").stdout)
    assert [i["spec"]["clusterQueue"] for i in lq["items"]] == [kueue.cluster_queue(ENGINES[0])]


def test_kueues_edits_of_a_running_job_survive_both_engines_syncs(world, loop, kueue, workloads, kueue_sources):
    sha = commit(loop, kueue, kueue_sources, ["victim.yaml"], "jobs: victim takes the whole quota at low priority")
    for engine in ENGINES:
        wait_jobs(loop, engine, lambda j: "Running" in active(j), {("PaddleJob", "victim")}, "Running")
    before = {e: get_job(loop, "PaddleJob", kueue.ns(e), "victim") for e in ENGINES}

    argocd_at(loop, kueue, sha)  # Argo CD applied the commit over the running job
    flux_reapplies(loop, kueue, running=f"PaddleJob/{kueue.namespaces[0]}/victim")  # Flux applied git again over it
    for engine in ENGINES:
        ns = kueue.ns(engine)
        job = get_job(loop, "PaddleJob", ns, "victim")
        assert job["metadata"]["uid"] == before[engine]["metadata"]["uid"]
        assert job["spec"]["runPolicy"]["suspend"] is False, engine  # not re-suspended by git
        for replica in job["spec"]["paddleReplicaSpecs"].values():
            assert replica["template"]["spec"]["nodeSelector"] == A100, engine  # flavor kept
        assert "Running" in active(job), engine
        (workload,) = {w["metadata"]["name"]: w for w in workloads.of_job(ns, "victim")}.values()
        assert condition(workloads.current[(ns, workload["metadata"]["name"])], "Admitted")["status"] == "True"


def test_a_higher_kueue_priority_preempts_and_the_evicted_job_reruns(world, loop, kueue, workloads, kueue_sources):
    sha = commit(loop, kueue, kueue_sources, ["urgent.yaml"], "jobs: urgent preempts victim")
    for engine in ENGINES:
        wait_jobs(loop, engine, lambda j: "Succeeded" in active(j), {("PyTorchJob", "urgent")}, "Succeeded")
    for engine in ENGINES:
        wait_jobs(loop, engine, lambda j: bool(active(j) & {"Succeeded", "Failed"}), {("PaddleJob", "victim")},
                  "finished", timeout=300)
    for engine in ENGINES:
        ns = kueue.ns(engine)
        victim = workloads.of_job(ns, "victim")
        evicted = [condition(w, "Evicted") for w in victim if condition(w, "Evicted").get("status") == "True"]
        assert evicted and evicted[0]["reason"] == "Preempted", [w.get("status") for w in victim[-3:]]
        finished = finished_workload(loop, ns, "victim")
        assert condition(finished, "Finished")["reason"] == "Succeeded", finished["status"]
        assert workloads.of_job(ns, "urgent")[-1]["spec"]["priority"] == 1000
        job = get_job(loop, "PaddleJob", ns, "victim")
        assert "Succeeded" in active(job), job["status"]  # re-run after the eviction, not Failed
        suspended = condition(job, "Suspended")  # train-controller held it while Kueue had evicted it
        assert suspended and suspended["status"] == "False", job["status"]["conditions"]
        assert workloads.peak[kueue.cluster_queue(engine)] == QUOTA_GPUS, workloads.peak
    flux_ready(loop, kueue, sha)
    app = argocd_at(loop, kueue, sha, "Healthy")
    assert {n: r["health"]["status"] for n, r in app_resources(app, "PaddleJob").items()} == {"victim": "Healthy"}


def live_pods(loop: gitops.Loop, namespace: str, job: str, count: int) -> set[str]:
    """The uids of the job's pods once exactly `count` of them exist, every one Running."""
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        pods = [p for p in objects.values()
                if (p["metadata"].get("labels") or {}).get("training.kubeflow.org/job-name") == job]
        phases = sorted((p.get("status") or {}).get("phase", "") + ("/deleting" if p["metadata"].get(
            "deletionTimestamp") else "") for p in pods)
        if phases == ["Running"] * count:
            return {p["metadata"]["uid"] for p in pods} or True
        return Missing(f"pods of {job}: {phases}")
    found = wait_for(loop.world.client, RESOURCES["Pod"], check, namespace=namespace, timeout=180,
                     what=f"{count} Running pods of {namespace}/{job}")
    return found if isinstance(found, set) else set()


def set_suspend(sources: dict[str, Path], value: bool) -> None:
    for engine in ENGINES:
        gitops.edit_spec(sources[engine] / "unqueued.yaml", lambda d: d["spec"]["policy"].__setitem__("suspend", True)
                         if value else d["spec"]["policy"].pop("suspend"))


def test_a_job_without_a_queue_is_suspended_and_resumed_from_git_while_kueue_leaves_it_alone(
        world, loop, kueue, workloads, kueue_sources):
    """Kueue manages queued jobs only, so the engines ignore its fields on those only: on any
    other job `policy.suspend` is git's, and both engines apply it to a job that exists."""
    commit(loop, kueue, kueue_sources, ["unqueued.yaml"], "jobs: unqueued runs")
    first = {e: live_pods(loop, kueue.ns(e), "unqueued", 2) for e in ENGINES}

    set_suspend(kueue_sources, True)
    sha = commit(loop, kueue, kueue_sources, [], "jobs: suspend unqueued")
    for engine in ENGINES:  # the engines applied it; train-controller deleted the pods
        wait_jobs(loop, engine, lambda j: "Suspended" in active(j), {("PyTorchJob", "unqueued")}, "Suspended")
        live_pods(loop, kueue.ns(engine), "unqueued", 0)
        assert get_job(loop, "PyTorchJob", kueue.ns(engine), "unqueued")["spec"]["runPolicy"]["suspend"] is True
    argocd_at(loop, kueue, sha)

    set_suspend(kueue_sources, False)
    sha = commit(loop, kueue, kueue_sources, [], "jobs: resume unqueued")
    for engine in ENGINES:  # resumed: new pods, running
        ns = kueue.ns(engine)
        wait_jobs(loop, engine, lambda j: "Running" in active(j) and "Suspended" not in active(j),
                  {("PyTorchJob", "unqueued")}, "resumed")
        again = live_pods(loop, ns, "unqueued", 2)
        assert again and not again & first[engine], engine
        job = get_job(loop, "PyTorchJob", ns, "unqueued")
        assert not (job["spec"].get("runPolicy") or {}).get("suspend"), engine  # git's field gone
        assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"], engine
        assert workloads.of_job(ns, "unqueued") == [], engine  # never Kueue's
    app = argocd_at(loop, kueue, sha)
    assert app_resources(app, "PyTorchJob")["unqueued"]["status"] == "Synced"

    for engine in ENGINES:
        (kueue_sources[engine] / "unqueued.yaml").unlink()
    commit(loop, kueue, kueue_sources, [], "jobs: drop unqueued")
    for engine in ENGINES:
        wait_gone(loop, "PyTorchJob", kueue.ns(engine), "unqueued")


def test_argocd_shows_kueue_managed_jobs_synced(world, loop, kueue, workloads):
    """Kueue's webhook stores a queued job's typed round trip on create (`nvidia.com/gpu: 1`
    becomes "1"); the compiler writes that form (compiler/lowering.POD_TEMPLATE_QUANTITIES),
    so Argo CD sees no drift on the jobs Kueue admitted."""
    app = world.client.get(RESOURCES["Application"], ARGOCD_NAMESPACE, kueue.app)
    jobs = {r["name"]: r["status"] for r in app["status"]["resources"] if r.get("group") == "kubeflow.org"}
    assert jobs and set(jobs.values()) == {"Synced"}, jobs


def test_a_v1_mpijob_with_a_queue_label_bypasses_kueue(world, loop, kueue, workloads):
    """Why the compiler refuses a queue on a kubeflow.org/v1 MPIJob: written by hand, such a
    job gets no Workload and runs at once, while a PyTorchJob on the same full queue waits."""
    ns = kueue.namespaces[0]
    closed = f"{kueue.name}-closed"
    apply(world, cluster_queue_object(closed, {}, 0))  # a queue with no quota at all
    apply(world, local_queue_object("closed", ns, closed))
    labels = {"kueue.x-k8s.io/queue-name": "closed"}
    def pod(container: str) -> dict[str, Any]:  # the kind's container name (upstream validation)
        return {"spec": {"containers": [{"name": container, "image": "example.com/train:1", "command": ["train"],
                                         "resources": {"limits": {GPU: 1}}}]}}
    mpi = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "bypass", "labels": labels},
           "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "mpiReplicaSpecs": {
               "Launcher": {"replicas": 1, "restartPolicy": "Never", "template": pod("mpi")},
               "Worker": {"replicas": 1, "restartPolicy": "Never", "template": pod("mpi")}}}}
    control = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "held", "labels": labels},
               "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "restartPolicy": "Never",
                                                              "template": pod("pytorch")}}}}
    for job in (mpi, control):
        apply(world, dict(job, metadata=dict(job["metadata"], namespace=ns)), manager="by-hand")

    def held(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        mine = [w for (n, _), w in objects.items() if n == ns and any(
            o.get("name") == "held" for o in w["metadata"].get("ownerReferences") or [])]
        pending = [w for w in mine if condition(w, "QuotaReserved").get("reason") == "Pending"]
        return pending[0] if pending else Missing(f"workloads of held: {[w.get('status') for w in mine]}")
    wait_for(world.client, WORKLOADS, held, namespace=ns, timeout=120, what="the PyTorchJob's Workload pending")
    wait_jobs(loop, "flux", lambda j: "Succeeded" in active(j), {("MPIJob", "bypass")}, "Succeeded")

    assert get_job(loop, "PyTorchJob", ns, "held")["spec"]["runPolicy"]["suspend"] is True  # Kueue holds it
    owners = [o for w in world.client.list(WORKLOADS, namespace=ns)["items"]
              for o in w["metadata"].get("ownerReferences") or []]
    assert "PyTorchJob" in {o["kind"] for o in owners} and "MPIJob" not in {o["kind"] for o in owners}
    bypass = get_job(loop, "MPIJob", ns, "bypass")
    assert not (bypass["spec"].get("runPolicy") or {}).get("suspend")  # never held
    assert pods_of(loop, ns, "bypass")  # its GPU pods ran on a queue with no quota at all
    for job in (mpi, control):
        world.kubectl("delete", "-n", ns, job["kind"].lower(), job["metadata"]["name"], "--wait=false")
