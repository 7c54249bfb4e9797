"""The pure rules of `status`' one screen, on compiled specs and objects shaped as the API server
returns them (the real cluster's are tests/cli/test_status_*.py): drift said in the spec's terms
at its line, the fix for each known cause, Events said once, lines within the width, and what
`logs` refuses."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest
from status_kit import ENV, project, spec, write

from compiler.cli.live import screen
from compiler.cli.live.advice import advise
from compiler.cli.live.drift import Drift
from compiler.cli.live.gather import EventView, JobReport
from compiler.cli.live.logsource import Pick, refusal
from compiler.cli.live.pods import POD_LABELS, PodView
from compiler.cli.live.specs import SpecJob, spec_jobs
from compiler.cli.live.terms import in_spec_terms

NOW = datetime(2026, 11, 28, 7, 5, tzinfo=timezone.utc)
V1 = POD_LABELS["kubeflow.org"]
RS = "spec.pytorchReplicaSpecs"
IMAGE = ("template", "spec", "containers", 0, "image")


def compiled(tmp_path: Any, *docs: dict[str, Any]) -> dict[str, SpecJob]:
    from compiler.pipeline import compile_sources

    jobs = project(tmp_path, "ml")
    write(jobs, "a.yaml", *docs)
    result = compile_sources([jobs], env=ENV)
    assert result.ok, [str(d) for d in result.diagnostics]
    return {s.name: s for s in spec_jobs(result, ENV)}


def line_of(job: SpecJob, *loc: str) -> int:
    return job.target.doc.position(("spec", *loc))[0]


def test_replica_counts_are_said_as_nodes_and_images_of_every_type_as_one_line(tmp_path):
    bert = compiled(tmp_path, spec("bert", nodes=3, image="x:2"))["bert"]
    live = {**bert.compiled, "spec": {**bert.compiled["spec"]}}
    record = {"spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 1}}}}
    found = [Drift(f"{RS}.Worker.replicas", 2, 2, "held", "m", 1, ("spec", "pytorchReplicaSpecs", "Worker", "replicas")),
             Drift(f"{RS}.Master...image", "x:2", "x:2", "held", "m", "x:1", ("spec", "pytorchReplicaSpecs", "Master", *IMAGE)),
             Drift(f"{RS}.Worker...image", "x:2", "x:2", "held", "m", "x:1", ("spec", "pytorchReplicaSpecs", "Worker", *IMAGE))]
    fields = in_spec_terms(found, bert, live=live, record=record)
    assert [(f.field, f.line, f.git, f.job, f.run, len(f.paths)) for f in fields] == [
        ("spec.nodes", line_of(bert, "nodes"), 3, 3, 2, 1), ("spec.image", line_of(bert, "image"), "x:2", "x:2", "x:1", 2)]


def test_a_field_no_spec_field_stands_for_keeps_the_jobs_path_at_the_specs_first_line(tmp_path):
    bert = compiled(tmp_path, spec("bert"))["bert"]
    path = ("spec", "runPolicy", "backoffLimit")
    [field] = in_spec_terms([Drift("spec.runPolicy.backoffLimit", 0, 3, "changed-in-cluster", "m", at=path)], bert,
                            live=bert.compiled, record=None)
    assert (field.field, field.line, field.git, field.job) == ("spec.runPolicy.backoffLimit", 1, 0, 3)


def report(job: SpecJob, *pods: PodView, raw: list[dict[str, Any]] = (), events: list[EventView] = (),
           state: str = "Created") -> JobReport:
    from foundation.runs.state import JobState

    return JobReport(job, job.compiled, JobState(state, "2026-11-28T07:00:00Z"), ("Master", "Worker"), list(pods),
                     list(events), raw_pods=list(raw))


def waiting(name: str, reason: str, message: str, *, replica: str = "Master", phase: str = "Pending") -> PodView:
    return PodView(name, replica, 0, phase, False, 0, "", reason, message, "pytorch", stuck=True)


def test_a_pod_asking_more_gpus_than_any_node_has_points_at_the_gpu_count(tmp_path):
    big = compiled(tmp_path, spec("big", gpu=16))["big"]
    raw = {"metadata": {"name": "big-master-0"}, "spec": {"containers": [
        {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": "16"}}}]}}
    message = "0/14 nodes are available: 10 Insufficient nvidia.com/gpu, 4 node(s) had untolerated taint."
    job = report(big, waiting("big-master-0", "Unschedulable", message), raw=[raw])
    [too_big] = advise(job, largest={"nvidia.com/gpu": 8.0})
    assert too_big.said("jobs/a.yaml") == (f"16 GPUs per node requested; the largest node has 8: spec.resources.gpu, "
                                           f"jobs/a.yaml:{line_of(big, 'resources', 'gpu')}")
    [room] = advise(job, largest={"nvidia.com/gpu": 16.0})
    assert room.text == "16 GPUs per node requested; no node has that free now: the pods wait for room"
    [unknown] = advise(job, largest=None)  # nodes unreadable: no figure made up
    assert unknown.text == room.text


def test_a_missing_secret_points_at_the_env_entry_that_reads_it_and_a_role_s_own_first(tmp_path):
    token = {"secret": "hf", "key": "token"}
    jobs = compiled(tmp_path, spec("a", extra={"env": {"HF_TOKEN": token}}),
                    spec("b", nodes=2, extra={"roles": {"worker": {"env": {"TOKEN": token}}}}))
    [a] = advise(report(jobs["a"], waiting("a-master-0", "CreateContainerConfigError", 'secret "hf" not found')))
    assert a.said("jobs/a.yaml") == (f"Secret ml/hf does not exist: create it, or change spec.env.HF_TOKEN, "
                                     f"jobs/a.yaml:{line_of(jobs['a'], 'env', 'HF_TOKEN')}")
    [b] = advise(report(jobs["b"], waiting("b-worker-0", "CreateContainerConfigError",
                                           "couldn't find key token in Secret ml/hf", replica="Worker")))
    assert (b.text, b.field) == ("Secret ml/hf has no key token: create it, or change", "spec.roles.worker.env.TOKEN")


def test_an_image_that_cannot_be_pulled_and_a_failed_program(tmp_path):
    a = compiled(tmp_path, spec("a", image="x:typo"))["a"]
    raw = {"metadata": {"name": "a-master-0"}, "spec": {"containers": [{"name": "pytorch", "image": "x:typo"}]}}
    [pull] = advise(report(a, waiting("a-master-0", "ErrImagePull", "not found"), raw=[raw]))
    assert (pull.text, pull.field, pull.line) == ("image x:typo cannot be pulled", "spec.image", line_of(a, "image"))
    [failed] = advise(report(a, waiting("a-master-0", "Error", "exit code 2", phase="Failed"), state="Failed"))
    assert failed.said("jobs/a.yaml") == "the program exited 2; its log: train-compile logs ml/a --replica master --index 0"


def test_an_event_repeating_one_message_per_pod_is_said_once_without_what_a_line_above_shows(tmp_path):
    a = compiled(tmp_path, spec("a", nodes=3))["a"]
    msg = "0/14 nodes are available: 10 Insufficient nvidia.com/gpu."
    event = screen.COMBINED + "; ".join(f"Pod a-{p} is stuck in Unschedulable for more than 3m: {msg}"
                                        for p in ("master-0", "worker-0", "worker-1"))
    job = report(a, *(waiting(f"a-{p}", "Unschedulable", msg) for p in ("master-0", "worker-0", "worker-1")))
    assert screen.event_text(event, job, [msg]) == "Pod master-0, worker-0, worker-1 is stuck in Unschedulable for more than 3m"
    assert screen.event_text(event, job, [msg], wide=True) == (
        "Pod a-master-0, a-worker-0, a-worker-1 is stuck in Unschedulable for more than 3m")
    assert screen.event_text("Pod a-master-0 exited; Pod a-worker-0 is stuck", job, []) == (
        "Pod master-0 exited; Pod worker-0 is stuck")  # different sentences: kept, names shortened


def test_long_messages_are_cut_at_the_width_and_our_sentences_folded():
    page = screen.Page(NOW, 40)
    assert page.cut("x" * 50) == "x" * 37 + "..."
    assert page.fold("fix: " + "word " * 12, indent="  ") == [
        "  fix: word word word word word word", "    word word word word word word"]
    assert screen.Page(NOW, None).cut("x" * 50) == "x" * 50


def test_events_of_one_reason_about_different_pods_are_one_line_and_the_last_of_each_reason_stays(tmp_path):
    a = compiled(tmp_path, spec("a", nodes=3))["a"]
    job = report(a)
    events = [EventView("PodStuck", "Pod a-master-0 is stuck in Unschedulable for more than 3m", 1, "t1"),
              EventView("Other", "something else", 2, "t2"),
              EventView("PodStuck", "Pod a-worker-0 is stuck in Unschedulable for more than 3m", 1, "t3"),
              EventView("PodStuck", "Pod a-worker-1 is stuck in ImagePullBackOff for more than 3m", 1, "t4")]
    said = [(s.reason, s.text, s.count, s.last, s.earlier) for s in screen._folded(events, job, [])]
    assert said == [("Other", "something else", 2, "t2", 0),
                    ("PodStuck", "Pod worker-1 is stuck in ImagePullBackOff for more than 3m", 1, "t4", 1)]
    said = [(s.text, s.count) for s in screen._folded(events[:3], job, [])]
    assert said == [("something else", 2), ("Pod master-0, worker-0 is stuck in Unschedulable for more than 3m", 2)]


LIVE = {"kind": "PyTorchJob", "metadata": {"namespace": "ml", "name": "talk"}, "spec": {"pytorchReplicaSpecs": {
    "Master": {"replicas": 1, "template": {"spec": {"containers": [{"name": "pytorch"}]}}},
    "Worker": {"replicas": 2, "template": {"spec": {"containers": [{"name": "pytorch"}]}}}}}}


@pytest.mark.parametrize(("pick", "said"), [
    (Pick(replica="chief"), "PyTorchJob has no replica type chief (its types: Master, Worker); ml/talk has Master x1, "
                            "Worker x2"),
    (Pick(index=2), "ml/talk has 1 Master pod (index 0), 2 Worker pods (index 0-1); no index 2"),
    (Pick(replica="WORKER", index=2), "ml/talk has 2 Worker pods (index 0-1); no index 2"),
    (Pick(container="sidecar"), "ml/talk's pods have no container sidecar (containers: pytorch)"),
    (Pick(replica="worker", index=1, container="pytorch"), None),
], ids=["a replica type the kind lacks", "an index past every type's", "an index past the worker's",
        "a container none has", "what it has"])
def test_what_a_job_can_never_have_is_refused_naming_what_it_has(pick, said):
    assert refusal(LIVE, pick, replica_types=("Master", "Worker"), replica_specs="pytorchReplicaSpecs", pods=[],
                   labels=V1) == said
