"""`status` on a change the cluster took and the run does not run: held for the next run by
train-controller (its run record, a ControllerRevision named on the pods, keeps the run's
spec; the upstream operator's mixed run is tests/e2e/test_status_upstream.py). Each field is
one line with its three sides (git, the job object, the run), in the spec's terms at its
line, and the way to take a held change; a `kubectl patch` that makes the job object the odd
one out is still one line. And which exit code wins when a stuck pod and an orphan meet (3: a
person is needed, before git and the cluster differ).
"""

from __future__ import annotations

import json
import re
from typing import Any

from status_kit import apply, cli, fields_of, job_of, project, spec, spec_line, train_controller, write

from testworld import stages

FOREVER = {stages.RUN_SECONDS: "forever"}








def _until(world: Any, jobs: Any, check: Any, what: str, *args: str) -> Any:
    from controller_kit import wait_for

    return wait_for(lambda: (lambda o: o if check(o) else None)(cli(world, "status", jobs, "--format", "json", *args)),
                    timeout=120, what=what)


def test_a_synced_change_of_nodes_is_held_drift_with_git_the_job_and_the_run_on_one_line(pod_world, pod_namespace,
                                                                                          tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "bert.yaml", spec("bert", nodes=2, pod=FOREVER))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2m").code == 0
        write(jobs, "bert.yaml", spec("bert", nodes=3, pod=FOREVER))
        apply(pod_world, jobs)
        outcome = _until(pod_world, jobs, lambda o: any(e["reason"] == "PyTorchJobSpecChangeHeld"
                                                        for e in job_of(o, "bert")["events"]), "the held change")
        text = cli(pod_world, "status", jobs)
    assert outcome.code == 4  # git and what runs differ
    assert fields_of(outcome, "bert") == [("spec.nodes", 3, 3, 2, "held")]
    entry = job_of(outcome, "bert")
    record = entry["run"]["record"]
    assert re.fullmatch(r"bert-[0-9a-f]{10}", record) and entry["run"]["revision"] == 1, entry["run"]
    pods = json.loads(pod_world.kubectl("get", "pods", "-n", pod_namespace, "-o", "json").stdout)["items"]
    assert {p["metadata"]["annotations"]["train-controller.trainforge.dev/revision"] for p in pods} == {record}
    assert (entry["fields"][0]["line"], entry["fields"][0]["paths"]) == (
        spec_line(jobs / "bert.yaml", "nodes"), ["spec.pytorchReplicaSpecs.Worker.replicas"])
    lines = text.stdout.splitlines()
    block = lines[lines.index(next(line for line in lines if line.startswith(f"{pod_namespace}/bert  "))):]
    assert block[1:3] == [
        "  pods: Master 1 Running; Worker 1 Running",
        f"  drift: spec.nodes, jobs/bert.yaml:{spec_line(jobs / 'bert.yaml', 'nodes')}: git 3, job 3, run 2: held"]
    assert " ".join(line.strip() for line in block[3:]) == (  # folded at 80; the controller's Event says it: not twice
        f"held for the next run by its record {record}; to run it now: suspend and resume the job, or give it a new name")
    assert len(block) == 5 and max(map(len, block[1:])) <= 80, block
    assert lines[1] == "1 jobs: 1 running, 0 stuck, 0 failed, 1 with drift"


def test_after_a_kubectl_patch_the_job_object_is_the_odd_one_and_each_field_stays_one_line(pod_world, pod_namespace,
                                                                                           tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "bert.yaml", spec("bert", pod=FOREVER))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "2m").code == 0
        patch = [{"op": "replace", "path": "/spec/pytorchReplicaSpecs/Master/template/spec/containers/0/image",
                  "value": "example.com/train:hotfix"}]
        pod_world.kubectl("patch", "pytorchjob", "bert", "-n", pod_namespace, "--type=json", "-p", json.dumps(patch))
        outcome = _until(pod_world, jobs, lambda o: job_of(o, "bert")["fields"], "the patch")
        [field] = job_of(outcome, "bert")["fields"]
        assert (field["field"], field["git"], field["job"], field["run"], field["why"]) == (
            "spec.image", "example.com/train:1", "example.com/train:hotfix", "example.com/train:1", "changed-in-cluster")
        assert field["message"].startswith("changed in the cluster by kubectl-patch (Update) at ")
        assert field["message"].endswith("; the run goes on with git's value, the job's waits for its next run")
        # git moves on too: three values, still one line
        write(jobs, "bert.yaml", spec("bert", image="example.com/train:2", pod=FOREVER))
        outcome = cli(pod_world, "status", jobs, "--format", "json")
        assert fields_of(outcome, "bert") == [("spec.image", "example.com/train:2", "example.com/train:hotfix",
                                               "example.com/train:1", "changed-in-cluster")]
        text = cli(pod_world, "status", jobs, "--wide").stdout.splitlines()
    drift = [line for line in text if line.startswith("  drift: ")]
    assert drift == [f"  drift: spec.image, jobs/bert.yaml:{spec_line(jobs / 'bert.yaml', 'image')}: git example.com/train:2, "
                     "job example.com/train:hotfix, run example.com/train:1: "
                     + job_of(outcome, "bert")["fields"][0]["message"]]


def test_a_stuck_pod_beside_an_orphan_exits_3_a_person_is_needed_first(pod_world, pod_namespace, tmp_path):
    jobs = project(tmp_path, pod_namespace)
    write(jobs, "typo.yaml", spec("typo", image="ghcr.io/acme/train:typo"))
    write(jobs, "gone.yaml", spec("gone"))
    with train_controller(pod_world, pod_namespace):
        apply(pod_world, jobs)
        (jobs / "gone.yaml").unlink()  # an orphan: exit 4 on its own
        waiting = _until(pod_world, jobs, lambda o: o.json["orphans"] and job_of(o, "typo")["waiting"], "the orphan")
        stuck = _until(pod_world, jobs, lambda o: o.json["summary"]["stuck"], "the stuck pod",
                       "--stuck-pod-threshold", "1s")
    assert waiting.code == 4  # the pod waits less than the threshold (3m): only git and the cluster differ
    assert stuck.code == 3  # past the threshold: a person is needed, whatever else differs
    assert (stuck.json["summary"]["stuck"], stuck.json["summary"]["orphans"]) == (1, 1)
