"""`status` on queued jobs real Kueue (v0.17) has not admitted, on the session pod world with
train-controller: its Workload says why, and `status` points at `spec.scheduling.queue`: a
LocalQueue that does not exist (create it, or change the queue), or a queue whose quota the
job does not fit. Kueue is confined to the module's namespace; an engine of the late phase."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from status_kit import apply, cli, job_of, project, spec, spec_line, train_controller, write

from testworld.kueue import Kueue

KUEUE_API = "kueue.x-k8s.io/v1beta2"


@pytest.fixture(scope="module")
def queued(pod_world, tmp_path_factory) -> Iterator[tuple[Any, str, Any]]:
    ns = f"queued-{uuid.uuid4().hex[:6]}"
    pod_world.kubectl("create", "namespace", ns)
    kueue = Kueue(namespaces=(ns,))
    kueue.build()
    kueue.start(pod_world)
    try:
        _queues(pod_world, ns)
        jobs = project(tmp_path_factory.mktemp("repo"), ns)
        write(jobs, "lost.yaml", spec("lost", extra={"scheduling": {"queue": "no-such-queue"}}))
        write(jobs, "big.yaml", spec("big", gpu=8, extra={"scheduling": {"queue": "small"}}))
        with train_controller(pod_world, ns):
            apply(pod_world, jobs)
            from controller_kit import wait_for

            outcome = wait_for(lambda: (lambda o: o if all(job_of(o, n).get("queue") for n in ("lost", "big"))
                                        else None)(cli(pod_world, "status", jobs, "--format", "json")),
                               timeout=120, what="both Workloads to say why they wait")
            text = cli(pod_world, "status", jobs)
        yield jobs, ns, (outcome, text)
    finally:
        kueue.stop()
        pod_world.kubectl("delete", "namespace", ns, "--wait=false", check=False)


def _queues(world: Any, ns: str) -> None:
    """One flavor and a ClusterQueue of 4 GPUs behind the LocalQueue `small` (nothing named no-such-queue)."""
    import json

    objects = [
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": f"any-{ns}"}, "spec": {}},
        {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": f"small-{ns}"}, "spec": {
            "namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"], "flavors": [{"name": f"any-{ns}", "resources": [
                    {"name": "cpu", "nominalQuota": "64"}, {"name": "memory", "nominalQuota": "256Gi"},
                    {"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]}]}},
        {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": "small", "namespace": ns},
         "spec": {"clusterQueue": f"small-{ns}"}},
    ]
    world.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def test_a_queue_that_does_not_exist_points_at_the_queue_field(queued):
    jobs, ns, (outcome, text) = queued
    entry = job_of(outcome, "lost")
    assert entry["queue"]["name"] == "no-such-queue"
    assert "LocalQueue no-such-queue doesn't exist" in entry["queue"]["message"], entry["queue"]
    [fix] = entry["fix"]
    assert (fix["message"], fix["field"], fix["line"]) == (
        f"LocalQueue {ns}/no-such-queue does not exist: create it, or change", "spec.scheduling.queue",
        spec_line(jobs / "lost.yaml", "scheduling", "queue"))
    assert outcome.code == 0 or outcome.code == 4  # waiting for a queue is no failure


def test_a_job_its_queue_has_too_little_quota_for_says_kueues_words(queued):
    jobs, ns, (outcome, text) = queued
    entry = job_of(outcome, "big")
    assert "insufficient quota for nvidia.com/gpu" in entry["queue"]["message"], entry["queue"]
    [fix] = entry["fix"]
    assert (fix["field"], fix["line"]) == ("spec.scheduling.queue", spec_line(jobs / "big.yaml", "scheduling", "queue"))
    lines = text.stdout.splitlines()
    block = lines[next(i for i, line in enumerate(lines) if line.startswith(f"{ns}/big  ")):]
    assert block[2].startswith("  - queued in small, not admitted: ") and len(block[2]) <= 80, block
