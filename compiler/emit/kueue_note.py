"""The Kueue integrations a build's queued jobs need: one line under the jobs table.

Kueue manages a job only when its Configuration's `integrations.frameworks` names the job's
kind (`kubeflow.org/pytorchjob`: the API group and the kind in lower case). Up to v0.17 the
configuration Kueue ships named the Training Operator's kubeflow.org/v1 kinds; from v0.19
they are left out (commented out in config/components/manager/controller_manager_config.yaml),
so after an upgrade a queued PyTorchJob gets no Workload and runs at once, outside its
queue's quota, and nothing says so. The mpi-operator's MPIJob and Trainer's TrainJob stay in
that list. So `build` (and `make demo`) end their table with one line naming the
integrations to add, when some queued job (a queue on a kind Kueue integrates,
`PlanFacts.kueue_manages`) is of a kind v0.19 leaves out; not a diagnostic, so it is seen
where a build is read without becoming an annotation on every pull request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from foundation.frameworks import mpi_operator
from foundation.frameworks import stock_runtimes as trainer

if TYPE_CHECKING:
    from schemas.bundle import Bundle

# the integrations Kueue v0.19.2's shipped configuration enables, of the kinds trainforge writes
V019_DEFAULTS = frozenset({f"{mpi_operator.GROUP}/{mpi_operator.KIND.lower()}",
                           f"{trainer.GROUP}/{trainer.TRAINJOB.lower()}"})
SETTING = "integrations.frameworks"


def integration(api_version: str, kind: str) -> str:
    """Kueue's name for the integration of a kind: `kubeflow.org/pytorchjob`."""
    return f"{api_version.rpartition('/')[0]}/{kind.lower()}"


def _queued(bundle: "Bundle") -> bool:
    """A queue (the job's or its environment's default) on a job Kueue acts on."""
    spec = bundle.target.spec
    return spec.scheduling.queue is not None and bundle.api.plan.kueue_manages(bundle.kind)


def needed(bundles: list["Bundle"]) -> dict[str, set[str]]:
    """Integration -> the queued kinds (`apiVersion kind`) that need it, those v0.19 leaves out."""
    out: dict[str, set[str]] = {}
    for bundle in bundles:
        name = integration(bundle.job["apiVersion"], bundle.kind)
        if name not in V019_DEFAULTS and _queued(bundle):
            out.setdefault(name, set()).add(f"{bundle.job['apiVersion']} {bundle.kind}")
    return out


def line(bundles: list["Bundle"]) -> Optional[str]:
    """The note under the table, or None when Kueue v0.19 as shipped manages every queued job."""
    found = needed(bundles)
    if not found:
        return None
    kinds = ", ".join(sorted({k for ks in found.values() for k in ks}))
    names = ", ".join(f'"{n}"' for n in sorted(found))
    return (f"  Kueue: queued {kinds} jobs need {names} in its {SETTING}: v0.17's shipped configuration has them,"
            " v0.19's no longer does, and without them they run at once, outside the queue's quota"
            " (docs/gitops.md, Kueue per version)")
