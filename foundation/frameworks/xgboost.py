"""XGBoostJob: Master x1 (the rabit tracker host) + Worker x(nodes-1)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    ReplicaPlan,
    TrainerV2,
    env_var,
    named_port,
)
from foundation.frameworks.operator import Operator, StatusRule, WebhookRules, only

if TYPE_CHECKING:
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
    main_roles=("master", "worker"),
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    plans = [ReplicaPlan("Master", 1)]
    if spec.nodes > 1:
        plans.append(ReplicaPlan("Worker", spec.nodes - 1))
    return plans


# --- controller half: the rabit/LightGBM variables upstream's operator injects (semantics §5).


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """MASTER_*, WORLD_SIZE, RANK (+ WORKER_* for multi-node LightGBM) for every container."""
    name, replicas = job["metadata"]["name"], job["spec"][FACTS.replica_specs]
    # upstream skips nil replicas here (after defaulting there are none)
    total = sum(int(r["replicas"]) for r in replicas.values() if r.get("replicas") is not None)
    rank = index
    if replica_type == "Worker":
        rank += int(replicas.get("Master", {}).get("replicas", 1))
    env = [
        env_var("MASTER_PORT", str(named_port(replicas.get("Master") or {}, FACTS))),
        env_var("MASTER_ADDR", f"{name}-master-0"),
        env_var("WORLD_SIZE", str(total)),
        env_var("RANK", str(rank)),
        env_var("PYTHONUNBUFFERED", "1"),
    ]
    if total > 1:
        env.append(env_var("WORKER_PORT", str(named_port(replicas.get("Worker") or {}, FACTS))))
        env.append(env_var("WORKER_ADDRS", ",".join(f"{name}-worker-{i}" for i in range(total - 1))))
    return env


ADAPTER = Adapter(
    facts=FACTS, plan=plan, rendezvous_env=rendezvous_env,
    trainer_v2=TrainerV2(
        runtime="xgboost-distributed",
        reserved_env=("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER"),
    ),
    operator=Operator(
        StatusRule(deciders=("Master",), running_with_outcome=True, restart="exit-code"),
        only("Master"), webhook=WebhookRules(exactly_one="Master", required="Master"),
    ),
)
