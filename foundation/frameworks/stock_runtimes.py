"""Kubeflow Trainer v2.3.0: its API and its stock runtimes, facts of the release below every stage.

Everything that names the Trainer's API (the trainer-v2 target, the health checks, Kueue's
ignore rules, `status` and `logs`, the reader that tells a TrainJob from ours) takes its group,
version and kinds from here, and the replicated jobs its runtimes run (`node`, and `launcher`
in the MPI ones). The stock runtimes are the `*-distributed` ClusterTrainingRuntimes in
`shared/reference/crds/trainer-v2.3.0/runtimes`, each as its mlPolicy and the image of its
`node` job; `StockRuntime.spec` is the whole runtime spec as the release ships it (tests hold
both to those files). An adapter names its stock runtime (`base.TrainerV2.runtime`) and reads
the mlPolicy from here; the trainer-v2 target's review (`compiler.targets.trainer_v2_rules`)
checks a job against the runtime it names, and a whole-job restart copies one
(`compiler.targets.trainer_v2_restarts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
TRAINJOB = "TrainJob"  # its kind (and trainforge's spec's, in another group)
TRAINJOBS = "trainjobs"  # its plural
MANAGED_BY_TRAINER = f"{GROUP}/trainjob-controller"  # a TrainJob's spec.managedBy when none is given (the CRD's default)
NODE = "node"  # the replicated job (and its one container) that runs the program in every runtime
LAUNCHER = "launcher"  # the MPI runtimes' launcher, which runs the program as a node too
# the label the Trainer reads to find a step (the trainer, an initializer) among a runtime's jobs
ANCESTOR_LABEL = f"{GROUP}/trainjob-ancestor-step"
TRAINER_STEP = "trainer"  # its value on the job that runs the program
ANCESTOR_STEP = {ANCESTOR_LABEL: TRAINER_STEP}


@dataclass(frozen=True)
class StockRuntime:
    ml_policy: str  # torch | mpi | jax | xgboost
    node_image: str  # the image of its `node` job (MPI: the launcher gets trainer.image)
    pod_group_policy: bool = False  # none of the v2.3.0 stock runtimes gang-schedules

    def spec(self) -> dict[str, Any]:
        """The runtime's `spec` as the release file holds it (a new copy each call)."""
        return _mpi(self.node_image) if self.ml_policy == "mpi" else _single_job(self.ml_policy, self.node_image)


def _single_job(policy: str, image: str) -> dict[str, Any]:
    """torch, jax, xgboost: one replicated job `node`, the trainer."""
    node = {"name": NODE, "template": {"metadata": {"labels": dict(ANCESTOR_STEP)},
                                       "spec": {"template": {"spec": {"containers": [{"name": NODE, "image": image}]}}}}}
    return {"mlPolicy": {"numNodes": 1, policy: {}}, "template": {"spec": {"replicatedJobs": [node]}}}


def _mpi(image: str) -> dict[str, Any]:
    """deepspeed, mlx: sshd nodes and a launcher that runs as a node once they are Ready."""
    def pod(**container: Any) -> dict[str, Any]:
        return {"spec": {"template": {"spec": {
            "securityContext": {"fsGroup": 1000},
            "containers": [{"name": NODE, "image": image, "securityContext": {"runAsUser": 1000}, **container}]}}}}

    sshd = pod(command=["/usr/sbin/sshd"], args=["-De", "-f", "/home/mpiuser/.sshd_config"],
               readinessProbe={"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5})
    launcher = {"metadata": {"labels": dict(ANCESTOR_STEP)}, **pod()}
    return {
        "mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI",
                                            "sshAuthMountPath": "/home/mpiuser/.ssh", "runLauncherAsNode": True}},
        "template": {"spec": {
            "network": {"publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": [LAUNCHER]},
            "replicatedJobs": [{"name": NODE, "template": sshd},
                               {"name": LAUNCHER, "dependsOn": [{"name": NODE, "status": "Ready"}],
                                "template": launcher}]}},
    }


STOCK_RUNTIMES: dict[str, StockRuntime] = {
    "torch-distributed": StockRuntime("torch", "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"),
    "deepspeed-distributed": StockRuntime("mpi", "ghcr.io/kubeflow/trainer/deepspeed-runtime"),
    "mlx-distributed": StockRuntime("mpi", "ghcr.io/kubeflow/trainer/mlx-runtime"),
    "jax-distributed": StockRuntime("jax", "nvcr.io/nvidia/jax:25.10-py3"),
    "xgboost-distributed": StockRuntime("xgboost", "ghcr.io/kubeflow/trainer/xgboost-runtime"),
}
