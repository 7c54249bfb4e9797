"""Elastic training: the node range, torchrun's rendezvous and the autoscaler's metrics.

`Elastic` becomes a PyTorchJob's `elasticPolicy` (`foundation/frameworks/pytorch.py`):
`minNodes`/`maxNodes` its replica bounds, `rendezvous` its `rdzvBackend`/`rdzvHost`/`rdzvPort`
(default: c10d on worker 0, the operator's default endpoint), and `metrics` the
`autoscaling/v2` MetricSpec list the operator (and train-controller) turn into the job's
HorizontalPodAutoscaler. The operator copies `metrics` into the HPA unchecked, and the API
server refuses a bad one only then, in the operator's log; so the MetricSpec shape and the
HPA validation's rules on targets (`validateMetricTarget`, `validateMetricSpec`) are checked
here, at the metric that breaks them.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import Field, model_validator

from schemas.quantity import parse
from schemas.strict import StrictModel
from schemas.types import NonEmptyStr, NonNegativeInt, PositiveInt, Quantity

# torchrun's registered rendezvous backends (torch.distributed.elastic.rendezvous)
RendezvousBackend = Literal["c10d", "etcd", "etcd-v2", "static"]
TARGETS = {"Utilization": "averageUtilization", "Value": "value", "AverageValue": "averageValue"}
SOURCES = {"Resource": "resource", "Pods": "pods", "Object": "object", "External": "external",
           "ContainerResource": "containerResource"}


class MetricTarget(StrictModel):
    type: Literal["Utilization", "Value", "AverageValue"] = Field(description="Which of the values below is the target.")
    averageUtilization: Optional[PositiveInt] = Field(None, description="Percent of the pods' requests (Utilization).")
    averageValue: Optional[Quantity] = Field(None, description="Per-pod average (AverageValue).")
    value: Optional[Quantity] = Field(None, description="Total (Value).")

    @model_validator(mode="after")
    def _its_value(self) -> "MetricTarget":
        field = TARGETS[self.type]
        value = getattr(self, field)
        if value is None:
            raise ValueError(f"a target of type {self.type} needs {field}; add {field}, which the HPA scales to")
        if field != "averageUtilization" and parse(value).amount <= 0:
            raise ValueError(f"{field} {value} is not above 0, which the HPA refuses; give a positive amount")
        return self


class MetricIdentifier(StrictModel):
    name: NonEmptyStr = Field(description="The metric's name.")
    selector: Optional[dict[str, Any]] = Field(None, description="A label selector narrowing the metric.")


class ResourceMetric(StrictModel):
    name: NonEmptyStr = Field(description="cpu, memory or another resource of the pods.")
    target: MetricTarget


class ContainerResourceMetric(ResourceMetric):
    container: NonEmptyStr = Field(description="The container whose resource counts.")


class PodsMetric(StrictModel):
    metric: MetricIdentifier
    target: MetricTarget


class ObjectReference(StrictModel):
    kind: NonEmptyStr
    name: NonEmptyStr
    apiVersion: Optional[NonEmptyStr] = None


class ObjectMetric(PodsMetric):
    describedObject: ObjectReference


class MetricSpec(StrictModel):
    """One autoscaling/v2 MetricSpec: `type` and the one source it names."""

    type: Literal["Resource", "Pods", "Object", "External", "ContainerResource"]
    resource: Optional[ResourceMetric] = None
    pods: Optional[PodsMetric] = None
    object: Optional[ObjectMetric] = None
    external: Optional[PodsMetric] = None
    containerResource: Optional[ContainerResourceMetric] = None

    @model_validator(mode="after")
    def _one_source(self) -> "MetricSpec":
        wanted = SOURCES[self.type]
        given = [field for field in SOURCES.values() if getattr(self, field) is not None]
        if given != [wanted]:
            others = ", ".join(f for f in given if f != wanted)
            raise ValueError(f"a {self.type} metric takes {wanted} and no other source" + (
                f" ({others} given)" if others else "") + f"; write {wanted}: {{...}} only")
        kind = getattr(self, wanted).target.type
        if self.type in ("Resource", "ContainerResource") and kind == "Value":
            raise ValueError(f"a {self.type} metric's target is Utilization or AverageValue (the HPA refuses"
                             " Value); write target.type: Utilization or AverageValue")
        if self.type == "Pods" and kind != "AverageValue":
            raise ValueError("a Pods metric's target is AverageValue (the HPA refuses the others); write"
                             " target: {type: AverageValue, averageValue: ...}")
        if self.type in ("Object", "External") and kind == "Utilization":
            raise ValueError(f"a {self.type} metric's target is Value or AverageValue (the HPA refuses"
                             " Utilization); write target.type: Value or AverageValue")
        return self


class Rendezvous(StrictModel):
    """torchrun's rendezvous: where the nodes meet (the operator's PET_RDZV_* variables)."""

    backend: RendezvousBackend = Field("c10d", description="c10d (default), etcd, etcd-v2 or static.")
    host: Optional[NonEmptyStr] = Field(
        None, description="Rendezvous host (an etcd service for etcd); default: worker 0 of the job."
    )
    port: Optional[int] = Field(None, ge=1, le=65535, description="Rendezvous port; default: the job's port.")

    @model_validator(mode="after")
    def _etcd_needs_a_server(self) -> "Rendezvous":
        if self.backend.startswith("etcd") and self.host is None:
            raise ValueError(f"the {self.backend} backend meets at an etcd server, and worker 0 (the default host)"
                             " is none; add host (and port) of your etcd service")
        return self


class Elastic(StrictModel):
    """Elastic training (pytorch only): torchrun rendezvous between min and max nodes."""

    minNodes: PositiveInt = Field(description="Fewest nodes the job runs on.")
    maxNodes: PositiveInt = Field(description="Most nodes the job scales to.")
    maxRestarts: Optional[NonNegativeInt] = Field(None, description="torchrun restarts before failing.")
    rendezvous: Optional[Rendezvous] = Field(
        None, description="torchrun's rendezvous backend, host and port; default: c10d on worker 0."
    )
    metrics: Optional[list[MetricSpec]] = Field(
        None, description="autoscaling/v2 MetricSpec list: the job's HorizontalPodAutoscaler scales its workers"
        " between minNodes and maxNodes on them (upstream's elasticPolicy.metrics)."
    )

    @model_validator(mode="after")
    def _ordered(self) -> "Elastic":
        if self.maxNodes < self.minNodes:
            raise ValueError(
                f"maxNodes ({self.maxNodes}) is below minNodes ({self.minNodes});"
                " set maxNodes >= minNodes"
            )
        return self
