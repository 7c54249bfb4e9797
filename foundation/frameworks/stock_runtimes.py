"""Kubeflow Trainer v2.3.0's stock runtimes: facts of the release, below every stage.

The `*-distributed` ClusterTrainingRuntimes in `shared/reference/crds/trainer-v2.3.0/runtimes`
(a test holds this table to those files). An adapter names its stock runtime
(`base.TrainerV2.runtime`) and reads the mlPolicy from here, so the policy each runtime runs
is said once; the trainer-v2 target's review (`compiler.targets.trainer_v2_rules`) checks a
job against the runtime it names, the adapter's own or another stock one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StockRuntime:
    ml_policy: str  # torch | mpi | jax | xgboost
    node_image: str  # the image of its `node` job (MPI: the launcher gets trainer.image)
    pod_group_policy: bool = False  # none of the v2.3.0 stock runtimes gang-schedules


STOCK_RUNTIMES: dict[str, StockRuntime] = {
    "torch-distributed": StockRuntime("torch", "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"),
    "deepspeed-distributed": StockRuntime("mpi", "ghcr.io/kubeflow/trainer/deepspeed-runtime"),
    "mlx-distributed": StockRuntime("mpi", "ghcr.io/kubeflow/trainer/mlx-runtime"),
    "jax-distributed": StockRuntime("jax", "nvcr.io/nvidia/jax:25.10-py3"),
    "xgboost-distributed": StockRuntime("xgboost", "ghcr.io/kubeflow/trainer/xgboost-runtime"),
}
