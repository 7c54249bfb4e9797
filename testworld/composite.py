"""A part made of several processes (Flux's two controllers; Argo CD's redis, repo server
and application controller): builds its rows, stops its processes in reverse, reports
the first that died. Subclasses set ``name`` and ``builds`` and fill ``procs`` in
``start(world)``, starting each as it is appended (so a failed start still stops the
ones before it)."""

from __future__ import annotations

from . import gobuild
from .part import ProcessPart, build_rows


class Composite:
    name = "composite"
    builds: tuple[gobuild.Build | str, ...] = ()

    def __init__(self) -> None:
        self.procs: list[ProcessPart] = []

    def build(self) -> None:
        build_rows(self.name, self.builds)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()

    def dead(self) -> str | None:
        return next((problem for p in self.procs if (problem := p.dead())), None)
