"""The init containers the Training Operator adds, as kubeflow-v1's review facts state them.

The facts live in the framework adapters (`Adapter.operator_init`), read through the
target entry, so nothing else in the compiler names a kind. The expected values are
written from upstream's defaults (semantics doc; train-controller's `controller/jobs/desired.py`
and `controller/jobs/mpi.py` add the same): PyTorch Worker pods wait for the Master in
`init-pytorch`, the MPI launcher gets kubectl from `kubectl-delivery`, no other pods get one.
"""

from __future__ import annotations

import pytest

from foundation.frameworks import ADAPTERS
from compiler.targets import api

CASES = [
    pytest.param("PyTorchJob", "Worker", {"Master", "Worker"}, ["init-pytorch"],
                 id="pytorch workers beside a master wait for it in init-pytorch"),
    pytest.param("PyTorchJob", "Master", {"Master", "Worker"}, [], id="the pytorch master waits for nobody"),
    pytest.param("PyTorchJob", "Worker", {"Worker"}, [], id="elastic pytorch workers have no master to wait for"),
    pytest.param("MPIJob", "Launcher", {"Launcher", "Worker"}, ["kubectl-delivery"],
                 id="the mpi launcher gets kubectl-delivery"),
    pytest.param("MPIJob", "Worker", {"Launcher", "Worker"}, [], id="mpi workers get nothing"),
    pytest.param("TFJob", "Worker", {"Chief", "Worker"}, [], id="tensorflow pods get nothing"),
    pytest.param("XGBoostJob", "Worker", {"Master", "Worker"}, [], id="xgboost workers beside a master get nothing"),
]


@pytest.mark.parametrize(("kind", "replica_type", "replica_types", "expected"), CASES)
def test_the_operator_adds_its_init_containers_where_upstream_does(kind, replica_type, replica_types, expected):
    assert api("kubeflow-v1").operator_init_containers(kind, replica_type, replica_types) == expected


def test_only_pytorch_and_mpi_declare_an_operator_init_container():
    declared = {name: fw.operator_init.name for name, fw in ADAPTERS.items() if fw.operator_init is not None}

    assert declared == {"pytorch": "init-pytorch", "mpi": "kubectl-delivery"}
