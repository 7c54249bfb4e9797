"""The differences from upstream that are deliberate, each with the sentence of
controller/README.md that documents it (the test checks the sentence is there).

A difference matches a deviation when the case id, the step and the path each match its
regular expressions; `explain` returns the first that does, or None (a failing test).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from parity_cases import Case


@dataclass(frozen=True)
class Deviation:
    name: str
    path: str    # regex over the path in the compared view
    readme: str  # a phrase controller/README.md must contain (whitespace-normalised)
    up: str = ".*"    # regex over repr() of upstream's value
    case: str = ".*"  # regex over the case id
    step: str = ".*"  # regex over the step
    random: bool = False  # upstream's side is decided by Go's map order: seen in some runs only


KNOWN: list[Deviation] = [
    Deviation(
        "selector-after-success", path=r"^replicaStatuses\.\w+\.selector$", up=r"^'<missing>'$",
        readme="we set `selector` for every replica type on every pass"),
    Deviation(
        "mpi-helper-label",
        path=r"^(ConfigMap|ServiceAccount|Role|RoleBinding)/[^.]+\.metadata\.labels\.training\.kubeflow\.org/operator-name$",
        up=r"^'<missing>'$", readme="carry the `training.kubeflow.org/operator-name: mpijob-controller` label"),
    Deviation(
        "restarting-map-order", path=r".*", step=r"^condition history$",
        case=r"ExitCode|pod deleted behind the operator's back",
        up=r"^(?!.*Restarting)", random=True,
        readme="so upstream shows `Restarting` in about half the runs"),
    Deviation(
        "resume-while-terminating", path=r".*", case=r"resumed while its pods terminate",
        step=r"(resume-while-terminating: outcome|^condition history)$",
        readme="A job resumed while the pods of its suspension still terminate re-runs"),
    Deviation(
        "run-revision-mark",
        path=r"^Pod/[^.]+\.metadata\.annotations\.train-controller\.trainforge\.dev/revision$", up=r"^'<missing>'$",
        readme="each pod carries `train-controller.trainforge.dev/revision`"),
    Deviation(
        "run-started-mark",
        path=r"^Pod/[^.]+\.metadata\.annotations\.train-controller\.trainforge\.dev/run-started$", up=r"^'<missing>'$",
        readme='each pod created for a started run carries `train-controller.trainforge.dev/run-started: "true"`'),
    Deviation(
        "fix-before-start", path=r".*", case=r"typo'd image fixed before any container ran",
        step=r"(fix-before-start: live pods|^condition history)$",
        readme="An edit of a job whose run has not started is taken at once"),
    Deviation(
        "run-integrity", path=r".*", case=r"edited while running",
        step=r"(edit-while-running: live pods|^condition history)$",
        readme="An edit of a running job waits for its next run"),
    # not seen once in a fresh-clone make test (e17ca17, 2026-11-27) while the case's other
    # comparisons agreed, and seen again in the next run: upstream's side is not always without
    # completionTime there (why is not established); every Failed path of ours sets it
    Deviation(
        "exitcode-completion-time", path=r"^completionTime$", up=r"^False$", case=r"ExitCode", random=True,
        readme="A job failed by an `ExitCode` exit below 128 gets `completionTime`"),
]


def explain(case: Case, difference: Any) -> Deviation | None:
    for dev in KNOWN:
        if re.search(dev.path, difference.path) and re.search(dev.up, repr(difference.up)) and \
                re.search(dev.case, case.id) and re.search(dev.step, difference.step):
            return dev
    return None
