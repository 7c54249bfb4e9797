"""Real Flux and Argo CD sync compiled jobs from a git repository; kube-scheduler and kwok
run the pods train-controller makes; every assertion reads the engines' own status.

The scenarios run in order on one repository, each a commit, for both engines at once
(each on its own namespaces, `<engine>-<namespace>`): the first commit lands while no
training operator runs (jobs without status are in progress, never an error; the
prerequisites land a wave before the job), then the operator starts and every job
succeeds; a failing job turns both engines red; the next commit drops it (pruned with
its pods), edits a finished job (the edit lands, the run does not restart), renames one
(a new run) and adds one Kueue admits (its suspend flip and flavor stay through later
syncs).
"""

from __future__ import annotations

from typing import Any

import yaml
from e2e_kit import JOBS, MAIN, WAITING, active, app_resources, get_job, jobs_in, names, wait_gone, wait_jobs

from testworld import gitops
from testworld.watching import RESOURCES

ENGINES = gitops.ENGINES
APP = KUSTOMIZATION = "trainforge-default"


class State:
    sha = ""


STATE = State()  # the scenarios are one history: each test starts where the last one ended


def test_jobs_before_their_first_status_are_progressing_never_an_error(world, loop, sources):
    controller = world.part("train-controller")
    controller.stop()  # the operator is down (or slow): the engines see jobs without status
    for engine in ENGINES:
        loop.publish(engine, sources[engine]["main"])
        loop.publish(engine, sources[engine]["waiting"], prefix="waiting", folder="waiting/", timeout="20s")
    STATE.sha = loop.commit("jobs: the examples")
    for engine in ENGINES:
        loop.install(engine)
        loop.install(engine, "waiting")
    loop.poke()

    # Argo CD: synced, every job Progressing with the Lua's waiting message.
    app = loop.wait_argocd(APP, STATE.sha, health="Progressing")
    jobs = {r["name"]: r for r in app["status"]["resources"] if r.get("group") == "kubeflow.org"}
    assert set(jobs) == names(MAIN)
    for resource in jobs.values():
        assert resource["health"] == {"status": "Progressing", "message": WAITING}, resource
    # Flux: the waiting Kustomization's 20 s timeout ends with the job InProgress, not a CEL error.
    k = loop.wait_flux("waiting-default", STATE.sha, ready="False", reason="HealthCheckFailed", timeout=180)
    message = gitops.condition(k, "Ready")["message"]
    assert "JAXJob/flux-standby/waiting status: 'InProgress'" in message, message
    assert "CEL" not in message and "Unknown" not in message, message
    main = gitops.condition(world.client.get(RESOURCES["Kustomization"], "flux-system", KUSTOMIZATION), "Ready")
    assert "CEL" not in main.get("message", ""), main

    # Argo CD wrote the Namespace, ServiceAccount, Role, RoleBinding and PodGroup (wave -1)
    # before the job (wave 0): first successful write of each, from the API server's audit log.
    first: dict[tuple[str, str], str] = {}
    for event in world.plane.audit_events():
        ref = event.get("objectRef") or {}
        if (event.get("verb") in ("create", "patch", "update") and "argocd" in event.get("userAgent", "")
                and (event.get("responseStatus") or {}).get("code", 500) < 300
                and "argocd-platform" in (ref.get("namespace"), ref.get("name"))):
            first.setdefault((ref["resource"], ref.get("name", "")), event["stageTimestamp"])
    job = first[("pytorchjobs", "gang-rbac")]
    for prerequisite in (("namespaces", "argocd-platform"), ("serviceaccounts", "gang-rbac"), ("roles", "gang-rbac"),
                         ("rolebindings", "gang-rbac"), ("podgroups", "gang-rbac")):
        assert first[prerequisite] < job, (prerequisite, first[prerequisite], job)

    controller.start(world)


def test_a_commit_of_jobs_syncs_and_every_job_succeeds(world, loop):
    for engine in ENGINES:
        wait_jobs(loop, engine, lambda j: "Succeeded" in active(j), jobs_in(MAIN) | {("JAXJob", "waiting")}, "Succeeded")
    loop.flux.reconcile("Kustomization", "waiting-default")  # it gave up after 20 s: retry now
    k = loop.wait_flux(KUSTOMIZATION, STATE.sha, ready="True")
    assert gitops.condition(k, "Ready")["reason"] == "ReconciliationSucceeded"
    loop.wait_flux("waiting-default", STATE.sha, ready="True")
    app = loop.wait_argocd(APP, STATE.sha)
    healths = {r["health"]["status"] for r in app["status"]["resources"] if r.get("group") == "kubeflow.org"}
    assert healths == {"Healthy"}
    loop.wait_argocd("waiting-default", STATE.sha)
    for engine in ENGINES:  # the namespaces came from the tree, labelled for Pod Security
        ns = yaml.safe_load(world.kubectl("get", "namespace", f"{engine}-nlp", "-o", "yaml").stdout)
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


def test_a_failing_job_is_degraded_in_argocd_and_failed_in_flux(loop, sources):
    for engine in ENGINES:
        gitops.engine_sources([JOBS / "fails.yaml"], engine, sources[engine]["main"])
        loop.publish(engine, sources[engine]["main"])
    STATE.sha = loop.commit("jobs: one that fails")
    for engine in ENGINES:
        wait_jobs(loop, engine, lambda j: "Failed" in active(j), {("PyTorchJob", "fails")}, "Failed")
    failed = next(c for c in get_job(loop, "PyTorchJob", "argocd-risk", "fails")["status"]["conditions"]
                  if c["type"] == "Failed")
    app = loop.wait_argocd(APP, STATE.sha, health="Degraded")
    assert app_resources(app, "PyTorchJob")["fails"]["health"] == {"status": "Degraded", "message": failed["message"]}
    k = loop.wait_flux(KUSTOMIZATION, STATE.sha, ready="False", reason="HealthCheckFailed")
    message = gitops.condition(k, "Ready")["message"]
    # Flux names the job and kstatus' verdict; the job's own message is not in it.
    assert "PyTorchJob/flux-risk/fails status: 'Failed'" in message, message


def _admit(loop: gitops.Loop, engine: str) -> None:
    """What Kueue does on admission: resume the job, pin every pod template to the flavor."""
    pin = {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}}}}
    patch = {"spec": {"runPolicy": {"suspend": False}, "pytorchReplicaSpecs": {"Master": pin, "Worker": pin}}}
    loop.world.kubectl("patch", "pytorchjob", "admitted", "-n", f"{engine}-queue", "--type=merge",
                       "--field-manager=kueue-admission", "-p", yaml.safe_dump(patch))


def test_a_commit_that_prunes_edits_renames_and_queues_jobs(world, loop, sources):
    before = {e: get_job(loop, "JAXJob", f"{e}-nlp", "t5x-finetune") for e in ENGINES}
    for engine in ENGINES:
        src = sources[engine]["main"]
        (src / "fails.yaml").unlink()  # removed from git: pruned with its pods
        gitops.edit_spec(src / "jax-t5x.yaml",  # an edit in place
                         lambda d: d["spec"].__setitem__("args", [*(d["spec"].get("args") or []), "--seed", "2"]))
        gitops.edit_spec(src / "xgboost-fraud.yaml",  # a new run: a new name
                         lambda d: d["metadata"].__setitem__("name", "fraud-xgb-run2"))
        gitops.engine_sources([JOBS / "admitted.yaml"], engine, src)  # waits for Kueue
        loop.publish(engine, src)
    STATE.sha = loop.commit("jobs: drop fails, edit t5x, fraud-xgb as run2, a queued job")

    # The queued job is Suspended for Argo CD (in progress for Flux) until admitted.
    loop.wait_argocd(APP, STATE.sha, health="Suspended",
                     ok=lambda app: app_resources(app, "PyTorchJob").get("admitted", {}).get("health", {}).get("status")
                     == "Suspended")
    for engine in ENGINES:
        _admit(loop, engine)
        wait_jobs(loop, engine, lambda j: "Succeeded" in active(j), {("XGBoostJob", "fraud-xgb-run2"), ("PyTorchJob", "admitted")}, "Succeeded")
    loop.wait_flux(KUSTOMIZATION, STATE.sha, ready="True")
    app = loop.wait_argocd(APP, STATE.sha)
    assert "fails" not in app_resources(app, "PyTorchJob") and "fraud-xgb" not in app_resources(app, "XGBoostJob")

    for engine in ENGINES:
        wait_gone(loop, "PyTorchJob", f"{engine}-risk", "fails")
        wait_gone(loop, "XGBoostJob", f"{engine}-risk", "fraud-xgb")
        after = get_job(loop, "JAXJob", f"{engine}-nlp", "t5x-finetune")
        args = after["spec"]["jaxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"]
        assert args[-2:] == ["--seed", "2"], engine  # the engine applied the edit ...
        assert after["metadata"]["uid"] == before[engine]["metadata"]["uid"]
        assert after["status"]["completionTime"] == before[engine]["status"]["completionTime"]  # ... no rerun
        assert world.kubectl("get", "namespace", f"{engine}-risk", "-o", "name").stdout.strip()  # never pruned
        pods = world.client.list(RESOURCES["Pod"], namespace=f"{engine}-queue",
                                 label_selector="training.kubeflow.org/job-name=admitted")["items"]
        assert pods and all(p["spec"]["nodeName"].startswith("a100-") for p in pods), engine  # Kueue's flavor


def test_kueue_fields_stay_as_kueue_left_them_through_the_next_sync(world, loop, sources):
    for engine in ENGINES:  # an edit the engines must apply, beside the fields they must not
        gitops.edit_spec(sources[engine]["main"] / "admitted.yaml", lambda d: d["spec"].__setitem__("args", ["--epochs", "2"]))
        loop.publish(engine, sources[engine]["main"])
    STATE.sha = loop.commit("jobs: admitted takes --epochs 2")
    loop.wait_flux(KUSTOMIZATION, STATE.sha, ready="True")
    app = loop.wait_argocd(APP, STATE.sha)
    assert app_resources(app, "PyTorchJob")["admitted"]["status"] == "Synced"  # no drift for Argo CD
    for engine in ENGINES:
        job: dict[str, Any] = get_job(loop, "PyTorchJob", f"{engine}-queue", "admitted")
        master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
        assert master["args"] == ["--epochs", "2"], engine  # the edit landed ...
        assert job["spec"]["runPolicy"]["suspend"] is False, engine  # ... and git's suspend: true did not
        for spec in job["spec"]["pytorchReplicaSpecs"].values():
            assert spec["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
        assert "Succeeded" in active(job)
