"""XGBoostJob: Master x1 (the rabit tracker host) + Worker x(nodes-1)."""

from __future__ import annotations

from typing import Any

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


# --- controller half: the rabit/LightGBM variables upstream's operator injects (semantics §5).


def _env(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def _port(replica: dict[str, Any]) -> int:
    """The `xgboostjob-port` of the `xgboost` container; upstream refuses the pod without it."""
    for container in replica.get("template", {}).get("spec", {}).get("containers") or []:
        if container.get("name") == FACTS.container:
            for port in container.get("ports") or []:
                if port.get("name") == FACTS.port_name:
                    return int(port["containerPort"])
    raise ValueError("failed to found the port")


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """MASTER_*, WORLD_SIZE, RANK (+ WORKER_* for multi-node LightGBM) for every container."""
    name, replicas = job["metadata"]["name"], job["spec"][FACTS.replica_specs]
    # upstream skips nil replicas here (after defaulting there are none)
    total = sum(int(r["replicas"]) for r in replicas.values() if r.get("replicas") is not None)
    rank = index
    if replica_type == "Worker":
        rank += int(replicas.get("Master", {}).get("replicas", 1))
    env = [
        _env("MASTER_PORT", str(_port(replicas.get("Master") or {}))),
        _env("MASTER_ADDR", f"{name}-master-0"),
        _env("WORLD_SIZE", str(total)),
        _env("RANK", str(rank)),
        _env("PYTHONUNBUFFERED", "1"),
    ]
    if total > 1:
        env.append(_env("WORKER_PORT", str(_port(replicas.get("Worker") or {}))))
        env.append(_env("WORKER_ADDRS", ",".join(f"{name}-worker-{i}" for i in range(total - 1))))
    return env


ADAPTER = Adapter(facts=FACTS, plan=plan, rendezvous_env=rendezvous_env)
