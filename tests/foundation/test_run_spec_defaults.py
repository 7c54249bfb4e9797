"""`foundation.runs.spec.same_run`: a pod default written out or left out is no change of the run.

What an adopting GitOps engine deletes from a running job (an imagePullPolicy that is the image's
own, a CPU request `1` the engine writes "1") builds the same pods, so neither train-controller
nor the plan calls it an edit for the next run; a real change of the same fields still is one.
The controller's side against the real API server: tests/controller/test_controller_adopted_defaults.py.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from foundation.frameworks import adapter
from foundation.runs import spec as runspec

PYTORCH = adapter("pytorch")


def job(template: dict[str, Any] | None = None, **container: Any) -> dict[str, Any]:
    one = {"name": "pytorch", "image": "ghcr.io/acme/train:1.0", **container}
    replica = {"replicas": 1, "restartPolicy": "OnFailure",
               "template": {**(template or {}), "spec": {"containers": [one], **(template or {}).get("spec", {})}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "n"},
            "spec": {"pytorchReplicaSpecs": {"Master": copy.deepcopy(replica), "Worker": copy.deepcopy(replica)}}}


@pytest.mark.parametrize(("before", "after"), [
    pytest.param({"imagePullPolicy": "IfNotPresent"}, {}, id="a pull policy that is a tagged image's default, left out"),
    pytest.param({"resources": {"requests": {"cpu": 1}}}, {"resources": {"requests": {"cpu": "1"}}},
                 id="a CPU request written as a number, then as a string"),
    pytest.param({"resources": {"limits": {"memory": "1Gi"}}}, {"resources": {"limits": {"memory": "1024Mi"}}},
                 id="a memory limit in another unit"),
])
def test_a_default_or_another_spelling_is_the_same_run(before, after):
    assert not runspec.changed(job(**before), job(**after), PYTORCH)


def test_an_empty_label_map_is_no_labels_but_an_empty_volume_source_is_a_volume():
    """What the adoption e2e's render writes (`labels: {}` where the import removed a label with
    null) is the same run; an `emptyDir: {}` volume is one more volume."""
    assert not runspec.changed(job(), job({"metadata": {"labels": {}}}), PYTORCH)
    assert runspec.changed(job({"spec": {"volumes": [{"name": "scratch"}]}}),
                           job({"spec": {"volumes": [{"name": "scratch", "emptyDir": {}}]}}), PYTORCH)


@pytest.mark.parametrize(("before", "after"), [
    pytest.param({"imagePullPolicy": "Always"}, {}, id="a pull policy that is not the default, left out"),
    pytest.param({"resources": {"requests": {"cpu": 1}}}, {"resources": {"requests": {"cpu": "2"}}},
                 id="a CPU request that changes"),
    pytest.param({}, {"image": "ghcr.io/acme/train:2.0"}, id="a new image"),
])
def test_a_change_of_what_the_pods_run_is_another_run(before, after):
    assert runspec.changed(job(**before), job(**after), PYTORCH)
