"""`train-compile plan` offline: the hazards of each change, per target and controller.

Each case is a base spec, the head's edit and the environment's setting; the plan's hazards
for the job and a phrase of its sentence are pinned. Offline, a hazard that depends on the
job's state is listed whenever the old job exists. What the engines really do with each
case is proven in tests/e2e/test_plan_engines.py; this table is what the plan says.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from plan_kit import env_of, job_of, new_repo, project, running_job

from compiler_builders import job_doc

UPSTREAM = {"default": {}}
OURS = {"default": {"controller": "train-controller"}}
V2 = {"default": {"target": "trainer-v2"}}
QUEUED = {"default": {"controller": "train-controller", "scheduling": {"queue": "gpus"}}}


def spec(**fields: Any) -> Callable[[dict], None]:
    return lambda doc: doc["spec"].update(fields)


def policy(**fields: Any) -> Callable[[dict], None]:
    return lambda doc: doc["spec"].setdefault("policy", {}).update(fields)


def annotate(**fields: str) -> Callable[[dict], None]:
    return lambda doc: doc["metadata"].setdefault("annotations", {}).update(fields)


def scope(value: str) -> Callable[[dict], None]:
    return policy(restartScope=value)  # compiled to the trainforge.dev/restart-scope annotation


def elastic(doc: dict) -> None:
    doc["spec"].update(nodes=2, elastic={"minNodes": 1, "maxNodes": 4})


GANG = {"gang": {"scheduler": "volcano", "timeoutSeconds": 600}}
STORAGE = [{"name": "ckpt", "mountPath": "/ckpt", "size": "100Gi", "storageClass": "fast"}]

CASES = [
    # (id, environments, base edit, head edit, hazards, a phrase of the summary)
    ("nodes 2 -> 3 under the upstream operator mixes two shapes in one run", UPSTREAM, None, spec(nodes=3),
     ["mixed-run"], "pods of two specs"),
    ("an image change under the upstream operator mixes two templates in one run", UPSTREAM, None,
     spec(image="ghcr.io/acme/train:2"), ["mixed-run"], "image ghcr.io/acme/train:1 -> ghcr.io/acme/train:2"),
    ("nodes 2 -> 3 under train-controller is held until the next run", OURS, None, spec(nodes=3),
     ["ignored-until-next-run"], "holds the change while the run lasts"),
    ("an env change under train-controller is held until the next run", OURS, None, spec(env={"LR": "1"}),
     ["ignored-until-next-run"], "pod template of Master, Worker"),
    ("an elastic job scaled within minNodes..maxNodes is no hazard under either controller", OURS, elastic,
     spec(nodes=3), [], "scales to 3 workers"),
    ("an elastic job scaled under the upstream operator is no hazard either", UPSTREAM, elastic, spec(nodes=3),
     [], "scales to 3 workers"),
    ("an elastic job's image change under train-controller is held", OURS, elastic,
     spec(image="ghcr.io/acme/train:2"), ["ignored-until-next-run"], "holds the change"),
    ("a TTL on a job in git re-runs it once it is deleted", OURS, None, policy(ttlAfterFinished="30s"),
     ["reruns-finished"], "deletes the job 30 s after it finishes"),
    ("suspend added suspends the run", UPSTREAM, None, policy(suspend=True), ["suspends-run"], "deletes its pods"),
    ("suspend removed resumes the job from the beginning", UPSTREAM, policy(suspend=True),
     lambda doc: doc["spec"].pop("policy"), ["restarts-run"], "a resume"),
    ("a suspended job's nodes change waits for its resume", OURS, policy(suspend=True), spec(nodes=3), [],
     "the change applies when it resumes"),
    ("a resume with a new shape starts the new run on it, no mixing", UPSTREAM, policy(suspend=True),
     lambda doc: (doc["spec"].pop("policy"), doc["spec"].update(nodes=3)), ["restarts-run"], "from the head spec"),
    ("a run policy change applies to the run in progress", UPSTREAM, None, policy(backoffLimit=7), [],
     "the run in progress uses the new runPolicy.backoffLimit"),
    ("a gang timeout under the upstream operator reaches its PodGroup, no pod", UPSTREAM, spec(scheduling=GANG),
     spec(scheduling={"gang": {**GANG["gang"], "timeoutSeconds": 900}}), [],
     "the run in progress uses the new runPolicy.schedulingPolicy"),
    ("a gang timeout under train-controller is held with the run", OURS, spec(scheduling=GANG),
     spec(scheduling={"gang": {**GANG["gang"], "timeoutSeconds": 900}}), ["ignored-until-next-run"], "holds the change"),
    ("a job annotation changes nothing that runs", UPSTREAM, None, annotate(owner="ml"), [],
     "nothing that runs"),
    ("restart scope job under train-controller is held and says what a failure does", OURS, None, scope("job"),
     ["ignored-until-next-run"], "a failed pod restarts the whole job as one attempt"),
    ("a new storage class for a created claim is refused by the API server", UPSTREAM, spec(storage=STORAGE),
     spec(storage=[{**STORAGE[0], "storageClass": "slow"}]), ["sync-refused"], "refuses to change claim bert-ckpt"),
    ("a larger claim is allowed offline, assuming it is bound and its class expandable", UPSTREAM,
     spec(storage=STORAGE), spec(storage=[{**STORAGE[0], "size": "200Gi"}]), [],
     "claim bert-ckpt grows (100Gi -> 200Gi): the API server allows that on a bound claim whose StorageClass sets"
     " allowVolumeExpansion: true, which the plan assumes offline (StorageClass fast)"),
    ("a smaller claim is refused whatever its state", UPSTREAM, spec(storage=STORAGE),
     spec(storage=[{**STORAGE[0], "size": "50Gi"}]), ["sync-refused"], "refuses to change claim bert-ckpt"),
    ("suspend on a queued job is Kueue's and does not reach the job", QUEUED, None, policy(suspend=True),
     ["suspend-ignored"], "Kueue owns the suspend"),
    ("suspend removed from a queued job is Kueue's too", QUEUED, policy(suspend=True),
     lambda doc: doc["spec"].pop("policy"), ["suspend-ignored"], "Kueue owns the suspend"),
    ("a queued job's image change makes Kueue stop and re-queue it", QUEUED, None,
     spec(image="ghcr.io/acme/train:2"), ["restarts-run"], "Kueue stops the job"),
    ("a queued job's nodes change makes Kueue stop and re-queue it", QUEUED, None, spec(nodes=3), ["restarts-run"],
     "re-queues it"),
    ("a queue added to a running job is refused by Kueue's webhook", OURS, None,
     spec(scheduling={"queue": "gpus"}), ["sync-refused"], "refuses a new queue-name"),
    ("nodes 2 -> 3 under trainer-v2 is refused: spec.trainer is immutable", V2, None, spec(nodes=3),
     ["sync-refused"], "holds spec.trainer immutable"),
    ("an image change under trainer-v2 is refused", V2, None, spec(image="ghcr.io/acme/train:2"), ["sync-refused"],
     "holds spec.trainer immutable"),
    ("suspend added under trainer-v2 suspends the run", V2, None, policy(suspend=True), ["suspends-run"],
     "suspends its JobSet"),
    ("a pod label under trainer-v2 changes runtimePatches, refused while it runs", V2, None,
     lambda doc: doc["metadata"].update(labels={"team": "a"}), ["sync-refused"], "refuses a change of spec.runtimePatches"),
    ("a pod label with suspend added is refused too: the JobSet still has active pods", V2, None,
     lambda doc: (doc["metadata"].update(labels={"team": "a"}), doc["spec"].update(policy={"suspend": True})),
     ["sync-refused"], "unless the TrainJob was suspended"),
    ("a pod label of a suspended TrainJob is applied", V2, policy(suspend=True),
     lambda doc: doc["metadata"].update(labels={"team": "a"}), [], "applies when it resumes"),
    ("a new mount path under trainer-v2 is refused whatever the state: the pods' containers are immutable", V2,
     spec(storage=STORAGE), spec(storage=[{**STORAGE[0], "mountPath": "/c2"}]), ["sync-refused"],
     "holds spec.runtimePatches (the pods' containers) immutable"),
    ("a new restart limit of a whole-job TrainJob edits its own runtime, which the run in progress does not read",
     V2, policy(restartScope="job", backoffLimit=3), policy(restartScope="job", backoffLimit=5),
     ["ignored-until-next-run"], "built the running job's JobSet from its TrainingRuntime"),
    ("an annotation of a TrainJob is applied", V2, None, annotate(owner="ml"), [], "nothing that runs"),
    ("an activeDeadline added to a TrainJob is applied", V2, None, policy(activeDeadline="1h"), [],
     "spec.activeDeadlineSeconds"),
]


def _plan(tmp_path, envs: dict, base: Callable | None, head: Callable) -> dict:
    repo = new_repo(tmp_path, project=project(**envs))
    doc = running_job("bert")
    if base:
        base(doc)
    repo.write("jobs/bert.yaml", doc)
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: head(docs[0]))
    return repo.plan()


@pytest.mark.parametrize(("envs", "base", "head", "hazards", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_hazards_of_a_change(tmp_path, envs, base, head, hazards, says):
    job = job_of(_plan(tmp_path, envs, base, head), "bert")

    assert job["change"] == "update"
    assert job["hazards"] == hazards
    assert says.lower() in job["summary"].lower(), job["summary"]


def test_a_refused_update_says_what_it_does_to_the_environments_sync(tmp_path):
    plan = _plan(tmp_path, V2, None, spec(nodes=3))

    (note,) = env_of(plan)["notes"]
    assert "a refused object fails the environment's sync" in note


@pytest.mark.parametrize(("envs", "hazards"), [
    pytest.param(UPSTREAM, ["kills-run"], id="a deleted job kills its run"),
    pytest.param(V2, ["kills-run"], id="a deleted TrainJob kills its run"),
])
def test_a_delete_kills_the_run(tmp_path, envs, hazards):
    repo = new_repo(tmp_path, project=project(**envs))
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.write("jobs/keep.yaml", running_job("keep"))
    repo.commit()
    repo.remove("jobs/bert.yaml")

    job = job_of(repo.plan(), "bert")

    assert (job["change"], job["hazards"]) == ("delete", hazards)
    assert "prunes bert with its pods" in job["summary"]


def test_a_rename_kills_the_old_run_and_starts_again_from_the_beginning(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["metadata"].__setitem__("name", "bert-2"))

    job = job_of(repo.plan(), "bert-2")

    assert job["hazards"] == ["kills-run", "restarts-run"]
    assert "bert-2 starts a new run from the beginning" in job["summary"]


@pytest.mark.parametrize(("ttl", "hazards"), [
    pytest.param({"ttlAfterFinished": "1h"}, ["reruns-finished"], id="a new job with a TTL will run again"),
    pytest.param({}, [], id="a new job without one is no hazard"),
])
def test_a_create(tmp_path, ttl, hazards):
    repo = new_repo(tmp_path)
    repo.write("jobs/keep.yaml", running_job("keep"))
    repo.commit()
    repo.write("jobs/new.yaml", running_job("new", policy=ttl))

    job = job_of(repo.plan(), "new")

    assert (job["change"], job["hazards"]) == ("create", hazards)
    assert job["summary"].startswith("New job: 1 Master, 1 Worker (16 GPUs)")


def test_an_unchanged_job_with_an_old_ttl_carries_no_hazard(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/bert.yaml", running_job("bert", policy={"ttlAfterFinished": "1h"}))
    repo.commit()

    assert job_of(repo.plan(), "bert")["hazards"] == []


def test_a_trainer_v2_job_with_a_new_name_is_no_refusal_but_a_new_run(tmp_path):
    repo = new_repo(tmp_path, project=project(**V2))
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: (docs[0]["metadata"].__setitem__("name", "bert-2"),
                                              docs[0]["spec"].__setitem__("nodes", 3)))

    job = job_of(repo.plan(), "bert-2")

    assert job["hazards"] == ["kills-run", "restarts-run"]
    assert env_of(repo.plan())["notes"] == []


def test_the_jax_switch_keeps_the_kind_of_the_new_job(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/j.yaml", running_job("j"))
    repo.commit()
    repo.write("jobs/j.yaml", job_doc("jax", name="j", namespace="nlp"))

    assert "PyTorchJob -> JAXJob" in job_of(repo.plan(), "j")["summary"]


def test_a_queued_job_created_suspended_runs_as_kueue_admits_it(tmp_path):
    repo = new_repo(tmp_path, project=project(**QUEUED))
    repo.write("jobs/keep.yaml", running_job("keep"))
    repo.commit()
    repo.write("jobs/new.yaml", running_job("new", policy={"suspend": True}))

    job = job_of(repo.plan(), "new")

    assert (job["change"], job["hazards"]) == ("create", ["suspend-ignored"])
    assert "policy.suspend on a queued job is Kueue's" in job["summary"]
