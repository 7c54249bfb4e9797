"""`plan --live` of a job brought into git by `train-compile import`: the cluster runs it already.

On a real API server: a PyTorchJob applied by hand (`kubectl apply`, as a team's job is), read
back with `kubectl get -o yaml`, imported into the repository's working tree. The base commit
does not have the spec, so offline the plan says `create`; live, the cluster's job is the same
job and the plan says `unchanged`, and why. A job of that name that differs stays a `create`,
named with what the sync would change.
"""

from __future__ import annotations

import pytest
from compiler_builders import run_cli
from manifest_kit import pytorchjob
from plan_kit import job_of, new_repo

pytestmark = pytest.mark.controlplane



def manifest(namespace: str) -> str:
    return pytorchjob("resnet", namespace, image="ghcr.io/acme/resnet:2.1", workers=2,
                      limits="{nvidia.com/gpu: 1, memory: 8Gi}", labels="{team: vision}")


@pytest.fixture
def repo(tmp_path, control_plane, namespace):
    """The job running by hand, a repository whose base has no spec, and the import in its working tree."""
    control_plane.kubectl("apply", "-f", "-", input=manifest(namespace))
    repo = new_repo(tmp_path)
    repo.text("README.md", "jobs come here\n")
    repo.commit()
    got = control_plane.kubectl("get", "pytorchjob", "resnet", "-n", namespace, "-o", "yaml")
    source = repo.text("resnet.live.yaml", got.stdout)
    run = run_cli("import", source, "-o", repo.root / "jobs")
    assert run.exit_code == 0, run.stderr
    source.unlink()
    return repo


def test_offline_the_imported_job_is_a_create(repo):
    job = job_of(repo.plan(), "resnet")

    assert job["change"] == "create"


def test_live_the_running_job_is_adopted_unchanged(repo, control_plane):
    job = job_of(repo.plan("--live", "--kubeconfig", str(control_plane.kubeconfig)), "resnet")

    assert (job["change"], job["hazards"]) == ("unchanged", [])
    assert job["summary"] == "Adopts the job the cluster runs already, the same job: nothing of its run changes."
    assert job["gpus"] == {"before": 3, "after": 3}


def test_live_a_job_of_that_name_that_differs_is_named(repo, control_plane):
    path = repo.root / "jobs" / "resnet.yaml"
    path.write_text(path.read_text().replace("ghcr.io/acme/resnet:2.1", "ghcr.io/acme/resnet:2.2"))

    job = job_of(repo.plan("--live", "--kubeconfig", str(control_plane.kubeconfig)), "resnet")

    assert job["change"] == "create"
    assert "the cluster runs a job of this name already, which the sync changes:" \
           " spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch].image" in job["summary"]
