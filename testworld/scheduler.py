"""kube-scheduler v1.32.4 against a World's API server: pods get a node as in a cluster.

Why it is shaped so: the control plane alone never binds a pod, so without a scheduler
kwok has nothing to run and nodeSelectors, tolerations and resource requests (the GPU
placement the compiler writes) are never tried. It runs with the world's admin
kubeconfig for its client and for delegated authn/authz (the three kubeconfig flags),
without leader election, its HTTPS endpoint on a free loopback port; ready when
``/readyz`` answers 200.

API: ``Scheduler()`` is a ``Part`` named ``scheduler`` (``World(parts=["scheduler"])``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .part import LOOPBACK, ProcessPart, component_flags, free_port, http_ok

if TYPE_CHECKING:
    from .world import World


class Scheduler(ProcessPart):
    name = "scheduler"
    builds = ("kube-scheduler",)

    def __init__(self, *, verbosity: int = 1) -> None:
        super().__init__()
        self.verbosity = verbosity
        self.port = 0

    def argv(self, world: World) -> list[str]:
        self.port = free_port()
        return [self.binary("kube-scheduler"), *component_flags(world, self.port), f"--v={self.verbosity}"]

    def ready(self) -> bool:
        return http_ok(f"https://{LOOPBACK}:{self.port}/readyz")
