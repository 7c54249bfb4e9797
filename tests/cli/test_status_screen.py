"""`status` on one screen: the six jobs of issue 48's walk-through (six_jobs.py), built for real
on the pod world with train-controller. Measured: every line within 80 columns (a terminal's
width; `--wide` prints everything whole), at most two lines per healthy job, a summary line,
each stuck or failed job pointing at the spec field and line to change, the held change as
one drift line with its three sides, only the current run's Warning Events, and a running
job's age from its run's start."""

from __future__ import annotations

import json
from typing import Any

import pytest
from six_jobs import STUCK, build
from status_kit import cli, spec_line, train_controller

WIDTH = 80


@pytest.fixture(scope="module")
def screen(pod_world, tmp_path_factory) -> Any:
    import uuid

    ns = f"six-{uuid.uuid4().hex[:6]}"
    pod_world.kubectl("create", "namespace", ns)
    with train_controller(pod_world, ns, f"--stuck-pod-threshold={STUCK}"):
        jobs = build(pod_world, tmp_path_factory.mktemp("repo"), ns)
        text = cli(pod_world, "status", jobs, "--stuck-pod-threshold", STUCK)
        doc = cli(pod_world, "status", jobs, "--stuck-pod-threshold", STUCK, "--format", "json")
        wide = cli(pod_world, "status", jobs, "--stuck-pod-threshold", STUCK, "--wide")
        events = json.loads(pod_world.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
        yield jobs, ns, text, doc.json, wide, events
    pod_world.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def _blocks(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for block in text.split("\n\n")[1:]:
        lines = block.splitlines()
        out[lines[0].split("  ")[0].split("/")[1]] = lines
    return out




def test_the_six_jobs_fit_one_screen_of_80_columns(screen):
    _, _, text, _, wide, _ = screen
    assert text.code == 3  # stuck pods and a failed job: a person is needed
    lines = text.stdout.splitlines()
    assert max(len(line) for line in lines) <= WIDTH, [line for line in lines if len(line) > WIDTH]
    assert len(lines) <= 40, text.stdout
    blocks = _blocks(text.stdout)
    assert len(blocks["resnet"]) == 2  # a healthy job: its head line and its pods
    assert max(len(line) for line in wide.stdout.splitlines()) > WIDTH  # --wide cuts nothing


def test_a_summary_line_counts_the_jobs_by_what_needs_a_look(screen):
    _, _, text, doc, _, _ = screen
    assert text.stdout.splitlines()[1] == "6 jobs: 2 running, 3 stuck, 1 failed, 1 with drift"
    assert doc["summary"] == {"jobs": 6, "running": 2, "stuck": 3, "failed": 1, "drift": 1, "absent": 0, "orphans": 0}


@pytest.mark.parametrize(("job", "said"), [
    ("llama-pretrain", "fix: 16 GPUs per node requested; the largest node has 8: spec.resources.gpu, "
                       "jobs/llama.yaml:{line}"),
    ("t5-finetune", "fix: image ghcr.io/acme/t5:typo cannot be pulled: spec.image, jobs/t5.yaml:{line}"),
    ("tokenize", "fix: Secret {ns}/hf-token does not exist: create it, or change spec.env.HF_TOKEN, "
                 "jobs/tokens.yaml:{line}"),
    ("eval-nightly", "fix: the program exited 1; its log: train-compile logs {ns}/eval-nightly --replica master "
                     "--index 0"),
], ids=["16 GPUs per node: the GPU count's line", "a typo'd image: the image's line",
        "a missing Secret: the env entry's line", "a failed program: its log"])
def test_each_stuck_or_failed_job_says_what_to_change_and_where(screen, job, said):
    jobs, ns, text, _, _, _ = screen
    loc = {"llama-pretrain": ("llama.yaml", "resources", "gpu"), "t5-finetune": ("t5.yaml", "image"),
           "tokenize": ("tokens.yaml", "env", "HF_TOKEN")}.get(job)
    line = spec_line(jobs / loc[0], *loc[1:], name=job) if loc else 0
    block = _blocks(text.stdout)[job]
    start = next(i for i, row in enumerate(block) if row.startswith("  fix: "))
    folded = [block[start]] + [row for row in block[start + 1:start + 2] if row.startswith("    ")]
    assert " ".join(row.strip() for row in folded) == said.format(line=line, ns=ns), block


def test_a_held_change_is_one_line_with_git_the_job_and_the_run(screen):
    jobs, _, text, doc, _, _ = screen
    block = _blocks(text.stdout)["bert-finetune"]
    assert block[2] == f"  drift: spec.nodes, jobs/bert.yaml:{spec_line(jobs / 'bert.yaml', 'nodes')}: " \
                       "git 3, job 3, run 2: held"
    assert " ".join(row.strip() for row in block[3:]).startswith("held for the next run by its record bert-finetune-")
    entry = next(j for j in doc["jobs"] if j["name"] == "bert-finetune")
    assert [(f["field"], f["git"], f["job"], f["run"], f["why"]) for f in entry["fields"]] == [
        ("spec.nodes", 3, 3, 2, "held")]
    assert not any("SpecChangeHeld" in row for row in block)  # the drift line says it, once


def test_only_the_current_runs_warnings_stand_beside_a_healthy_run(screen):
    _, _, text, doc, _, events = screen
    earlier = [e for e in events if e["involvedObject"]["name"] == "resnet" and e["reason"] == "PyTorchJobPodStuck"]
    assert earlier, "the first run's stuck image is an Event on the job"
    resnet = next(j for j in doc["jobs"] if j["name"] == "resnet")
    assert (resnet["state"], resnet["events"]) == ("Running", [])
    assert _blocks(text.stdout)["resnet"][1] == "  pods: Master 1 Running"


def test_a_running_jobs_age_is_its_runs_from_its_first_container_start(screen):
    _, _, _, doc, _, _ = screen
    for name in ("bert-finetune", "resnet"):
        entry = next(j for j in doc["jobs"] if j["name"] == name)
        assert entry["since"] == entry["run"]["started"], entry
    resnet = next(j for j in doc["jobs"] if j["name"] == "resnet")
    # resumed: its run began at the resume, after the job's creation and its first run's start
    assert resnet["run"]["started"] >= resnet["run"]["began"]


def test_an_aggregated_event_repeating_the_schedulers_message_per_pod_is_one_line(screen):
    _, _, text, doc, wide, _ = screen
    llama = next(j for j in doc["jobs"] if j["name"] == "llama-pretrain")
    message = llama["waiting"][0]["message"]
    for shown in (text.stdout, wide.stdout):
        block = _blocks(shown)["llama-pretrain"]
        assert sum(message[:24] in row for row in block) == 1, block  # the pods' line; the Event does not repeat it
    combined = [e for e in llama["events"] if e["message"].startswith("(combined from similar events)")]
    if combined:  # the controller's Event for both pods: one sentence with both names
        rows = [row for row in _blocks(wide.stdout)["llama-pretrain"] if "PyTorchJobPodStuck" in row]
        assert any("llama-pretrain-master-0, llama-pretrain-worker-0 is stuck in Unschedulable" in row for row in rows)
