"""Whole-job restarts under Trainer v2: `policy.restartScope: job` as a runtime of the job's own.

What Trainer v2.3.0 + JobSet v0.12.0 can do: a JobSet's `failurePolicy` recreates every Job
of the JobSet when one fails, up to `maxRestarts` (JobSet `status.restarts` counts them), and
then fails the JobSet, which fails the TrainJob. What a v2.3 TrainJob cannot do is set it:
`runtimePatches` reach only labels, annotations and pod fields of the replicated jobs, and the
Trainer builds the JobSet's spec from the runtime's template. So the compiler writes a
namespaced `TrainingRuntime` named after the job, a copy of the stock ClusterTrainingRuntime
the job would have used (`StockRuntime.spec` in `foundation.frameworks.stock_runtimes`, the
v2.3.0 release's) with, for every replicated job:

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

from foundation.frameworks.stock_runtimes import API_VERSION, STOCK_RUNTIMES
from foundation.runs import exits
from schemas.bundle import JsonObject

KIND = "TrainingRuntime"
RESTART_STRATEGY = "BlockingRecreate"
PERMANENT_EXIT_CODES = list(exits.PERMANENT)  # restart: ExitCode, as the Training Operator splits them
PERMANENT_RULE = "permanentExitCode"


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
    spec = STOCK_RUNTIMES[stock].spec()
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
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
