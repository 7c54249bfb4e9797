"""What the informer caches keep (foundation.jsondata): equal values in less memory,
trimmed to what the reconcile reads; and the plain-JSON copy the reconcile uses."""

from __future__ import annotations

import json
from typing import Any

import orjson
from controller_kit import job, wait_for

from foundation import jsondata


def served_pod(name: str) -> dict[str, Any]:
    """A pod as the API server returns it, parsed as the client parses it (orjson: equal keys are
    one string object, values are not shared yet)."""
    return orjson.loads(json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": "7",
                     "labels": {"training.kubeflow.org/replica-type": "worker"},
                     "ownerReferences": [{"kind": "PyTorchJob", "name": "j", "uid": "u", "controller": True}],
                     "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"containers": [{"name": "pytorch", "image": "example.com/x:1", "env": [{"name": "RANK", "value": "0"}]}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "pytorch", "restartCount": 2,
                                                                "state": {"running": {}}}]},
    }))


def test_copy_is_deep_and_equal() -> None:
    original = served_pod("a")
    copied = jsondata.copy(original)
    assert copied == original
    copied["spec"]["containers"][0]["env"].append({"name": "X"})
    copied["metadata"]["labels"]["new"] = "1"
    assert original == served_pod("a")


def test_compact_is_equal_and_shares_keys_and_short_strings_between_objects() -> None:
    served = served_pod("a"), served_pod("b")
    assert served[0]["status"]["phase"] is not served[1]["status"]["phase"]  # the parser shares keys only
    first, second = jsondata.compact(served[0]), jsondata.compact(served[1])
    assert first == served_pod("a")
    key_of = lambda obj: next(k for k in obj["metadata"]["labels"])  # noqa: E731
    assert key_of(first) is key_of(second)
    assert first["status"]["phase"] is second["status"]["phase"]
    long = "x" * (jsondata.SHORT + 1)
    assert jsondata.compact({"k": long})["k"] == long


def test_cached_objects_drop_managed_fields_and_children_their_spec() -> None:
    cached = jsondata.cached(served_pod("a"))
    assert "managedFields" not in cached["metadata"] and cached["spec"] == served_pod("a")["spec"]
    child = jsondata.cached_without_spec(served_pod("a"))
    expected = served_pod("a")
    del expected["metadata"]["managedFields"], expected["spec"]
    assert child == expected  # metadata and status as served: all the reconcile reads of a pod


def test_the_manager_caches_trimmed_objects_and_still_reconciles(cluster, manager) -> None:
    cluster.apply(job("PyTorchJob", "slim", Master=1, Worker=1))
    cluster.wait_pods({"slim-master-0", "slim-worker-0"})
    cluster.run_all("slim-master-0", "slim-worker-0")
    cluster.wait_condition("PyTorchJob", "slim", "Running")
    wait_for(lambda: len(manager.service_informer.items()) == 2, what="services cached")
    for obj in [*manager.pod_informer.items(), *manager.service_informer.items()]:
        assert "spec" not in obj and "managedFields" not in obj["metadata"], obj
        assert obj["metadata"]["ownerReferences"] and obj["metadata"]["labels"]
    cached_job = manager.job_informers["PyTorchJob"].get(cluster.namespace, "slim")
    assert "managedFields" not in cached_job["metadata"] and cached_job["spec"]["pytorchReplicaSpecs"]
    wait_for(lambda: {p["status"].get("phase") for p in manager.pod_informer.items()} == {"Running"},
             what="pod status in the cache")
