"""Per-node resources of the TrainJob spec: requests, limits, devices and /dev/shm.

Only single-value facts live here (quantities, resource names, the /dev/shm choices); what
relates a request to its limit or a device to the environment's GPU resource is review's
(`compiler/review/resources.py`), and what each field becomes is lowering's
(`compiler/targets/lowering.py`: `resource_requirements`, `shared_memory_volume`).
"""

from __future__ import annotations

from typing import Optional

from pydantic import Field

from schemas.strict import StrictModel
from schemas.types import DeviceName, NonEmptyStr, NonNegativeInt, Quantity, SharedMemorySize


class ResourceLimits(StrictModel):
    """Limits where they differ from what the requests imply: none for CPU, the request for memory."""

    cpu: Optional[Quantity] = Field(None, description="CPU limit; without it the container has none.")
    memory: Optional[Quantity] = Field(
        None, description="Memory limit when it differs from resources.memory; null: no memory limit."
    )

    def dropped(self, name: str) -> bool:
        """`name: null` was written: no limit at all for it."""
        return name in self.model_fields_set and getattr(self, name) is None


class Resources(StrictModel):
    """Per-node resources. GPUs become limits of the environment's gpuResource; cpu and memory
    are requests (memory also the limit), `limits` sets a limit where it differs, `devices` asks
    for other resources with limit = request."""

    gpu: Optional[NonNegativeInt] = Field(
        None, description="Whole GPUs per node: requests and limits of the environment's gpuResource."
    )
    gpuType: Optional[NonEmptyStr] = Field(
        None, description="GPU model, resolved through the environment's gpuTypes table."
    )
    cpu: Optional[Quantity] = Field(None, description="CPU request.")
    memory: Optional[Quantity] = Field(
        None, description="Memory request, and the memory limit unless limits.memory says otherwise."
    )
    limits: Optional[ResourceLimits] = Field(
        None, description="Limits that differ: {cpu: \"16\", memory: 80Gi}; memory: null drops the memory limit."
    )
    devices: dict[DeviceName, Quantity] = Field(
        default_factory=dict,
        description="Other resources, each with limit = request: extended resources (vpc.amazonaws.com/efa: 4,"
        " rdma/hca_shared_devices_a: 1; whole numbers), hugepages-<size> (a multiple of the page size, beside"
        " cpu or memory) and ephemeral-storage.",
    )
    sharedMemory: Optional[SharedMemorySize] = Field(
        None, description="/dev/shm: a size (a memory-backed emptyDir of that sizeLimit), unsized (memory-backed,"
        " no sizeLimit) or host (the node's /dev/shm as a hostPath volume: needs policy.podSecurity: privileged)."
    )
