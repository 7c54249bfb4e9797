"""Where and when a job's pods run: queue, priority, gang scheduling and placement.

`Scheduling` is the job's; `RoleScheduling` is one role's placement, each field of which
replaces the job's for that role's pods (`overlays/scheduling.py` writes both). `Toleration`
and `GangChoice` are shared with the project file's environment settings.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import Discriminator, Field, Tag

from schemas.strict import StrictModel
from schemas.types import LabelKey, LabelValue, NonEmptyStr, PositiveInt


class Toleration(StrictModel):
    key: Optional[str] = None
    operator: Optional[Literal["Exists", "Equal"]] = None
    value: Optional[str] = None
    effect: Optional[Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]] = None
    tolerationSeconds: Optional[int] = None


class Gang(StrictModel):
    scheduler: Literal["volcano", "coscheduling"] = "volcano"
    timeoutSeconds: Optional[PositiveInt] = None


def _gang_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "switch"
    return "object" if isinstance(value, dict) else None


GangChoice = Annotated[
    Annotated[bool, Tag("switch")] | Annotated[Gang, Tag("object")],
    Discriminator(
        _gang_kind,
        custom_error_type="gang_value",
        custom_error_message="gang is true, false or {scheduler: volcano | coscheduling,"
        " timeoutSeconds: N}",
    ),
]


class Scheduling(StrictModel):
    queue: Optional[NonEmptyStr] = Field(
        None,
        description="Kueue LocalQueue name; null: none, not even the environment's default. Not for mpi or"
        " mxnet under kubeflow-v1: Kueue v0.17 does not manage those kinds (refused).",
    )
    priority: Optional[NonEmptyStr] = Field(None, description="PriorityClass name; under trainer-v2 only as a Kueue label (kueuePriority).")
    gang: Optional[GangChoice] = Field(
        None,
        description="true = the environment's gang scheduler (else volcano), or an object.",
    )
    nodeSelector: Optional[dict[LabelKey, LabelValue]] = None
    tolerations: Optional[list[Toleration]] = None
    affinity: Optional[dict[str, Any]] = Field(
        None, description="Kubernetes Affinity (nodeAffinity, podAffinity, podAntiAffinity) for every pod, checked"
        " against Kubernetes v1.32's schema.",
    )


class RoleScheduling(StrictModel):
    """Placement of one role's pods; each field given replaces the job's scheduling field for that role."""

    nodeSelector: Optional[dict[LabelKey, LabelValue]] = Field(None, description="Replaces scheduling.nodeSelector.")
    tolerations: Optional[list[Toleration]] = Field(None, description="Replaces scheduling.tolerations.")
    affinity: Optional[dict[str, Any]] = Field(
        None, description="Replaces scheduling.affinity (Kubernetes Affinity, checked against its schema)."
    )
