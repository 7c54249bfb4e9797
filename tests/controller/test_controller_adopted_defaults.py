"""A pod default a GitOps engine deletes from a running job is no edit to hold (issue 45, adoption).

A team's job, created by hand with the defaults written out (an `imagePullPolicy` that is the
image's own, a CPU request as the number `1`), is imported and synced: the engine's apply leaves
out what the imported spec leaves to the API server, and the job's generation moves (the
adoption e2e, tests/e2e/test_adopt_e2e.py, prints 1 -> 2). The pods it runs are the same, so
train-controller goes on with the run's record: no `SpecChangeHeld` Warning, no new record, no
pod touched (`foundation.runs.spec.same_run`). A real edit after it is held as ever, which is
also what shows the test can see a held change. On the real control plane with kwok.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from controller_kit import Cluster, settled, wait_for
from test_controller_run_integrity import NEW_IMAGE, events, running, server_side_apply
from test_controller_run_start import HELD, APPLIED, applied, pytorch, uids

from controller.jobs import run_record
from foundation import poddefaults

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too


def with_defaults(body: dict[str, Any]) -> dict[str, Any]:
    """`body` as a person writes it: each container's pull policy written out (the image's
    default) and a CPU request as a bare number."""
    out = copy.deepcopy(body)
    for spec in out["spec"]["pytorchReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["imagePullPolicy"] = poddefaults.image_pull_policy(container["image"])
            container.setdefault("resources", {}).setdefault("requests", {})["cpu"] = 1
    return out


def without_defaults(body: dict[str, Any]) -> dict[str, Any]:
    """What the engine's apply of the imported spec leaves: no pull policy, the request as "1", and
    an empty label map where the import removed a job label from the pods with null."""
    out = copy.deepcopy(body)
    for spec in out["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["metadata"]["labels"] = {}
        for container in spec["template"]["spec"]["containers"]:
            container.pop("imagePullPolicy")
            container["resources"]["requests"]["cpu"] = "1"
    return out


def test_a_default_the_engine_deletes_from_a_running_job_is_not_held(pod_world, pod_namespace) -> None:
    name = "adopted"
    cluster = Cluster(pod_world.client, pod_namespace)
    body = with_defaults(pytorch(name, pod_namespace))
    with applied(pod_world, pod_namespace, body) as managers:
        names = {f"{name}-master-0", f"{name}-worker-0"}
        wait_for(lambda: running(cluster, names), timeout=60, what="the run running")
        before = uids(cluster, name)
        record = cluster.pods()[f"{name}-master-0"]["metadata"]["annotations"][run_record.RECORD]
        mgr = managers.current()
        since = mgr.reconciles

        server_side_apply(pod_world, pod_namespace, without_defaults(body))
        settled(mgr, since)

        assert not events(cluster, name, HELD) and not events(cluster, name, APPLIED)
        assert uids(cluster, name) == before
        assert {p["metadata"]["annotations"][run_record.RECORD] for p in cluster.pods().values()} == {record}
        # a real edit after it is held, naming only what it changes
        edited = without_defaults(body)
        for spec in edited["spec"]["pytorchReplicaSpecs"].values():
            spec["template"]["spec"]["containers"][0]["image"] = NEW_IMAGE
        server_side_apply(pod_world, pod_namespace, edited)
        (held,) = wait_for(lambda: events(cluster, name, HELD), what="the image edit held")
        assert NEW_IMAGE in held["message"]
        assert "imagePullPolicy" not in held["message"] and "cpu" not in held["message"], held["message"]
        assert uids(cluster, name) == before
