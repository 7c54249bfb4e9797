"""XGBoostJob: Master x1 (the rabit tracker host) + Worker x(nodes-1)."""

from __future__ import annotations

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan
from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="xgboost",
    kind="XGBoostJob",
    plural="xgboostjobs",
    replica_specs="xgbReplicaSpecs",
    replica_types=("Master", "Worker"),
    container="xgboost",
    port_name="xgboostjob-port",
    port=9999,
    default_restart="Never",
    operator_name="xgboostjob-controller",
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    plans = [ReplicaPlan("Master", 1)]
    if spec.nodes > 1:
        plans.append(ReplicaPlan("Worker", spec.nodes - 1))
    return plans


ADAPTER = Adapter(facts=FACTS, plan=plan)
