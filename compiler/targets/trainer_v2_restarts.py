"""Whole-job restarts under Trainer v2: `policy.restartScope: job` as a runtime of the job's own.

What Trainer v2.3.0 + JobSet v0.12.0 can do: a JobSet's `failurePolicy` recreates every Job
of the JobSet when one fails, up to `maxRestarts` (JobSet `status.restarts` counts them), and
then fails the JobSet, which fails the TrainJob. What a v2.3 TrainJob cannot do is set it:
`runtimePatches` reach only labels, annotations and pod fields of the replicated jobs, and the
Trainer builds the JobSet's spec from the runtime's template. So the compiler writes a
namespaced `TrainingRuntime` named after the job, a copy of the stock ClusterTrainingRuntime
the job would have used (`STOCK_SPECS`, the v2.3.0 release's; a test holds them to the release
files) with, for every replicated job:

- the JobSet's `failurePolicy: {maxRestarts: backoffLimit, restartStrategy: BlockingRecreate}`:
  every Job (and pod) of an attempt is gone before the next attempt's are created, so no pod
  of two attempts runs at once (JobSet deletes them with foreground propagation);
- each Job's `backoffLimit: 0` and pods' `restartPolicy: Never`: one pod's failure fails its
  Job at once (JobSet defaults pods to OnFailure and Jobs to 6 retries: the failed pod would
  first restart alone, the per-pod behaviour `job` is there to avoid);
- with `restart: ExitCode`, the v1 split of exit codes (foundation.runs.exits): 1-127 are permanent (a Job
  `podFailurePolicy` fails the Job with reason PodFailurePolicy, and a JobSet rule fails the
  JobSet on that reason, with no restart), 128-255 restart the whole job.

The TrainJob then names that runtime. Trainer's webhook refuses a TrainJob whose runtime does
not exist yet, so the runtime goes in the prerequisite sync wave (`overlays.waves`) and, for
Flux, into the environment's `_prerequisites` too (`compiler.emit.prerequisites`).
"""

from __future__ import annotations

from typing import Any

from foundation.runs import exits
from schemas.bundle import JsonObject, json_copy

GROUP_VERSION = "trainer.kubeflow.org/v1alpha1"
KIND = "TrainingRuntime"
RESTART_STRATEGY = "BlockingRecreate"
PERMANENT_EXIT_CODES = list(exits.PERMANENT)  # restart: ExitCode, as the Training Operator splits them
PERMANENT_RULE = "permanentExitCode"
TRAINER_STEP = {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}


def _single_job(policy: str, image: str) -> JsonObject:
    """torch, jax, xgboost: one replicated job `node`, the trainer."""
    node = {"name": "node", "template": {"metadata": {"labels": dict(TRAINER_STEP)},
                                         "spec": {"template": {"spec": {"containers": [{"name": "node", "image": image}]}}}}}
    return {"mlPolicy": {"numNodes": 1, policy: {}}, "template": {"spec": {"replicatedJobs": [node]}}}


def _mpi(image: str) -> JsonObject:
    """deepspeed, mlx: sshd nodes and a launcher that runs as a node once they are Ready."""
    def pod(**container: Any) -> JsonObject:
        return {"spec": {"template": {"spec": {
            "securityContext": {"fsGroup": 1000},
            "containers": [{"name": "node", "image": image, "securityContext": {"runAsUser": 1000}, **container}]}}}}

    sshd = pod(command=["/usr/sbin/sshd"], args=["-De", "-f", "/home/mpiuser/.sshd_config"],
               readinessProbe={"tcpSocket": {"port": 2222}, "initialDelaySeconds": 5})
    launcher = {"metadata": {"labels": dict(TRAINER_STEP)}, **pod()}
    return {
        "mlPolicy": {"numNodes": 1, "mpi": {"numProcPerNode": 1, "mpiImplementation": "OpenMPI",
                                            "sshAuthMountPath": "/home/mpiuser/.ssh", "runLauncherAsNode": True}},
        "template": {"spec": {
            "network": {"publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
            "replicatedJobs": [{"name": "node", "template": sshd},
                               {"name": "launcher", "dependsOn": [{"name": "node", "status": "Ready"}],
                                "template": launcher}]}},
    }


# The `spec` of each stock ClusterTrainingRuntime of the v2.3.0 release
STOCK_SPECS: dict[str, JsonObject] = {
    "torch-distributed": _single_job("torch", "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"),
    "deepspeed-distributed": _mpi("ghcr.io/kubeflow/trainer/deepspeed-runtime"),
    "mlx-distributed": _mpi("ghcr.io/kubeflow/trainer/mlx-runtime"),
    "jax-distributed": _single_job("jax", "nvcr.io/nvidia/jax:25.10-py3"),
    "xgboost-distributed": _single_job("xgboost", "ghcr.io/kubeflow/trainer/xgboost-runtime"),
}


def failure_policy(max_restarts: int, *, exit_codes: bool) -> JsonObject:
    """The JobSet's failurePolicy: any failed Job restarts the whole JobSet, up to max_restarts;
    with `exit_codes`, a Job failed by its podFailurePolicy (a permanent exit code) fails it."""
    policy: JsonObject = {"maxRestarts": max_restarts, "restartStrategy": RESTART_STRATEGY}
    if exit_codes:
        policy["rules"] = [{"name": PERMANENT_RULE, "action": "FailJobSet", "onJobFailureReasons": ["PodFailurePolicy"]}]
    return policy


def whole_job_runtime(*, stock: str, name: str, namespace: str, labels: dict[str, str], max_restarts: int,
                      exit_codes: bool) -> JsonObject:
    """The TrainingRuntime `name` in `namespace`: stock runtime `stock` restarting as a whole."""
    spec = json_copy(STOCK_SPECS[stock])
    jobset = spec["template"]["spec"]
    jobset["failurePolicy"] = failure_policy(max_restarts, exit_codes=exit_codes)
    for replicated in jobset["replicatedJobs"]:
        job = replicated["template"]["spec"]
        job["backoffLimit"] = 0
        if exit_codes:
            job["podFailurePolicy"] = {"rules": [
                {"action": "FailJob", "onExitCodes": {"operator": "In", "values": list(PERMANENT_EXIT_CODES)}}]}
        job["template"]["spec"]["restartPolicy"] = "Never"
    metadata: JsonObject = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(sorted(labels.items()))
    return {"apiVersion": GROUP_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
