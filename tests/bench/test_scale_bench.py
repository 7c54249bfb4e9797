"""The scale benchmark's machinery: its audit counting, its milestones, one tiny end-to-end run.

`make bench-scale` is a benchmark, not a timed test: nothing here asserts a time. These
hold its parts to what they claim (a request counted once, by the right user, from the
right moment; a job that went from Created straight to Succeeded counted as having run)
and the command to working at a size that takes seconds.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench import audit_count
from bench.scale_lifecycle import EXIT_CODE, RUN_SECONDS, Lifecycle, pytorch_job


def audit_line(audit_id: str, user: str, verb: str, resource: str, *, at: str = "2026-11-24T07:00:00.5Z",
               stage: str = "ResponseComplete", group: str = "", sub: str = "") -> str:
    ref = {"resource": resource, "namespace": "ns", **({"apiGroup": group} if group else {}),
           **({"subresource": sub} if sub else {})}
    return json.dumps({"kind": "Event", "level": "Metadata", "auditID": audit_id, "stage": stage, "verb": verb,
                       "user": {"username": user}, "objectRef": ref, "requestReceivedTimestamp": at})


def test_each_request_of_the_user_is_counted_once_by_verb_and_resource_from_the_moment_given(tmp_path: Path) -> None:
    log = tmp_path / "audit.log"
    log.write_text("\n".join([
        audit_line("1", "ctl", "create", "pods"),
        audit_line("2", "ctl", "create", "pods"),
        audit_line("3", "ctl", "watch", "pods", stage="ResponseStarted"),
        audit_line("3", "ctl", "watch", "pods"),  # the same watch, ended
        audit_line("4", "ctl", "update", "pytorchjobs", group="kubeflow.org", sub="status"),
        audit_line("5", "kwok", "patch", "pods", sub="status"),  # someone else
        audit_line("6", "ctl", "create", "pods", at="2026-11-24T06:59:59.9Z"),  # before the window
        '{"kind": "Event", "auditID": "7", "us',  # the line being written
    ]) + "\n")
    since = datetime(2026, 11, 24, 7, 0, 0, tzinfo=timezone.utc)
    counts = audit_count.count([log, tmp_path / "rotated-away.log"], "ctl", since=since)
    assert counts == Counter({("create", "pods"): 2, ("watch", "pods"): 1,
                              ("update", "kubeflow.org/pytorchjobs/status"): 1})
    assert audit_count.writes(counts) == 3 and audit_count.reads(counts) == 1


def test_the_run_ends_once_the_audit_log_stops_growing_not_before(tmp_path: Path) -> None:
    """The controller's requests are the audit log's lines: the measurement ends `quiet` s after
    the last one, however busy its CPU (upstream's stays busy a minute after its last request)."""
    import threading
    import time

    from bench.scale_bench import _idle

    log = tmp_path / "audit.log"
    log.write_text("")
    stop = time.monotonic() + 0.6

    def requests() -> None:
        while time.monotonic() < stop:
            with log.open("a") as f:
                f.write(audit_line("x", "u", "create", "events") + "\n")
            time.sleep(0.05)

    writer = threading.Thread(target=requests)
    writer.start()
    waited = _idle(lambda: sorted(tmp_path.glob("audit*.log")), quiet=0.2, timeout=30)
    writer.join()
    assert 0.6 <= waited < 5 and log.stat().st_size > 0


def test_the_audit_policy_records_the_one_user_and_nothing_else() -> None:
    import yaml

    policy = yaml.safe_load(audit_count.policy("bench-ctl"))
    assert policy["rules"] == [{"level": "Metadata", "users": ["bench-ctl"]}, {"level": "None"}]
    assert policy["omitStages"] == ["RequestReceived"]


def test_the_workload_is_master_and_workers_that_kwok_runs_for_the_given_time_and_exits_0() -> None:
    job = pytorch_job("j", 8, 25)
    specs = job["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1 and specs["Worker"]["replicas"] == 7
    for spec in specs.values():
        assert spec["template"]["metadata"]["annotations"] == {RUN_SECONDS: "25", EXIT_CODE: "0"}
        assert spec["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "100m",
                                                                                      "memory": "128Mi"}
    assert "Worker" not in pytorch_job("solo", 1, 5)["spec"]["pytorchReplicaSpecs"]


def _bookkeeping() -> Lifecycle:
    """A Lifecycle's bookkeeping only, no watches (one job, one pod, its clock at 0)."""
    life = Lifecycle.__new__(Lifecycle)
    life.running_at, life.succeeded_at, life.failed = {}, {}, set()
    life.shown_running, life.master_done_at = set(), {}
    life._pods = type("NoPods", (), {"first_seen": {}})()
    life.pods = life.jobs = 1
    life.t0 = 0.0
    return life


def test_a_job_seen_first_as_succeeded_counts_as_running_and_a_failed_one_is_kept_apart() -> None:
    life = _bookkeeping()

    def job(name: str, *conditions: str) -> dict:
        return {"metadata": {"name": name},
                "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]}}

    assert life._job_state(job("a", "Created")) == "Created"
    assert life._job_state(job("a", "Created", "Running")) == "Running"
    first_running = life.running_at["a"]
    assert life._job_state(job("a", "Created", "Succeeded")) == "Succeeded"
    assert life.running_at["a"] == first_running  # the first time it ran stays
    assert life._job_state(job("b", "Created", "Succeeded")) == "Succeeded"
    assert "b" in life.running_at and "b" in life.succeeded_at
    assert life._job_state(job("c", "Created", "Failed")) == "Failed"
    assert life.failed == {"c"} and "c" not in life.running_at
    assert life.shown_running == {"a"}  # "b" went from Created to Succeeded: Running never shown


def test_the_report_lag_runs_from_the_master_pods_success_to_the_jobs() -> None:
    life = _bookkeeping()

    def pod(job: str, rtype: str, phase: str) -> dict:
        return {"metadata": {"name": f"{job}-{rtype}-0", "labels": {"training.kubeflow.org/job-name": job,
                                                                     "training.kubeflow.org/replica-type": rtype}},
                "status": {"phase": phase}}

    life._pod_state(pod("a", "worker", "Succeeded"))  # a worker's end is not the job's
    assert life.master_done_at == {}
    life._pod_state(pod("a", "master", "Running"))
    life._pod_state(pod("a", "master", "Succeeded"))
    done = life.master_done_at["a"]
    life._pod_state(pod("a", "master", "Succeeded"))  # a later event of the same pod keeps the first time
    assert life.master_done_at["a"] == done
    life._job_state({"metadata": {"name": "a"}, "status": {"conditions": [{"type": "Succeeded", "status": "True"}]}})
    (lag,) = life.milestones().report_lags
    assert lag == life.succeeded_at["a"] - done and lag >= 0


@pytest.mark.controlplane
def test_the_scale_benchmark_runs_both_controllers_on_a_tiny_world(tmp_path: Path, capsys) -> None:
    from bench import scale_bench

    md = tmp_path / "scale.md"
    argv = ["--jobs", "3", "--pods-per-job", "2", "--nodes", "3", "--run-seconds", "1", "--default-limit-jobs", "0",
            "--timeout", "180", "--markdown", str(md)]
    assert scale_bench.main(argv) == 0  # two worlds of its own: ours, then the upstream operator v1.9.4
    out = capsys.readouterr().out
    for row in ("apply -> all 6 pods created", "apply -> all 3 jobs Running", "apply -> all 3 jobs Succeeded",
                "API requests per job, audit log", "controller CPU per 1,000 pods", "controller peak RSS",
                "kube-apiserver + etcd CPU per 1,000 pods", "job status writes per job",
                "share of jobs seen Running before Succeeded", "Master pod Succeeded -> job Succeeded, median"):
        assert row in out
    assert "baseline: upstream v1.9.4 --kube-api-qps=5000" in out
    text = md.read_text()
    assert "| ratio |" in text and "load average (1 min)" in text
    # every run counted its controller's own pods and services by the audit log
    assert "create pods 6" in text and "create services 6" in text


@pytest.mark.controlplane
def test_the_cost_curve_runs_ours_at_each_size_with_pods_bound_by_their_template(tmp_path: Path, capsys) -> None:
    """Pods that never exit, bound by template: the world has no kube-scheduler, and the last milestone
    is every job Running."""
    from bench import scale_curve

    md = tmp_path / "curve.md"
    argv = ["--sizes", "3,2", "--pods-per-job", "2", "--nodes", "3", "--run-seconds", "forever", "--bind",
            "--timeout", "180", "--markdown", str(md)]
    assert scale_curve.main(argv) == 0  # a world per size, smallest first
    out = capsys.readouterr().out
    for size in ("2 jobs x 2 pods", "3 jobs x 2 pods"):
        for figure in ("controller CPU per 1,000 pods", "controller peak RSS", "controller RSS per cached pod",
                       "API requests per job", "apply -> all jobs Running", "the world's peak RSS"):
            assert f"{size}: {figure}" in out
    assert out.index("2 jobs x 2 pods: controller CPU") < out.index("3 jobs x 2 pods: controller CPU")
    assert "baseline: 2 jobs" in out and "pods bound by their template" in md.read_text()
    assert "pods never exit" in md.read_text() and "jobs Succeeded" not in out


def test_the_curve_extrapolates_the_world_by_the_line_through_its_two_largest_sizes() -> None:
    from bench.scale_curve import world_estimate_mb

    # 1,000 MB fixed + 0.25 MB per pod: one size alone overstates, two sizes give the line
    peaks = {250: 1000 + 0.25 * 2000, 1000: 1000 + 0.25 * 8000}
    assert world_estimate_mb(peaks, 8, 10000) == pytest.approx(1000 + 0.25 * 80000)
    assert world_estimate_mb({1000: 3000.0}, 8, 10000) == pytest.approx(30000)
    # a world that shrank between two sizes is not extrapolated below what the larger one took
    assert world_estimate_mb({250: 2000.0, 1000: 1500.0}, 8, 10000) == pytest.approx(1500)


def test_the_curve_takes_forever_or_seconds_for_how_long_pods_run() -> None:
    import argparse

    from bench.scale_curve import run_seconds_arg

    assert run_seconds_arg("forever") is None and run_seconds_arg("2.5") == 2.5
    with pytest.raises(argparse.ArgumentTypeError, match="forever"):
        run_seconds_arg("soon")
    template = pytorch_job("j", 2, None)["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    assert template["metadata"]["annotations"][RUN_SECONDS] == "forever"


def test_a_bound_workload_names_its_node_in_every_template() -> None:
    specs = pytorch_job("j", 8, 25, node="scale-7")["spec"]["pytorchReplicaSpecs"]
    assert {spec["template"]["spec"]["nodeName"] for spec in specs.values()} == {"scale-7"}
    assert "nodeName" not in pytorch_job("j", 8, 25)["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
