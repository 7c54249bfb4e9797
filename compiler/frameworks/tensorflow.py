"""TFJob: Chief x1 + Worker x(nodes-1), plus optional `ps` and `evaluator` roles.

Parameter servers and evaluators run the same program (TF_CONFIG tells each its task)
but take no GPUs unless their role asks; the controller half builds TF_CONFIG.
"""

from __future__ import annotations

from compiler.frameworks.base import Adapter, Facts, ReplicaPlan, role_plan
from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="tensorflow",
    kind="TFJob",
    plural="tfjobs",
    replica_specs="tfReplicaSpecs",
    replica_types=("Chief", "Master", "Worker", "PS", "Evaluator"),
    container="tensorflow",
    port_name="tfjob-port",
    port=2222,
    default_restart="Never",
    operator_name="tfjob-controller",
    allowed_roles=("ps", "evaluator"),
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    plans = [ReplicaPlan("Chief", 1)]
    if spec.nodes > 1:
        plans.append(ReplicaPlan("Worker", spec.nodes - 1))
    for role, replica_type in (("ps", "PS"), ("evaluator", "Evaluator")):
        extra = role_plan(spec, role, replica_type)
        if extra is not None:
            plans.append(extra)
    return plans


ADAPTER = Adapter(facts=FACTS, plan=plan)
