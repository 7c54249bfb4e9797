"""`train-compile status` on jobs train-controller made pods for, each pod stuck for one
reason a user hits, from its real cause: kube-scheduler finds no node with 8 B200 GPUs; the
test world's kubelet (testworld.kubelet) cannot pull an image its pattern calls bad (`typo`)
and finds no Secret `hf-token`; kwok's stages run a program that keeps crashing. One
namespace and one controller for the module. The controller and `status` run with a stuck
threshold of 1 s (one rule, foundation.runs.stuck), so each stuck pod is also said on its job:
one Warning Event, which `status` lists among the job's last Warning Events, and one INFO line
in the controller's log. Each stuck job points at the spec field and line to change. With the
default threshold (3 minutes) the same pods are waiting: listed with their reasons, not
stuck, and the exit code says nothing is wrong."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

import pytest
from status_kit import ENV, apply, cli, project, spec, spec_line, train_controller, write

from testworld import stages

PULL = ("ErrImagePull", "ImagePullBackOff")  # the kubelet's two words for a failed pull, in turn
STUCK_JOBS = {
    "pulls": spec("pulls", image="ghcr.io/acme/bert:typo"),
    "secretless": spec("secretless", extra={"env": {"HF_TOKEN": {"secret": "hf-token", "key": "token"}}}),
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
            if running and refused and {"CreateContainerConfigError", "CrashLoopBackOff", "Unschedulable"} <= reasons \
                    and reasons & set(PULL) and said >= set(STUCK_PODS):
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
STUCK_PODS = {"pulls": PULL, "secretless": ("CreateContainerConfigError",), "crashes": ("CrashLoopBackOff",),
              "too-big": ("Unschedulable",)}
CONTROLLER_LOG: list[Any] = []  # the path of the module's controller's log


def job(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in doc["jobs"] if j["name"] == name)


PULLED = "ghcr.io/acme/bert:typo"
PULL_ERROR = (f'rpc error: code = NotFound desc = failed to pull and unpack image "{PULLED}": failed to resolve '
              f'reference "{PULLED}": {PULLED}: not found')


@pytest.mark.parametrize(("name", "reasons", "message"), [
    ("pulls", PULL, None),
    ("secretless", ("CreateContainerConfigError",), 'secret "hf-token" not found'),
    ("crashes", ("CrashLoopBackOff",), None),
    ("too-big", ("Unschedulable",), None),
], ids=["an image that cannot be pulled", "a missing Secret", "a program that keeps crashing",
        "no node with 8 GPUs of the type"])
def test_each_stuck_pod_says_why_with_the_kubelets_or_the_schedulers_message(stuck, name, reasons, message):
    _, _, outcome = stuck
    entry = job(outcome.json, name)
    assert entry["state"] in ("Created", "Running")  # the job itself says nothing is wrong
    [waiting] = entry["waiting"]
    assert (waiting["pod"], waiting["replicaType"], waiting["index"], waiting["stuck"]) == (
        f"{name}-master-0", "Master", 0, True)
    assert waiting["reason"] in reasons
    if message is not None:
        assert waiting["message"] == message
    if waiting["reason"] == "ErrImagePull":
        assert waiting["message"] == PULL_ERROR
    if waiting["reason"] == "ImagePullBackOff":
        assert waiting["message"] == f'Back-off pulling image "{PULLED}": ErrImagePull: {PULL_ERROR}'
    if name == "crashes":
        assert waiting["message"].endswith("last run exited 3 (Error)"), waiting
        assert waiting["phase"] == "Running"
    if name == "too-big":
        assert waiting["message"].startswith("0/14 nodes are available:"), waiting
        assert "didn't match Pod's node affinity/selector" in waiting["message"]
        assert waiting["phase"] == "Pending"




@pytest.mark.parametrize(("name", "fix", "field"), [
    ("pulls", f"image {PULLED} cannot be pulled", ("image",)),
    ("secretless", "Secret {ns}/hf-token does not exist: create it, or change", ("env", "HF_TOKEN")),
    ("too-big", "no node has GPU type b200", ("resources", "gpuType")),
    ("unclassed", "PriorityClass no-such-class does not exist", ("scheduling", "priority")),
], ids=["a bad image: spec.image", "a missing Secret: the env entry reading it", "no node of the GPU type: gpuType",
        "no such PriorityClass: spec.scheduling.priority"])
def test_a_stuck_job_points_at_the_spec_field_and_line_to_change(stuck, name, fix, field):
    jobs, ns, outcome = stuck
    [advice] = job(outcome.json, name)["fix"]
    line = spec_line(jobs / f"{name}.yaml", *field)
    assert (advice["message"], advice["field"], advice["line"]) == (fix.format(ns=ns), "spec." + ".".join(field), line)


def test_a_crash_loop_points_at_the_programs_log(stuck):
    _, ns, outcome = stuck
    [advice] = job(outcome.json, "crashes")["fix"]
    assert (advice["message"], advice["field"]) == ("the program exited 3; its log", None)
    assert advice["command"] == f"train-compile logs {ns}/crashes --replica master --index 0"


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
    assert re.fullmatch(r"environment test at https://127\.0\.0\.1:\d+", lines[0]), lines[0]
    assert lines[1] == f"{len(STUCK_JOBS)} jobs: 2 running, 4 stuck, 0 failed, 0 with drift"
    block = _block(lines, f"{ns}/pulls")
    assert re.fullmatch(rf"{ns}/pulls  PyTorchJob  Created for \d+s  \(jobs/pulls\.yaml:1\)", block[0]), block
    assert block[1] == "  pods: Master 1 Pending"
    assert re.fullmatch(r"  ! master-0: Pending, (ErrImagePull: rpc error|ImagePullBackOff: Back-off pulling).*\.\.\.",
                        block[2]) and len(block[2]) == 80, block
    fix = " ".join(line.strip() for line in block[3:5])  # folded at the width
    assert fix == f"fix: image {PULLED} cannot be pulled: spec.image, jobs/pulls.yaml:{spec_line(jobs / 'pulls.yaml', 'image')}"
    assert block[4].startswith("    ")
    assert max(len(line) for line in lines) <= 80
    wide = status(pod_world, jobs, "--wide").stdout.splitlines()
    assert any(line.endswith(PULL_ERROR) for line in _block(wide, f"{ns}/pulls")), wide


def test_a_job_whose_pods_the_api_server_refuses_shows_the_controllers_warning_events(pod_world, stuck):
    jobs, ns, outcome = stuck
    entry = job(outcome.json, "unclassed")
    assert (entry["state"], entry["pods"], entry["waiting"]) == ("Created", {}, [])
    event = entry["events"][-1]
    assert event["reason"] == "FailedCreatePod"
    assert event["message"].startswith("Error creating: ") and event["message"].endswith(
        'pods "unclassed-master-0" is forbidden: no PriorityClass with name no-such-class was found')
    block = _block(status(pod_world, jobs, "--wide").stdout.splitlines(), f"{ns}/unclassed")
    line = spec_line(jobs / 'unclassed.yaml', "scheduling", "priority")
    assert block[1:3] == ["  pods: no pods", f"  fix: PriorityClass no-such-class does not exist: "
                          f"spec.scheduling.priority, jobs/unclassed.yaml:{line}"]
    assert re.fullmatch(r"  warning \S+ ago: FailedCreatePod( x\d+)?: " + re.escape(event["message"]), block[3]), block


def test_markdown_marks_the_stuck_pods(pod_world, stuck):
    jobs, ns, _ = stuck
    outcome = status(pod_world, jobs, "--format", "markdown")
    assert outcome.code == 3
    assert f"| `{ns}/secretless` | PyTorchJob |" in outcome.stdout
    assert '- **stuck** secretless-master-0: CreateContainerConfigError: secret "hf-token" not found' in outcome.stdout
    line = spec_line(jobs / 'secretless.yaml', "env", "HF_TOKEN")
    assert (f"- fix: Secret {ns}/hf-token does not exist: create it, or change `spec.env.HF_TOKEN` at "
            f"`jobs/secretless.yaml:{line}`") in outcome.stdout


def test_before_the_threshold_the_same_pods_are_waiting_not_stuck(pod_world, stuck):
    jobs, ns, _ = stuck
    outcome = cli(pod_world, "status", jobs, "--format", "json")  # the default threshold: 3m
    assert outcome.code == 0, outcome.stdout
    waiting = {w["pod"]: (w["reason"] in STUCK_PODS[w["pod"].removesuffix("-master-0")], w["stuck"])
               for j in outcome.json["jobs"] for w in j["waiting"]}
    assert waiting == {f"{name}-master-0": (True, False) for name in STUCK_PODS}
    assert outcome.json["summary"]["stuck"] == 0
    lines = cli(pod_world, "status", jobs).stdout.splitlines()
    assert lines[1] == f"{len(STUCK_JOBS)} jobs: 2 running, 0 stuck, 0 failed, 0 with drift, 4 waiting"
    block = _block(lines, f"{ns}/secretless")
    assert block[2] == '  - master-0: Pending, CreateContainerConfigError: secret "hf-token" not found'


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
    """What the controller says is what `status` read from the pod: the pod, its reason, its message;
    the text says the Event once, without the message the pod's line above already shows."""
    jobs, ns, outcome = stuck
    entry = job(outcome.json, name)
    [waiting] = entry["waiting"]
    said = [e for e in entry["events"] if e["reason"] == STUCK_REASON]
    assert said and all(re.fullmatch(rf"Pod {name}-master-0 is stuck in ({'|'.join(STUCK_PODS[name])}) for more than "
                                     rf"{THRESHOLD}: .+", e["message"]) for e in said), said
    assert any(e["message"].endswith(f"stuck in {waiting['reason']} for more than {THRESHOLD}: {waiting['message']}")
               for e in said) or waiting["reason"] in PULL, (said, waiting)
    assert entry["state"] in ("Created", "Running")  # the conditions stay upstream's
    # a pulling pod moves ErrImagePull -> ImagePullBackOff, a second Event, at any time: the text is
    # compared with the Events of a JSON read after it that still holds the ones read before it
    for _ in range(10):
        block = _block(status(pod_world, jobs, "--wide").stdout.splitlines(), f"{ns}/{name}")
        shown = [line for line in block if line.startswith("  warning ") and STUCK_REASON in line]
        after = [e for e in job(status(pod_world, jobs, "--format", "json").json, name)["events"]
                 if e["reason"] == STUCK_REASON]
        if after == said:
            break
        said = after
    assert len(shown) == len(said), block
    if waiting["reason"] not in PULL:  # the pod's own message is on its line above, not again
        assert shown[-1].endswith(f": Pod {name}-master-0 is stuck in {waiting['reason']} for more than {THRESHOLD}"), \
            block


def test_a_healthy_job_and_a_job_without_pods_say_nothing_stuck(stuck):
    _, _, outcome = stuck
    for name in ("healthy", "unclassed"):
        assert not [e for e in job(outcome.json, name)["events"] if e["reason"] == STUCK_REASON]


def test_the_controllers_info_log_says_each_stuck_pod_once_with_the_jobs_key(stuck):
    _, ns, _ = stuck  # each pod's Event is on its job by now, and the line is logged before its Event is sent
    log = CONTROLLER_LOG[0].read_text().splitlines()
    for name, reasons in STUCK_PODS.items():
        said = [line for line in log if f" INFO controller.jobs.journal: PyTorchJob/{ns}/{name}: pod " in line]
        assert said and all(re.search(rf"pod {name}-master-0 stuck in ({'|'.join(reasons)}) for more than 1s: ", line)
                            for line in said), said
        assert len(said) == len({re.search(r" stuck in (\S+) ", line).group(1) for line in said}), said  # once each
