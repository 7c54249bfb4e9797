"""`train-compile plan` against the real engines: every change class and hazard, said and then seen.

One world (`plan_engines_kit`), one base commit and one head commit: real Flux (and Argo CD
for a subset) syncs the base, the jobs run under the upstream operator v1.9.4,
train-controller and Trainer v2.3 on kwok (or finish, or wait suspended); the plan of the
head is taken offline and with `--live`; then the head is committed, the engines sync it,
and each case asserts that what happened (pods added or deleted, their WORLD_SIZE and
image, the sync's status, a job created again after its TTL) is what the plan said.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_kit import running as started
from plan_engines_kit import (EVENTS, PROJECTS, Repo, active, env_value, get_job, make_world, planned, pods, read,
                              running, spec, wait_gone, wait_job, wait_pods, write)

from testworld import gitops
from testworld.argocd import NAMESPACE as ARGOCD_NAMESPACE
from testworld.watching import RESOURCES, Missing, wait_for

V1_ENVS = ("up", "tc")
KIND = {"up": "PyTorchJob", "tc": "PyTorchJob", "v2": "TrainJob", "v2x": "TrainJob"}

# case -> (project, base spec, head edit: doc -> doc or None for a delete)
CASES = {
    "scale": ("v1", spec("scale"), lambda d: d["spec"].update(nodes=3)),
    "image": ("v1", spec("image"), lambda d: d["spec"].update(image="ghcr.io/acme/train:2")),
    "finished": ("v1", spec("finished", forever=False), lambda d: d["spec"].update(nodes=3)),
    # a run policy in the base already: the edit is the TTL alone
    "ttl": ("v1", spec("ttl", forever=False, policy={"backoffLimit": 3}),
            lambda d: d["spec"]["policy"].update(ttlAfterFinished="5s")),
    "suspend": ("v1s", spec("suspend"), lambda d: d["spec"].update(policy={"suspend": True})),
    "resume": ("v1s", spec("resume", nodes=1, policy={"suspend": True}),
               lambda d: (d["spec"].pop("policy"), d["spec"].update(nodes=2))),
    "dropped": ("v1", spec("dropped"), None),
    "renamed": ("v1", spec("renamed"), lambda d: d["metadata"].update(name="renamed-2")),
    # two nodes: the PyTorchJob's worker-0 holds the JAXJob's first pod name until the garbage collector
    # takes it, and both controllers then create it (train-controller once took ~200 s: its name coming free
    # was only the old job's event)
    "switched": ("v1", spec("switched"), lambda d: d["spec"].update(framework="jax")),
    "same": ("v1", spec("same"), lambda d: d["spec"].update(processesPerNode="auto")),
    "elastic": ("v1", spec("elastic", elastic={"minNodes": 1, "maxNodes": 4}), lambda d: d["spec"].update(nodes=3)),
    "v2suspend": ("v2", spec("v2suspend"), lambda d: d["spec"].update(policy={"suspend": True})),
    "v2resume": ("v2", spec("v2resume", policy={"suspend": True}), lambda d: d["spec"].pop("policy")),
    "v2dropped": ("v2", spec("v2dropped"), None),
    "v2scale": ("v2x", spec("v2scale"), lambda d: d["spec"].update(nodes=3)),
    "v2bystander": ("v2x", spec("v2bystander"), lambda d: d["metadata"].update(annotations={"acme.dev/owner": "ml"})),
    "v2gone": ("v2x", spec("v2gone"), None),
    "a-dropped": ("a1", spec("a-dropped"), None),
    "a-ttl": ("a1", spec("a-ttl", forever=False, policy={"backoffLimit": 3}),
              lambda d: d["spec"]["policy"].update(ttlAfterFinished="5s")),
    "a-scale": ("a1", spec("a-scale"), lambda d: d["spec"].update(nodes=3)),
    "a-v2scale": ("a2x", spec("a-v2scale"), lambda d: d["spec"].update(nodes=3)),
    "a-bystander": ("a2x", spec("a-bystander"), lambda d: d["metadata"].update(annotations={"acme.dev/owner": "ml"})),
    "a-gone": ("a2x", spec("a-gone"), None),
}
# what the plan says, offline: (project, env, job name in the head) -> hazards
SAID = {
    **{("v1", "up", n): ["mixed-run"] for n in ("scale", "image", "finished")},
    **{("v1", "tc", n): ["ignored-until-next-run"] for n in ("scale", "image", "finished")},
    **{("v1", e, "ttl"): ["reruns-finished"] for e in V1_ENVS},
    **{("v1s", e, "suspend"): ["suspends-run"] for e in V1_ENVS},
    **{("v1s", e, "resume"): ["restarts-run"] for e in V1_ENVS},
    **{("v1", e, "dropped"): ["kills-run"] for e in V1_ENVS},
    **{("v1", e, n): ["kills-run", "restarts-run"] for e in V1_ENVS for n in ("renamed-2", "switched")},
    **{("v1", e, n): [] for e in V1_ENVS for n in ("same", "elastic")},
    ("v2", "v2", "v2suspend"): ["suspends-run"], ("v2", "v2", "v2resume"): ["restarts-run"],
    ("v2", "v2", "v2dropped"): ["kills-run"],
    ("v2x", "v2x", "v2scale"): ["sync-refused"], ("v2x", "v2x", "v2bystander"): [],
    ("v2x", "v2x", "v2gone"): ["kills-run"], ("a2x", "v2x", "a-gone"): ["kills-run"],
    ("a1", "tc", "a-dropped"): ["kills-run"], ("a1", "tc", "a-ttl"): ["reruns-finished"],
    ("a1", "tc", "a-scale"): ["ignored-until-next-run"],
    ("a2x", "v2x", "a-v2scale"): ["sync-refused"], ("a2x", "v2x", "a-bystander"): [],
}


class State:
    base_uid: dict[tuple[str, str], str] = {}  # (namespace, job) -> uid in the base
    head = ""  # the head commit


STATE = State()


@pytest.fixture(scope="module")
def world() -> Iterator:
    with started(make_world(), "the plan's engine world") as world:
        yield world


@pytest.fixture(scope="module")
def repo(world) -> Repo:
    return Repo(gitops.Loop(world))


def _namespaces(project: str) -> list[tuple[str, str]]:
    return [(env, PROJECTS[project].namespace(env)) for env in PROJECTS[project].environments]


def _base_state(case: str) -> str:
    _, doc, _ = CASES[case]
    if (doc["spec"].get("policy") or {}).get("suspend"):
        return "Suspended"
    return "Running" if "podTemplate" in doc["spec"] else "Succeeded"


def test_the_base_syncs_and_its_jobs_run_finish_or_wait(world, repo):
    repo.sync_base(CASES, "plan engines: the base")

    for case, (project, doc, _) in CASES.items():
        for env, ns in _namespaces(project):
            kind = "TrainJob" if PROJECTS[project].environments[env].get("target") else "PyTorchJob"
            state = _base_state(case)
            if kind == "TrainJob":  # Trainer v2.3 has no Running condition: its pods say it
                job = wait_job(world, kind, ns, case, lambda j: state != "Succeeded" or "Complete" in active(j), state)
                if state == "Running":
                    wait_pods(world, ns, case, lambda ps: running(ps, doc["spec"]["nodes"]), "Running")
            else:
                job = wait_job(world, kind, ns, case, lambda j: state in active(j), state)
            STATE.base_uid[(ns, case)] = job["metadata"]["uid"]


def _edit_head(repo: Repo) -> None:
    for case, (project, _, edit) in CASES.items():
        path = repo.jobs(project) / f"{case}.yaml"
        if edit is None:
            path.unlink()
        else:
            doc = read(path)
            edit(doc)
            write(path, doc)


def test_the_plan_of_the_head_says_what_each_change_does(repo):
    _edit_head(repo)

    said = {}
    for project in PROJECTS:
        plan = repo.plan(project)
        for env in plan["environments"]:
            for job in env["jobs"]:
                said[(project, env["name"], job["name"])] = job["hazards"]
        if project.endswith("x"):  # a refused object: the plan says what it does to the environment's sync
            (env,) = plan["environments"]
            assert any("a refused object fails the environment's sync" in n for n in env["notes"]), env["notes"]

    assert {k: v for k, v in said.items() if k in SAID} == SAID


def test_the_live_plan_turns_may_into_facts(world, repo):
    live = {env: repo.plan("v1", "--live", "--env", env, "--kubeconfig", str(world.kubeconfig)) for env in V1_ENVS}
    paused = {env: repo.plan("v1s", "--live", "--env", env, "--kubeconfig", str(world.kubeconfig)) for env in V1_ENVS}

    for env in V1_ENVS:
        finished = planned(live[env], env, "finished")
        assert (finished["state"], finished["hazards"]) == ("Succeeded", ["ignored-until-next-run"]), finished
        assert "changes nothing that runs" in finished["summary"]
        dropped = planned(live[env], env, "dropped")
        assert dropped["state"] == "Running" and "kills dropped, Running for " in dropped["summary"], dropped
        resume = planned(paused[env], env, "resume")
        assert (resume["state"], resume["hazards"]) == ("Suspended", ["restarts-run"])


def test_the_head_syncs(world, repo):
    repo.publish()
    sha = STATE.head = repo.commit("plan engines: the head")

    for project in ("v1", "v2"):
        for env, _ in _namespaces(project):
            repo.loop.wait_flux(PROJECTS[project].object_name(env), sha, ready="False", reason="HealthCheckFailed")
    refused = repo.loop.wait_flux("v2x-v2x", sha, ready="False", reason="ReconciliationFailed")
    assert "field is immutable" in gitops.condition(refused, "Ready")["message"], refused["status"]
    _wait_app(world, "a1-tc", sha)


def _wait_app(world, name: str, sha: str, phases: tuple[str, ...] = ("Succeeded",)) -> dict:
    def check(objects):
        app = objects.get((ARGOCD_NAMESPACE, name))
        op = ((app or {}).get("status") or {}).get("operationState") or {}
        revision = (op.get("syncResult") or {}).get("revision") or (op.get("operation") or {}).get("sync", {}).get(
            "revision")
        if revision == sha and op.get("phase") in phases:
            return app
        return Missing(f"{name}: operation {op.get('phase')} at {revision}: {op.get('message')}")
    return wait_for(world.client, RESOURCES["Application"], check, namespace=ARGOCD_NAMESPACE, timeout=300,
                    what=f"Application {name} synced {sha[:8]}")


def _worlds(pods_: list[dict]) -> dict[str, str]:
    return {p["metadata"]["name"].rsplit("-", 2)[-2] + "-" + p["metadata"]["name"].rsplit("-", 1)[-1]:
            env_value(p, "WORLD_SIZE") for p in pods_}


@pytest.mark.parametrize("env", ["up", "tc"])
def test_nodes_2_to_3_mixes_shapes_under_upstream_and_is_held_under_train_controller(world, env):
    ns = PROJECTS["v1"].namespace(env)
    if env == "up":  # mixed-run: a pod of the new shape beside the run's own
        found = wait_pods(world, ns, "scale", lambda ps: len(ps) == 3, "3 pods")
        assert _worlds(found) == {"master-0": "2", "worker-0": "2", "worker-1": "3"}
    else:  # ignored-until-next-run: the controller says so once, and adds no pod
        _held_event(world, ns, "scale")
        assert _worlds(pods(world, ns, "scale")) == {"master-0": "2", "worker-0": "2"}


def _held_event(world, ns: str, job: str) -> None:
    wait_for(world.client, EVENTS, lambda objs: any(e["reason"].endswith("SpecChangeHeld") for e in objs.values()
                                                    if e["involvedObject"]["name"] == job) or Missing("no held Event"),
             namespace=ns, timeout=60, what=f"the Event saying {job}'s change is held")


@pytest.mark.parametrize("env", ["up", "tc"])
def test_an_image_change_reaches_the_next_pod_the_controller_recreates_only_under_upstream(world, env):
    ns = PROJECTS["v1"].namespace(env)
    wait_job(world, "PyTorchJob", ns, "image", lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
             ["containers"][0]["image"].endswith(":2"), "synced with the new image")
    (old,) = [p for p in pods(world, ns, "image") if p["metadata"]["name"] == "image-worker-0"]
    world.kubectl("delete", "pod", "image-worker-0", "-n", ns, "--wait=false")  # a failure, an eviction

    found = wait_pods(world, ns, "image", lambda ps: any(p["metadata"]["name"] == "image-worker-0" and
                                                        p["metadata"]["uid"] != old["metadata"]["uid"] for p in ps),
                      "worker-0 re-created")
    images = {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in found}
    expected = "ghcr.io/acme/train:2" if env == "up" else "ghcr.io/acme/train:1"
    assert images == {"image-master-0": "ghcr.io/acme/train:1", "image-worker-0": expected}


@pytest.mark.parametrize("env", V1_ENVS)
def test_an_edit_of_a_finished_job_is_stored_and_runs_nothing(world, env):
    ns = PROJECTS["v1"].namespace(env)
    job = wait_job(world, "PyTorchJob", ns, "finished",
                   lambda j: j["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 2, "synced with 3 nodes")

    assert job["metadata"]["uid"] == STATE.base_uid[(ns, "finished")] and "Succeeded" in active(job)
    assert len(pods(world, ns, "finished")) <= 2  # the run's own pods at most, none of the new shape


@pytest.mark.parametrize("env", V1_ENVS)
def test_a_ttl_deletes_the_finished_job_and_flux_creates_it_again(world, repo, env):
    ns = PROJECTS["v1"].namespace(env)
    wait_gone(world, "PyTorchJob", ns, "ttl", uid=STATE.base_uid[(ns, "ttl")])
    repo.loop.flux.reconcile("Kustomization", PROJECTS["v1"].object_name(env))  # its next interval

    again = wait_job(world, "PyTorchJob", ns, "ttl", lambda j: j["metadata"]["uid"] != STATE.base_uid[(ns, "ttl")],
                     "created again")
    assert again["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == 5


def _synced(repo: Repo, name: str) -> None:
    """The Kustomization attempted the head; it must not have refused it."""
    k = repo.loop.wait_flux(name, STATE.head, ready="False")
    assert gitops.condition(k, "Ready")["reason"] != "ReconciliationFailed", gitops.condition(k, "Ready")["message"]


@pytest.mark.parametrize("env", V1_ENVS)
def test_suspend_added_deletes_the_runs_pods(world, repo, env):
    ns = PROJECTS["v1s"].namespace(env)
    _synced(repo, PROJECTS["v1s"].object_name(env))
    wait_job(world, "PyTorchJob", ns, "suspend", lambda j: "Suspended" in active(j), "Suspended")
    wait_pods(world, ns, "suspend", lambda ps: not ps, "deleted")


@pytest.mark.parametrize("env", V1_ENVS)
def test_suspend_removed_starts_the_run_from_the_beginning_on_the_head_spec(world, repo, env):
    ns = PROJECTS["v1s"].namespace(env)
    _synced(repo, PROJECTS["v1s"].object_name(env))
    found = wait_pods(world, ns, "resume", lambda ps: running(ps, 2), "2 Running")
    assert set(_worlds(found).values()) == {"2"}


@pytest.mark.parametrize(("project", "env"), [("v1", "up"), ("v1", "tc"), ("v2", "v2"), ("a1", "tc")])
def test_a_job_removed_from_git_is_pruned_with_its_pods(world, project, env):
    ns = PROJECTS[project].namespace(env)
    name = {"v1": "dropped", "v2": "v2dropped", "a1": "a-dropped"}[project]
    wait_gone(world, KIND.get(env, "PyTorchJob") if project != "a1" else "PyTorchJob", ns, name)


@pytest.mark.parametrize("env", V1_ENVS)
def test_a_rename_kills_the_old_run_and_starts_the_new_one_from_the_beginning(world, env):
    ns = PROJECTS["v1"].namespace(env)
    wait_gone(world, "PyTorchJob", ns, "renamed")
    wait_pods(world, ns, "renamed-2", lambda ps: running(ps, 2), "Running")


@pytest.mark.parametrize("env", V1_ENVS)
def test_a_framework_switch_is_a_new_job_of_the_new_kind(world, env):
    ns = PROJECTS["v1"].namespace(env)
    wait_job(world, "JAXJob", ns, "switched", lambda j: "Running" in active(j), "Running")
    found = wait_pods(world, ns, "switched", lambda ps: running(ps, 2) and all(
        p["metadata"]["ownerReferences"][0]["kind"] == "JAXJob" for p in ps), "Running, the JAXJob's", timeout=90)
    assert sorted(p["metadata"]["name"] for p in found) == ["switched-worker-0", "switched-worker-1"]
    assert get_job(world, "PyTorchJob", ns, "switched") is None


@pytest.mark.parametrize("env", V1_ENVS)
def test_an_edit_that_compiles_to_the_same_objects_changes_nothing(world, env):
    ns = PROJECTS["v1"].namespace(env)
    job = get_job(world, "PyTorchJob", ns, "same")
    assert job is not None and job["metadata"]["uid"] == STATE.base_uid[(ns, "same")]
    assert job["metadata"]["generation"] == 1
    assert running(pods(world, ns, "same"), 2)


@pytest.mark.parametrize("env", V1_ENVS)
def test_an_elastic_job_scales_within_its_bounds_with_no_hazard(world, env):
    ns = PROJECTS["v1"].namespace(env)
    found = wait_pods(world, ns, "elastic", lambda ps: running(ps, 3), "3 Running")
    assert {env_value(p, "PET_NNODES") for p in found} == {"1:4"}


def test_a_trainjob_suspended_from_git_loses_its_pods_and_one_resumed_runs(world):
    ns = PROJECTS["v2"].namespace("v2")
    wait_job(world, "TrainJob", ns, "v2suspend", lambda j: "Suspended" in active(j), "Suspended")
    wait_pods(world, ns, "v2suspend", lambda ps: not ps, "deleted")
    wait_pods(world, ns, "v2resume", lambda ps: running(ps, 2), "2 Running")


def test_a_refused_trainjob_update_fails_the_whole_environments_sync_under_flux(world):
    ns = PROJECTS["v2x"].namespace("v2x")
    job = get_job(world, "TrainJob", ns, "v2scale")
    assert job is not None and job["spec"]["trainer"]["numNodes"] == 2  # refused: the run keeps its shape
    assert running(pods(world, ns, "v2scale"), 2)
    # Flux's server-side dry run of the whole set failed first: nothing of the commit was applied or pruned
    bystander = get_job(world, "TrainJob", ns, "v2bystander")
    assert bystander is not None and "acme.dev/owner" not in (bystander["metadata"].get("annotations") or {})
    assert get_job(world, "TrainJob", ns, "v2gone") is not None and running(pods(world, ns, "v2gone"), 2)


def test_a_refused_trainjob_update_fails_argocds_sync_operation_but_the_rest_lands_and_is_pruned(world):
    ns = PROJECTS["a2x"].namespace("v2x")
    app = _wait_app(world, "a2x-v2x", STATE.head, phases=("Failed", "Error"))
    assert "field is immutable" in app["status"]["operationState"]["message"], app["status"]["operationState"]
    job = get_job(world, "TrainJob", ns, "a-v2scale")
    assert job is not None and job["spec"]["trainer"]["numNodes"] == 2
    bystander = get_job(world, "TrainJob", ns, "a-bystander")
    assert bystander is not None and bystander["metadata"]["annotations"]["acme.dev/owner"] == "ml"
    wait_gone(world, "TrainJob", ns, "a-gone")  # and prunes as usual


def test_under_argocd_train_controller_holds_a_new_shape_too(world):
    ns = PROJECTS["a1"].namespace("tc")
    _held_event(world, ns, "a-scale")
    assert _worlds(pods(world, ns, "a-scale")) == {"master-0": "2", "worker-0": "2"}


def test_argocd_creates_a_ttl_deleted_job_again_at_the_environments_next_sync_only(world, repo):
    ns = PROJECTS["a1"].namespace("tc")
    wait_gone(world, "PyTorchJob", ns, "a-ttl", uid=STATE.base_uid[(ns, "a-ttl")])

    def missing(objects):  # settled: Argo CD saw it gone at the head and did not sync (self-heal off)
        app = objects.get((ARGOCD_NAMESPACE, "a1-tc")) or {}
        status = app.get("status") or {}
        ours = [r for r in status.get("resources") or [] if r.get("name") == "a-ttl"]
        return app if (status.get("sync") or {}).get("revision") == STATE.head and ours and \
            ours[0].get("status") == "OutOfSync" else Missing(f"{ours}")
    wait_for(world.client, RESOURCES["Application"], missing, namespace=ARGOCD_NAMESPACE, timeout=300,
             what="Argo CD reporting a-ttl missing")
    assert get_job(world, "PyTorchJob", ns, "a-ttl") is None

    write(repo.jobs("a1") / "a-nudge.yaml", spec("a-nudge"))  # any later commit to the environment
    repo.publish()
    sha = repo.commit("plan engines: a later commit")
    _wait_app(world, "a1-tc", sha)
    again = get_job(world, "PyTorchJob", ns, "a-ttl")
    assert again is not None and again["metadata"]["uid"] != STATE.base_uid[(ns, "a-ttl")]
