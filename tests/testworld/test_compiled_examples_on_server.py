"""Compiled output against the real API server: what git holds is what the cluster keeps.

Every object of every compiled example, in every environment, goes through `kubectl
apply --server-side --dry-run=server` on the test control plane (upstream kubeflow.org/v1
and scheduling CRDs installed): structural validation, RBAC escalation checks and
admission all run for real (an mpi-operator environment's v2beta1 MPIJobs on a plane of
their own: its CRD and the Training Operator's v1 one share the name mpijobs.kubeflow.org, so
one cluster serves one of them, testworld/mpi_operator.py). Then a round trip: a compiled job is created for real, read
back, and every field we wrote must come back unchanged (nothing pruned, nothing
defaulted away); what the server adds may only be the CRD's own defaults.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from compiler_builders import example_sets

from compiler.emit import serialize
from compiler.emit.render import rendered_objects
from compiler.pipeline import compile_sources
from testworld.controlplane import ControlPlane
from testworld.pytest_plugin import upstream_crd_dirs

MPI_OPERATOR_CRD = Path(__file__).parents[1] / "reference" / "crds" / "mpi-operator-v0.8.0" / "kubeflow.org_mpijobs.yaml"

pytestmark = pytest.mark.controlplane


def _compiled() -> Iterator[Any]:
    for name, paths in example_sets():
        result = compile_sources(paths)
        assert result.ok, [d.text() for d in result.diagnostics]
        for env in result.environments:
            yield pytest.param(rendered_objects(result, env), id=f"{name} in {env}")


def _serves_mpi_operator(objects: list[dict]) -> bool:
    return any(o.get("apiVersion") == "kubeflow.org/v2beta1" and o.get("kind") == "MPIJob" for o in objects)


@pytest.fixture(scope="module")
def mpi_operator_plane(envtest_assets, request) -> Iterator[ControlPlane]:
    """A plane whose mpijobs.kubeflow.org is the mpi-operator's v2beta1 CRD, beside the other upstream CRDs."""
    plane = ControlPlane(assets=envtest_assets).start()
    try:
        crds = [p for d in upstream_crd_dirs(Path(str(request.config.rootpath))) for p in sorted(d.glob("*.yaml"))
                if p.name != MPI_OPERATOR_CRD.name]
        plane.install_crds([*crds, MPI_OPERATOR_CRD])
        yield plane
    finally:
        plane.stop()


def _ensure_namespaces(control_plane, objects: list[dict]) -> None:
    for ns in sorted({o["metadata"]["namespace"] for o in objects if "namespace" in o["metadata"]}):
        status, body = control_plane.request(
            "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        )
        assert status in (201, 409), body


@pytest.mark.parametrize("objects", list(_compiled()))
def test_server_side_dry_run_accepts_every_compiled_object(request, objects):
    control_plane = request.getfixturevalue("mpi_operator_plane" if _serves_mpi_operator(objects) else "control_plane")
    _ensure_namespaces(control_plane, objects)
    stream = serialize.dump_all(objects)  # the bytes train-compile writes, as kubectl reads them
    proc = control_plane.kubectl(
        "apply", "--server-side", "--dry-run=server", "--field-manager=trainforge-test", "-f", "-",
        input=stream, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    applied = [line for line in proc.stdout.splitlines() if "serverside-applied (server dry run)" in line]
    assert len(applied) == len(objects), proc.stdout


def test_server_side_dry_run_rejects_a_broken_job_with_the_servers_message(control_plane, namespace):
    job = {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
        "metadata": {"name": "broken", "namespace": namespace},
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": "one", "template": {"spec": {"containers": []}}}}},
    }
    proc = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(job), check=False)
    assert proc.returncode != 0
    assert ".spec.pytorchReplicaSpecs.Master.replicas: expected numeric" in proc.stderr


def _missing(sent: Any, got: Any, path: str = "") -> Iterator[str]:
    """Paths of `sent` that are absent or different in `got`."""
    if isinstance(sent, dict):
        if not isinstance(got, dict):
            yield path or "."
            return
        for key, value in sent.items():
            yield from _missing(value, got.get(key, _ABSENT), f"{path}.{key}")
    elif isinstance(sent, list):
        if not isinstance(got, list) or len(got) != len(sent):
            yield path
            return
        for i, (a, b) in enumerate(zip(sent, got)):
            yield from _missing(a, b, f"{path}[{i}]")
    elif sent != got:
        yield path


_ABSENT = object()


def _added(sent: Any, got: Any, path: str = "") -> Iterator[str]:
    if isinstance(got, dict) and isinstance(sent, dict):
        for key, value in got.items():
            if key not in sent:
                yield f"{path}.{key}"
            else:
                yield from _added(sent[key], value, f"{path}.{key}")
    elif isinstance(got, list) and isinstance(sent, list):
        for i, (a, b) in enumerate(zip(sent, got)):
            yield from _added(a, b, f"{path}[{i}]")


def test_a_compiled_job_round_trips_through_the_server_unchanged(control_plane, namespace):
    sets = dict(example_sets())
    result = compile_sources(sets["top-level examples"])
    (bundle,) = [b for b in result.bundles["default"] if b.target.name == "kitchen-sink"]
    job = bundle.rendered_job()
    job["metadata"]["namespace"] = namespace
    plural = bundle.adapter.facts.plural
    status, body = control_plane.request("POST", f"/apis/kubeflow.org/v1/namespaces/{namespace}/{plural}", job)
    assert status == 201, body
    status, back = control_plane.request(
        "GET", f"/apis/kubeflow.org/v1/namespaces/{namespace}/{plural}/{job['metadata']['name']}"
    )
    assert status == 200
    assert list(_missing(job["spec"], back["spec"], "spec")) == []
    assert back["metadata"]["labels"] == job["metadata"]["labels"]
    # the server may add the CRD's own defaults (suspend, port protocol), nothing else
    crd_default = re.compile(r"^spec\.runPolicy\.suspend$|\.ports\[\d+\]\.protocol$")
    added = list(_added(job["spec"], back["spec"], "spec"))
    assert all(crd_default.search(path) for path in added), added
