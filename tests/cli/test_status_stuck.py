"""`train-compile status` on jobs train-controller made pods for, each pod stuck for one
reason a user hits: produced for real (kube-scheduler finds no node with 8 B200 GPUs;
kwok's kubelet stages for a pull back-off, a missing Secret, a crash loop), one
namespace and one controller for the module. The controller and `status` run with a stuck
threshold of 1 s (one rule, foundation.runs.stuck), so each stuck pod is also said on its job:
one Warning Event, which `status` lists among the job's last Warning Events, and one INFO line
in the controller's log. With the default threshold (3 minutes) the same pods are waiting:
listed with their reasons, not stuck, and the exit code says nothing is wrong."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest
from status_kit import ENV, apply, cli, project, spec, train_controller, write

from testworld import stages

STUCK_JOBS = {
    "pulls": spec("pulls", pod={stages.WAITING_REASON: "ImagePullBackOff"}, image="ghcr.io/acme/bert:9.9"),
    "secretless": spec("secretless", pod={stages.WAITING_REASON: "CreateContainerConfigError"},
                       extra={"env": {"HF_TOKEN": {"secret": "hf-token", "key": "token"}}}),
    "crashes": spec("crashes", pod={stages.RUN_SECONDS: "0.5", stages.EXIT_CODE: "3",
                                    stages.RESTART_DELAY: "3600"}),
    "too-big": spec("too-big", gpu=8, gpu_type="b200"),
    "healthy": spec("healthy", nodes=2, pod={stages.RUN_SECONDS: "forever"}),
    # the API server refuses its pods: only the controller's Warning Events on the job say why
    "unclassed": spec("unclassed", extra={"scheduling": {"priority": "no-such-class"}}),
}


@pytest.fixture(scope="module")
def stuck(pod_world, tmp_path_factory) -> Any:
    ns = f"stuck-{uuid.uuid4().hex[:6]}"
    pod_world.kubectl("create", "namespace", ns)
    jobs = project(tmp_path_factory.mktemp("repo"), ns)
    for name, body in STUCK_JOBS.items():
        write(jobs, f"{name}.yaml", body)
    with train_controller(pod_world, ns, f"--stuck-pod-threshold={THRESHOLD}") as controller:
        apply(pod_world, jobs)
        deadline = time.monotonic() + 120
        while True:  # until every stuck pod says why, on its pod and its job, and the healthy job runs
            outcome = status(pod_world, jobs, "--format", "json")
            doc = outcome.json
            reasons = {w["reason"] for j in doc["jobs"] for w in j.get("waiting", [])}
            said = {j["name"] for j in doc["jobs"] if any(e["reason"] == STUCK_REASON for e in j.get("events", []))}
            running = next(j for j in doc["jobs"] if j["name"] == "healthy")["state"] == "Running"
            refused = next(j for j in doc["jobs"] if j["name"] == "unclassed").get("events")
            if running and refused and {"ImagePullBackOff", "CreateContainerConfigError", "CrashLoopBackOff",
                                        "Unschedulable"} <= reasons and said >= set(STUCK_PODS):
                break
            assert time.monotonic() < deadline, outcome.stdout
            time.sleep(0.5)
        CONTROLLER_LOG[:] = [controller.log_path]
        yield jobs, ns, outcome
    pod_world.kubectl("delete", "namespace", ns, "--wait=false", check=False)


THRESHOLD = "1s"


def status(world: Any, jobs: Any, *args: str) -> Any:
    """`status` with the controller's stuck threshold."""
    return cli(world, "status", jobs, "--stuck-pod-threshold", THRESHOLD, *args)
STUCK_REASON = "PyTorchJobPodStuck"
STUCK_PODS = {"pulls": "ImagePullBackOff", "secretless": "CreateContainerConfigError", "crashes": "CrashLoopBackOff",
              "too-big": "Unschedulable"}
CONTROLLER_LOG: list[Any] = []  # the path of the module's controller's log


def job(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in doc["jobs"] if j["name"] == name)


@pytest.mark.parametrize(("name", "pod", "reason", "message"), [
    ("pulls", "pulls-master-0", "ImagePullBackOff", 'Back-off pulling image "ghcr.io/acme/bert:9.9"'),
    ("secretless", "secretless-master-0", "CreateContainerConfigError", 'secret "hf-token" not found'),
    ("crashes", "crashes-master-0", "CrashLoopBackOff", None),
    ("too-big", "too-big-master-0", "Unschedulable", None),
], ids=["an image that cannot be pulled", "a missing Secret", "a program that keeps crashing",
        "no node with 8 GPUs of the type"])
def test_each_stuck_pod_says_why_with_the_kubelets_or_the_schedulers_message(stuck, name, pod, reason, message):
    _, _, outcome = stuck
    entry = job(outcome.json, name)
    assert entry["state"] in ("Created", "Running")  # the job itself says nothing is wrong
    [waiting] = entry["waiting"]
    assert (waiting["pod"], waiting["replicaType"], waiting["index"], waiting["reason"], waiting["stuck"]) == (
        pod, "Master", 0, reason, True)
    if message is not None:
        assert waiting["message"] == message
    if reason == "CrashLoopBackOff":
        assert waiting["message"].endswith("last run exited 3 (Error)"), waiting
        assert waiting["phase"] == "Running"
    if reason == "Unschedulable":
        assert waiting["message"].startswith("0/14 nodes are available:"), waiting
        assert "didn't match Pod's node affinity/selector" in waiting["message"]
        assert waiting["phase"] == "Pending"


def test_the_healthy_job_shows_its_pods_by_replica_type_and_phase(stuck):
    _, _, outcome = stuck
    entry = job(outcome.json, "healthy")
    assert entry["state"] == "Running" and entry["pods"] == {"Master": {"Running": 1}, "Worker": {"Running": 1}}
    assert entry["waiting"] == [] and entry["drift"] == []


def test_stuck_pods_make_the_exit_code_3_and_the_text_names_each(pod_world, stuck):
    jobs, ns, _ = stuck
    outcome = status(pod_world, jobs)
    assert outcome.code == 3, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert lines[0].startswith(f"environment {ENV} at https://127.0.0.1:")
    assert lines[0].endswith(f": {len(STUCK_JOBS)} spec(s), 0 without a live job, 0 orphan(s)")
    block = _block(lines, f"{ns}/pulls")
    assert block[0].startswith(f"{ns}/pulls  PyTorchJob  Running for ") or block[0].startswith(
        f"{ns}/pulls  PyTorchJob  Created for "), block
    assert block[0].endswith("  (jobs/pulls.yaml:1)")
    assert block[1:3] == ["  pods: Master 1 Pending",
                          '  ! pulls-master-0: Pending, ImagePullBackOff: Back-off pulling image "ghcr.io/acme/bert:9.9"']


def test_a_job_whose_pods_the_api_server_refuses_shows_the_controllers_warning_events(pod_world, stuck):
    jobs, ns, outcome = stuck
    entry = job(outcome.json, "unclassed")
    assert (entry["state"], entry["pods"], entry["waiting"]) == ("Created", {}, [])
    event = entry["events"][-1]
    assert event["reason"] == "FailedCreatePod"
    assert event["message"].startswith("Error creating: ") and event["message"].endswith(
        'pods "unclassed-master-0" is forbidden: no PriorityClass with name no-such-class was found')
    block = _block(status(pod_world, jobs).stdout.splitlines(), f"{ns}/unclassed")
    assert block[1:3] == ["  pods: no pods", "  warning events:"]
    assert re.fullmatch(r"    \S+ ago  FailedCreatePod( x\d+)?: " + re.escape(event["message"]), block[3]), block


def test_markdown_marks_the_stuck_pods(pod_world, stuck):
    jobs, ns, _ = stuck
    outcome = status(pod_world, jobs, "--format", "markdown")
    assert outcome.code == 3
    assert f"| `{ns}/secretless` | PyTorchJob |" in outcome.stdout
    assert '- **stuck** secretless-master-0: CreateContainerConfigError: secret "hf-token" not found' in outcome.stdout


def test_before_the_threshold_the_same_pods_are_waiting_not_stuck(pod_world, stuck):
    jobs, ns, _ = stuck
    outcome = cli(pod_world, "status", jobs, "--format", "json")  # the default threshold: 3m
    assert outcome.code == 0, outcome.stdout
    waiting = {w["pod"]: (w["reason"], w["stuck"]) for j in outcome.json["jobs"] for w in j["waiting"]}
    assert waiting == {f"{name}-master-0": (reason, False) for name, reason in STUCK_PODS.items()}
    assert outcome.json["summary"]["stuck"] == 0
    block = _block(cli(pod_world, "status", jobs).stdout.splitlines(), f"{ns}/pulls")
    assert block[2] == '  - pulls-master-0: Pending, ImagePullBackOff: Back-off pulling image "ghcr.io/acme/bert:9.9"'


def _block(lines: list[str], head: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if line.startswith(head + "  "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def test_each_job_names_its_spec_by_its_path_from_the_repository_root(stuck):
    _, _, outcome = stuck
    assert {(j["name"], j["source"], j["line"]) for j in outcome.json["jobs"]} == {
        (n, f"jobs/{n}.yaml", 1) for n in STUCK_JOBS}


@pytest.mark.parametrize("name", sorted(STUCK_PODS), ids=lambda n: f"the {n} job")
def test_a_stuck_pod_is_one_warning_event_on_its_job_that_status_shows(pod_world, stuck, name):
    """What the controller says is what `status` read from the pod: the pod, its reason, its message."""
    jobs, ns, outcome = stuck
    entry = job(outcome.json, name)
    [waiting] = entry["waiting"]
    [event] = [e for e in entry["events"] if e["reason"] == STUCK_REASON]
    assert event["message"] == (f"Pod {name}-master-0 is stuck in {STUCK_PODS[name]} for more than {THRESHOLD}: "
                                f"{waiting['message']}"), event
    assert entry["state"] in ("Created", "Running")  # the conditions stay upstream's
    block = _block(status(pod_world, jobs).stdout.splitlines(), f"{ns}/{name}")
    assert "  warning events:" in block
    assert any(line.endswith(f"{STUCK_REASON}: {event['message']}") for line in block), block


def test_a_healthy_job_and_a_job_without_pods_say_nothing_stuck(stuck):
    _, _, outcome = stuck
    for name in ("healthy", "unclassed"):
        assert not [e for e in job(outcome.json, name)["events"] if e["reason"] == STUCK_REASON]


def test_the_controllers_info_log_says_each_stuck_pod_once_with_the_jobs_key(stuck):
    _, ns, _ = stuck  # each pod's Event is on its job by now, and the line is logged before its Event is sent
    log = CONTROLLER_LOG[0].read_text().splitlines()
    for name, reason in STUCK_PODS.items():
        said = [line for line in log if f" INFO controller.jobs.journal: PyTorchJob/{ns}/{name}: pod " in line]
        assert len(said) == 1 and f"pod {name}-master-0 stuck in {reason} for more than 1s: " in said[0], said
