"""`status` under the upstream operator (kubeflow/training-operator v1.9.4, the real one, on the
session pod world): it keeps no run record and builds each pod from the job as it is when it
creates the pod, so a synced image reaches the next pod it creates beside pods on the old one
(a mixed run); `status` says so on the field's one line, with the pods' side (tests/cli has
train-controller's held change). An engine of the late phase (testworld.suite.LATER)."""

from __future__ import annotations

from status_kit import apply, cli, fields_of, job_of, project, spec, spec_line, write

from testworld import stages

FOREVER = {stages.RUN_SECONDS: "forever"}


def test_under_the_upstream_operator_a_synced_image_reaches_the_next_pod_created(pod_world, pod_namespace, tmp_path):
    """No run record: the operator builds each pod from the job as it is when it creates the pod
    (semantics: a mixed run). Started here beside the session world (engines lock when run)."""
    from testworld.upstream import Operator

    jobs = project(tmp_path, pod_namespace, controller="training-operator")
    write(jobs, "bert.yaml", spec("bert", nodes=2, pod=FOREVER))
    operator = Operator(pod_namespace, schemes=["pytorchjob"], threads=2)
    operator.start(pod_world)
    try:
        apply(pod_world, jobs)
        assert cli(pod_world, "status", jobs, "--wait", "Running", "--timeout", "3m").code == 0
        write(jobs, "bert.yaml", spec("bert", nodes=2, image="example.com/train:2", pod=FOREVER))
        apply(pod_world, jobs)
        outcome = cli(pod_world, "status", jobs, "--format", "json")
        text = cli(pod_world, "status", jobs, "--wide").stdout
    finally:
        operator.stop()
    assert outcome.code == 4
    assert fields_of(outcome, "bert") == [("spec.image", "example.com/train:2", "example.com/train:2",
                                           "example.com/train:1", "old-pods")]
    assert job_of(outcome, "bert")["run"]["record"] is None
    [message] = [f["message"] for f in job_of(outcome, "bert")["fields"]]
    assert message.startswith("pods bert-master-0, bert-worker-0 run example.com/train:1: the operator builds each pod")
    assert f"drift: spec.image, jobs/bert.yaml:{spec_line(jobs / 'bert.yaml', 'image')}: git example.com/train:2, job " \
           "example.com/train:2, pods example.com/train:1: the next pod created takes it (a mixed run)" in text
    assert "held for the next run" not in text


