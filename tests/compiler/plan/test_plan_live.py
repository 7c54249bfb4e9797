"""`plan --live` on a real API server: each job's state turns conditional hazards into facts.

The jobs are the compiled base applied as a GitOps engine would, their status written as a
controller writes it, and for the run's facts their pods and run record created as
train-controller and the kubelet leave them (no controller runs: the state is what is under
test, not how it came about). A killed run is named with its state and age (to the second
under a minute); an edit of a finished job changes nothing that runs; an update of a running
job names its run (record, number, start) and the GPUs its placed pods hold, beside the
compiled figure; a job the cluster does not have is `absent`; the reader only reads.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest
from plan_kit import job_of, new_repo, project, running_job

pytestmark = pytest.mark.controlplane


def _stamp(ago: timedelta) -> str:
    return (datetime.now(timezone.utc) - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def _apply_base(repo, control_plane) -> None:
    """The base as the engine applied it: `render` of the committed specs, applied."""
    from compiler_builders import run_cli

    run = run_cli("render", repo.root / "jobs")
    assert run.exit_code == 0, run.stderr
    control_plane.kubectl("apply", "--server-side", "-f", "-", input=run.stdout)


def _status(control_plane, namespace: str, name: str, *conditions: tuple[str, timedelta]) -> None:
    body = {"status": {"conditions": [
        {"type": kind, "status": "True" if i == len(conditions) - 1 or kind == "Created" else "False",
         "reason": f"PyTorchJob{kind}", "message": "", "lastUpdateTime": _stamp(ago), "lastTransitionTime": _stamp(ago)}
        for i, (kind, ago) in enumerate(conditions)], "replicaStatuses": {}}}
    control_plane.kubectl("patch", "pytorchjob", name, "-n", namespace, "--subresource=status", "--type=merge",
                          "-p", json.dumps(body))


@pytest.fixture
def repo(tmp_path, control_plane, namespace):
    """Three jobs in `namespace`, committed and applied: bert Running for 3h12m, done Succeeded, paused
    Suspended."""
    repo = new_repo(tmp_path, project=project(prod={}))
    for name, policy in (("bert", {}), ("done", {}), ("paused", {"suspend": True})):
        doc = running_job(name, policy=policy)
        doc["metadata"]["namespace"] = namespace
        repo.write(f"jobs/{name}.yaml", doc)
    repo.commit()
    _apply_base(repo, control_plane)
    _status(control_plane, namespace, "bert", ("Created", timedelta(hours=4)), ("Running", timedelta(hours=3, minutes=12)))
    _status(control_plane, namespace, "done", ("Created", timedelta(hours=5)), ("Running", timedelta(hours=4)),
            ("Succeeded", timedelta(hours=2)))
    _status(control_plane, namespace, "paused", ("Created", timedelta(hours=1)), ("Suspended", timedelta(minutes=30)))
    return repo


def _live(repo, control_plane) -> dict:
    return repo.plan("--live", "--kubeconfig", str(control_plane.kubeconfig))


def test_a_deleted_running_job_is_named_with_its_state_and_age(repo, control_plane):
    repo.remove("jobs/bert.yaml")

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert (job["state"], job["hazards"]) == ("Running", ["kills-run"])
    # Running since 3h12m before the fixture's write (the age as status says it): a minute more if the machine is slow
    assert re.search(r"kills bert, Running for 3h1[23]m\b", job["summary"]), job["summary"]
    assert "compiled from" not in job["summary"]  # the cluster's job carries this spec's source


def test_a_deleted_finished_job_kills_no_run(repo, control_plane):
    repo.remove("jobs/done.yaml")

    job = job_of(_live(repo, control_plane), "done", env="prod")

    assert (job["state"], job["hazards"]) == ("Succeeded", [])
    assert "done has finished (Succeeded for 2h): no run is killed" in job["summary"]


def test_an_edit_of_a_finished_job_changes_nothing_that_runs(repo, control_plane):
    repo.edit("jobs/done.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    job = job_of(_live(repo, control_plane), "done", env="prod")

    assert (job["state"], job["hazards"]) == ("Succeeded", ["ignored-until-next-run"])
    assert "it has finished (Succeeded): the change is stored and changes nothing that runs" in job["summary"]


def test_an_edit_of_a_running_job_keeps_its_hazard(repo, control_plane):
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert (job["state"], job["hazards"]) == ("Running", ["mixed-run"])


def test_resuming_a_suspended_job_restarts_it_and_suspending_a_finished_one_does_nothing(repo, control_plane):
    repo.edit("jobs/paused.yaml", lambda docs: docs[0]["spec"].pop("policy"))
    repo.edit("jobs/done.yaml", lambda docs: docs[0]["spec"].__setitem__("policy", {"suspend": True}))

    plan = _live(repo, control_plane)

    assert job_of(plan, "paused", env="prod")["hazards"] == ["restarts-run"]
    done = job_of(plan, "done", env="prod")
    assert done["hazards"] == ["ignored-until-next-run"]


def test_a_job_the_cluster_does_not_have_is_absent_and_its_edit_is_no_mixed_run(repo, control_plane, namespace):
    control_plane.kubectl("delete", "pytorchjob", "bert", "-n", namespace)
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    plan = _live(repo, control_plane)

    job = job_of(plan, "bert", env="prod")
    assert (job["state"], job["hazards"]) == ("absent", [])
    assert plan["live"] is True
    assert {j["name"]: j["state"] for j in plan["environments"][0]["jobs"]} == {
        "bert": "absent", "done": "Succeeded", "paused": "Suspended"}


def test_a_live_job_compiled_from_another_spec_is_named(repo, control_plane, namespace):
    control_plane.kubectl("annotate", "--overwrite", "pytorchjob", "bert", "-n", namespace,
                          "trainforge.dev/source=teams/other/bert.yaml")
    repo.remove("jobs/bert.yaml")

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert "the cluster's bert was compiled from teams/other/bert.yaml, not from jobs/bert.yaml" in job["summary"]


def test_the_reader_only_reads(repo, control_plane):
    repo.remove("jobs/bert.yaml")
    before = len(control_plane.audit_events())

    _live(repo, control_plane)

    ours = [e for e in control_plane.audit_events()[before:] if e.get("userAgent", "").startswith("python-urllib3")]
    # the jobs, and for kubeflow.org/v1 jobs their pods and run records (whether a run has started)
    assert {(e["verb"], e["objectRef"]["resource"]) for e in ours} == {
        ("list", "pytorchjobs"), ("list", "pods"), ("list", "controllerrevisions")}


def _claims_repo(tmp_path, control_plane, namespace):
    """Three jobs, each with a 100Gi claim: `grow` bound, of a class that allows expansion; `fixed`
    bound, of one that does not; `pending` of the expandable class, never bound. Committed and
    applied; the head asks 200Gi of each."""
    grow, fixed = f"{namespace}-grow", f"{namespace}-fixed"
    for name, expands in ((grow, True), (fixed, False)):
        control_plane.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": "example.com/none", "allowVolumeExpansion": expands}))
    repo = new_repo(tmp_path, project=project(prod={}))
    for job, storage_class in (("grow", grow), ("fixed", fixed), ("pending", grow)):
        doc = running_job(job, storage=[{"name": "ckpt", "mountPath": "/ckpt", "size": "100Gi",
                                         "storageClass": storage_class}])
        doc["metadata"]["namespace"] = namespace
        repo.write(f"jobs/{job}.yaml", doc)
    repo.commit()
    _apply_base(repo, control_plane)
    for job in ("grow", "fixed"):  # no PV controller runs: bound as it would bind them
        control_plane.kubectl("patch", "pvc", f"{job}-ckpt", "-n", namespace, "--subresource=status",
                              "--type=merge", "-p", json.dumps({"status": {"phase": "Bound"}}))
    for job in ("grow", "fixed", "pending"):
        repo.edit(f"jobs/{job}.yaml", lambda docs: docs[0]["spec"]["storage"][0].__setitem__("size", "200Gi"))
    return repo


def test_live_reads_whether_a_claim_may_grow_as_the_api_server_decides(tmp_path, control_plane, namespace):
    from compiler_builders import run_cli

    repo = _claims_repo(tmp_path, control_plane, namespace)

    plan = _live(repo, control_plane)

    said = {name: job_of(plan, name, env="prod") for name in ("grow", "fixed", "pending")}
    assert said["grow"]["hazards"] == []
    assert "claim grow-ckpt grows (100Gi -> 200Gi): it is bound and its StorageClass allows volume expansion" \
        in said["grow"]["summary"]
    assert said["fixed"]["hazards"] == ["sync-refused"]
    assert f"its StorageClass {namespace}-fixed does not set allowVolumeExpansion: true" in said["fixed"]["summary"]
    assert said["pending"]["hazards"] == ["sync-refused"]
    assert "claim pending-ckpt is not bound (Pending): only a bound claim can grow" in said["pending"]["summary"]
    # the API server, applying the head's claims as the engine would, agrees with each
    render = run_cli("render", repo.root / "jobs")
    claims = [d for d in render.stdout.split("\n---\n") if "kind: PersistentVolumeClaim" in d]
    refused = {}
    for doc in claims:
        done = control_plane.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=doc, check=False)
        name = next(line.split(": ")[1] for line in doc.splitlines() if line.startswith("  name: "))
        refused[name] = done.returncode != 0
    assert refused == {"fixed-ckpt": True, "grow-ckpt": False, "pending-ckpt": True}


def test_live_lists_claims_and_storage_classes_only_where_a_changed_job_has_a_claim(tmp_path, control_plane,
                                                                                     namespace):
    repo = _claims_repo(tmp_path, control_plane, namespace)
    before = len(control_plane.audit_events())

    _live(repo, control_plane)

    ours = [e for e in control_plane.audit_events()[before:] if e.get("userAgent", "").startswith("python-urllib3")]
    assert {(e["verb"], e["objectRef"]["resource"]) for e in ours} == {
        ("list", "pytorchjobs"), ("list", "pods"), ("list", "controllerrevisions"), ("list", "persistentvolumeclaims"),
        ("list", "storageclasses")}


def test_a_run_younger_than_a_minute_is_aged_to_the_second(repo, control_plane, namespace):
    _status(control_plane, namespace, "bert", ("Created", timedelta(minutes=1)), ("Running", timedelta(seconds=25)))
    repo.remove("jobs/bert.yaml")

    job = job_of(_live(repo, control_plane), "bert", env="prod")

    assert re.search(r"kills bert, Running for (2[5-9]|3\d)s\b", job["summary"]), job["summary"]


def _pod(control_plane, namespace: str, name: str, *, node: str | None, started: timedelta | None,
         record: str | None = None) -> None:
    """A pod of bert as train-controller makes it (labels, its run record) and as a kubelet reports it."""
    meta: dict = {"name": name, "labels": {"training.kubeflow.org/job-name": "bert"}}
    if record:
        meta["annotations"] = {"train-controller.trainforge.dev/revision": record}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {
        **({"nodeName": node} if node else {}),
        "containers": [{"name": "pytorch", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(pod))
    if started is not None:
        status = {"status": {"phase": "Running", "containerStatuses": [{
            "name": "pytorch", "image": "x", "imageID": "", "ready": True, "restartCount": 0,
            "state": {"running": {"startedAt": _stamp(started)}}}]}}
        control_plane.kubectl("patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge",
                              "-p", json.dumps(status))


def _record(control_plane, namespace: str, name: str, number: int) -> None:
    """bert's run record, owned by the job as train-controller writes it."""
    uid = control_plane.kubectl("get", "pytorchjob", "bert", "-n", namespace, "-o", "jsonpath={.metadata.uid}").stdout
    record = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": number, "data": {"spec": {}},
              "metadata": {"name": name, "labels": {"training.kubeflow.org/job-name": "bert"}, "ownerReferences": [
                  {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "bert", "uid": uid,
                   "controller": True}]}}
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(record))


def test_an_update_of_a_running_job_names_its_run_and_the_gpus_its_placed_pods_hold(repo, control_plane, namespace):
    _record(control_plane, namespace, "bert-5f6d7c8b9a", 2)
    # its first container started after the job was created (a run starts no earlier): seconds ago
    _pod(control_plane, namespace, "bert-master-0", node="a100-0", started=timedelta(0), record="bert-5f6d7c8b9a")
    _pod(control_plane, namespace, "bert-worker-0", node=None, started=None, record="bert-5f6d7c8b9a")  # not placed
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    plan = _live(repo, control_plane)

    job = job_of(plan, "bert", env="prod")
    assert job["gpus"] == {"before": 16, "after": 24}  # the contract's: every pod of the job running
    assert (job["live"]["record"], job["live"]["revision"], job["live"]["gpus"]) == ("bert-5f6d7c8b9a", 2, 8)
    # the run's age, not the Running condition's (3h12m): the first container's start
    assert re.search(r"^spec\.nodes 2 -> 3; Running for \d+s \(run bert-5f6d7c8b9a \(revision 2\), started "
                     r"\d+s ago, 8 GPUs in use\)", job["summary"]), job["summary"]
    assert "in use now: 8 GPUs held by pods placed on nodes" in plan["environments"][0]["notes"]
    paused = job_of(plan, "paused", env="prod")
    assert (paused["live"]["gpus"], paused["live"]["record"], paused["live"]["started"]) == (0, None, None)
