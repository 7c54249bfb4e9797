"""The target table: one module per output API, registered here once.

`train-compile` lowers each environment's jobs to the environment's `target`
(`trainforge.yaml`: `defaults.target`, `environments.<env>.target`). Everything that
differs between targets goes through `api(name)`, never through `if target == ...`.
"""

from __future__ import annotations

from compiler.targets import kubeflow_v1, mpi_operator, trainer_v2
from compiler.targets.base import TargetApi

TARGETS: dict[str, TargetApi] = {module.API.name: module.API for module in (kubeflow_v1, trainer_v2, mpi_operator)}


def api(name: str) -> TargetApi:
    return TARGETS[name]


def plural_of(kind: str) -> str:
    """The API plural of a job kind some target writes (`pytorchjobs`, `trainjobs`); KeyError if none does."""
    for target in TARGETS.values():
        found = target.plan.plural(kind)
        if found is not None:
            return found
    raise KeyError(kind)


def supporting(framework: str) -> list[str]:
    """The targets that can run `framework`, in table order."""
    return [name for name, target in TARGETS.items() if target.supports(framework)]
