"""The three ways a capability plugs into the reconcile, as typed interfaces.

Upstream's reconcile has fixed points where optional machinery acts (semantics §6): gang
scheduling around the pod pass (the PodGroup before pods, the decoration of each pod, its
deletion when the job ends), a kind that replaces the replica pass with its own (MPIJob's
launcher, workers and their hostfile, ServiceAccount and Role), and a step before everything
else (PyTorchJob's HorizontalPodAutoscaler). Each capability writes only through
`controller.runtime.writes.Writes`, and reads only its own informers, which the manager starts.
Which kind gets which capability is the kind's adapter's fact, read by the manager.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from controller.jobs.desired import Options
    from controller.jobs.status import Ctx
    from controller.runtime.informer import Informer
    from controller.runtime.writes import Writes


class AddOn(Protocol):
    def informers(self) -> list[Informer]: ...  # the caches it reads, started with the others


class Gang(AddOn, Protocol):
    """Gang scheduling (`--gang-scheduler-name`): controller.jobs.gang.PodGroups."""

    def sync(self, writes: Writes, ctx: Ctx) -> bool: ...  # False: do not create pods yet
    def decorate(self, ctx: Ctx, pod: dict[str, Any], replica_type: str) -> None: ...
    def delete(self, writes: Writes, ctx: Ctx) -> None: ...


class PodPass(AddOn, Protocol):
    """A kind's own pod pass instead of the replica pass: controller.jobs.mpi.MPI."""

    def reconcile(self, writes: Writes, ctx: Ctx, pods: list[dict[str, Any]], *, options: Options,
                  gang: Gang | None) -> None: ...


class JobStep(AddOn, Protocol):
    """A step run first in every pass of a kind's jobs: controller.jobs.hpa.Autoscalers."""

    def reconcile(self, writes: Writes, ctx: Ctx) -> None: ...
