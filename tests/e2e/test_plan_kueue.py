"""`train-compile plan` on jobs real Kueue v0.17 manages: what Kueue does with a change, said and seen.

A world of its own (the main plan world runs the upstream operator beside train-controller;
here train-controller runs every namespace): Flux and Argo CD, Kueue confined to the plan's
namespaces with one ClusterQueue and a LocalQueue `gpus` in each, train-controller, kwok.
Base commit: queued jobs admitted and running, one unqueued job running; head commit: a new
image for a queued job (Kueue stops it, re-queues it and runs it again on the new spec:
`restarts-run`), `policy.suspend` on a queued job (Kueue's to decide: it keeps running,
`suspend-ignored`), and
a queue added to the running unqueued job (Kueue's webhook refuses it: `sync-refused`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from e2e_kit import running as started
from plan_engines_kit import (Project, Repo, active, get_job, pods, read, running, spec, wait_job, wait_pods,
                              write)

from testworld import gitops
from testworld.argocd import ArgoCD
from testworld.controller_manager import ControllerManager
from testworld.flux import Flux
from testworld.gitserver import GitPart
from testworld.kueue import Kueue
from testworld.kwok import Kwok, NodePool
from testworld.scheduler import Scheduler
from testworld.train_controller import TrainController
from testworld.world import World

QUEUED = {"namespace": "pq", "controller": "train-controller", "scheduling": {"queue": "gpus"}}
PROJECTS = {
    "fq": Project("flux", "fq", "fq", {"q": QUEUED}),
    "fqx": Project("flux", "fqx", "fqx", {"q": {"namespace": "pq", "controller": "train-controller"}}),
    "aq": Project("argocd", "aq", "aq", {"q": {**QUEUED, "namespace": "aq"}}),
}
NAMESPACES = ("pq", "aq")
KUEUE_API = "kueue.x-k8s.io/v1beta2"
CASES = {  # case -> (project, base spec, head edit)
    "q-image": ("fq", spec("q-image"), lambda d: d["spec"].update(image="ghcr.io/acme/train:2")),
    "q-suspend": ("fq", spec("q-suspend"), lambda d: d["spec"].update(policy={"suspend": True})),
    "q-newqueue": ("fqx", spec("q-newqueue"), lambda d: d["spec"].update(scheduling={"queue": "gpus"})),
    "aq-image": ("aq", spec("aq-image"), lambda d: d["spec"].update(image="ghcr.io/acme/train:2")),
}
SAID = {"q-image": ["restarts-run"], "q-suspend": ["suspend-ignored"], "q-newqueue": ["sync-refused"],
        "aq-image": ["restarts-run"]}


class State:
    head = ""
    uids: dict[str, str] = {}


STATE = State()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    parts = [ControllerManager(), Scheduler(), Kwok(nodes=(NodePool("cpu", 2, cpu="64", memory="512Gi"),)),
             GitPart(), Flux(), ArgoCD(), Kueue(namespaces=NAMESPACES), TrainController(None, workers=2)]
    with started(World(parts), "the plan's Kueue world") as world:
        yield world


@pytest.fixture(scope="module")
def repo(world) -> Repo:
    return Repo(gitops.Loop(world), projects=PROJECTS)


def _queues(world: World) -> None:
    """What a platform team sets up: one flavor, a ClusterQueue over the plan's namespaces, a LocalQueue each."""
    objects = [{"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "any"}, "spec": {}},
               {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": "plan"}, "spec": {
                   "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                                               "values": list(NAMESPACES)}]},
                   "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [{"name": "any", "resources": [
                       {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "256Gi"}]}]}]}}]
    for ns in NAMESPACES:
        world.kubectl("create", "namespace", ns)
        objects.append({"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": "gpus", "namespace": ns},
                        "spec": {"clusterQueue": "plan"}})
    for obj in objects:
        world.kubectl("apply", "--server-side", "--field-manager=platform-team", "-f", "-", input=json.dumps(obj))


def _namespace(case: str) -> str:
    return PROJECTS[CASES[case][0]].namespace("q")


def test_the_base_syncs_and_kueue_admits_the_queued_jobs(world, repo):
    _queues(world)
    repo.sync_base(CASES, "plan kueue: the base")

    for case in CASES:
        ns = _namespace(case)
        job = wait_job(world, "PyTorchJob", ns, case, lambda j: "Running" in active(j), "Running")
        wait_pods(world, ns, case, lambda ps: running(ps, 2), "Running")
        STATE.uids[case] = job["metadata"]["uid"]


def test_the_plan_says_what_kueue_will_do(repo):
    for case, (project, _, edit) in CASES.items():
        path = repo.jobs(project) / f"{case}.yaml"
        doc = read(path)
        edit(doc)
        write(path, doc)

    said = {j["name"]: j["hazards"] for key in PROJECTS for e in repo.plan(key)["environments"] for j in e["jobs"]}

    assert said == SAID


def test_the_head_syncs(world, repo):
    repo.publish()
    STATE.head = repo.commit("plan kueue: the head")
    refused = repo.loop.wait_flux("fqx-q", STATE.head, ready="False", reason="ReconciliationFailed")
    message = gitops.condition(refused, "Ready")["message"]
    assert "kueue.x-k8s.io/queue-name" in message and "field is immutable" in message, message


@pytest.mark.parametrize("case", ["q-image", "aq-image"])
def test_a_new_image_for_a_queued_job_makes_kueue_stop_requeue_and_rerun_it(world, case):
    ns = _namespace(case)
    found = wait_pods(world, ns, case, lambda ps: running(ps, 2) and all(
        p["spec"]["containers"][0]["image"].endswith(":2") for p in ps), "all on the new image", timeout=240)

    # stopped by Kueue, then resumed: the status follows the pods (after a pod burst, with --pods-first)
    job = wait_job(world, "PyTorchJob", ns, case, lambda j: any(
        c["type"] == "Suspended" and c["status"] == "False" for c in j.get("status", {}).get("conditions") or []),
        "resumed", timeout=120)
    assert job["metadata"]["uid"] == STATE.uids[case]
    assert len(found) == 2


def test_suspend_on_a_queued_job_is_kueues_and_the_run_goes_on(world, repo):
    repo.loop.wait_flux("fq-q", STATE.head, ready="False")
    job = get_job(world, "PyTorchJob", "pq", "q-suspend")
    assert job is not None and job["spec"].get("runPolicy", {}).get("suspend") is not True
    assert "Running" in active(job) and running(pods(world, "pq", "q-suspend"), 2)


def test_a_queue_added_to_a_running_job_is_refused_and_the_run_goes_on(world):
    job = get_job(world, "PyTorchJob", "pq", "q-newqueue")
    assert job is not None and "kueue.x-k8s.io/queue-name" not in (job["metadata"].get("labels") or {})
    assert running(pods(world, "pq", "q-newqueue"), 2)
