"""`train-controller` as a part of the test world: the process a user runs, beside the others.

Why a part: the parity test runs it next to the upstream operator in one World, each
watching its own namespace, and both must be started, logged and stopped alike (a child
that dies with the test, its log in the world's dir). It is exactly the console script's
code (`python -m controller`, the interpreter running the tests), with `--namespace`,
`--workers` and any `extra_args`; ready once it logs that it started.

API: `TrainController("ns", workers=4, extra_args=(...))`, a `Part` named
`train-controller` (give `name=` to run two).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .part import ProcessPart
from .paths import REPO_ROOT

if TYPE_CHECKING:
    from .world import World

READY = b"train-controller started"


class TrainController(ProcessPart):
    start_timeout = 60.0

    def __init__(self, namespace: str | None, *, workers: int = 4, extra_args: Sequence[str] = (),
                 name: str = "train-controller", kubeconfig: Path | None = None) -> None:
        super().__init__()
        self.name = name
        self.namespace, self.workers = namespace, workers
        self.extra_args = list(extra_args)
        self.kubeconfig = kubeconfig

    def argv(self, world: World) -> list[str]:
        ns = [f"--namespace={self.namespace}"] if self.namespace else []
        return [sys.executable, "-m", "controller", f"--kubeconfig={self.kubeconfig or world.kubeconfig}", *ns,
                f"--workers={self.workers}", *self.extra_args]

    def env(self, world: World) -> dict[str, str]:
        return {"PYTHONPATH": str(REPO_ROOT)}

    def ready(self) -> bool:
        return bool(self.log_path and self.log_path.exists() and READY in self.log_path.read_bytes())

    @property
    def pid(self) -> int:
        assert self.proc is not None and self.proc.pid is not None
        return self.proc.pid
