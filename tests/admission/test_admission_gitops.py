"""What a GitOps user sees (issue 20): Flux syncs issue 20's PyTorchJob from git onto a cluster
with the shipped policies and reports upstream's refusal in its Kustomization's status, where
without admission the sync was green and the job never ran."""

from __future__ import annotations

import json
import time
from pathlib import Path

from admission_kit import wait_enforced

from foundation.cluster.connection import Connection
from foundation.cluster.kube import config_loader
from testworld.flux import apply

ADMISSION = Path(__file__).resolve().parents[2] / "controller" / "install" / "admission"
ISSUE_20 = ('spec.runPolicy.managedBy: Unsupported value: "kueue.x-k8s.io/other-controller": supported values:'
            ' "kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator"')
JOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: issue-20, namespace: team-a}
spec:
  runPolicy: {managedBy: kueue.x-k8s.io/other-controller}
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template: {spec: {containers: [{name: pytorch, image: example.com/train:1}]}}
"""


def _ready(world) -> dict:
    body = json.loads(world.kubectl("get", "kustomizations.kustomize.toolkit.fluxcd.io", "jobs", "-n", "flux-system",
                                    "-o", "json").stdout)
    return next((c for c in (body.get("status") or {}).get("conditions", []) if c["type"] == "Ready"), {})


def test_flux_shows_the_refusal_in_its_kustomization_status(world_factory) -> None:
    world = world_factory(["git", "flux"])
    world.kubectl("apply", "--server-side", "-k", str(ADMISSION))  # as the install applies them: cluster-wide
    world.kubectl("create", "namespace", "team-a")
    api = Connection(config_loader(str(world.kubeconfig)))
    try:
        wait_enforced(api, "team-a")
    finally:
        api.close()
    repo = world.part("git").create("jobs")
    repo.write("jobs/kustomization.yaml", "resources: [job.yaml]\n")
    repo.write("jobs/job.yaml", JOB)
    repo.commit("issue 20's job")
    flux = world.part("flux")
    flux.git_repository("jobs", repo.url)
    apply(world, {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                  "metadata": {"name": "jobs", "namespace": "flux-system"},
                  "spec": {"interval": "10m", "path": "./jobs", "prune": False, "timeout": "60s",
                           "sourceRef": {"kind": "GitRepository", "name": "jobs"}}})
    deadline = time.monotonic() + 120
    while not (ready := _ready(world)).get("status") == "False" or ISSUE_20 not in ready.get("message", ""):
        assert time.monotonic() < deadline, f"Flux never reported the refusal: {ready}"
        time.sleep(1)
    assert "ValidatingAdmissionPolicy 'trainforge-pytorchjob'" in ready["message"]
    assert ready["reason"] == "ReconciliationFailed"
    assert world.kubectl("get", "pytorchjobs", "-n", "team-a", "-o", "name").stdout == ""
