"""``World``: the one way to start the test world, a control plane of its own plus chosen parts.

Why it is shaped so: tests, benchmarks and ``make cluster`` need the same real pieces
(kube-scheduler, kwok, the garbage collector, and later git, Flux, Argo CD, the upstream
operator) in different combinations, and each piece must be stopped even when a later
one failed to start. A World owns its ControlPlane: separate from the session plane the
controller tests use, since those tests write pod status by hand and kwok must not race
them. Parts are started in the order given and stopped in reverse, always; binaries are
built (or found) before anything starts, so a cold build never holds a running plane.

Parts are named in ``PARTS`` (name -> "module:factory", imported when used) or passed as
objects implementing ``testworld.part.Part`` (``name``, ``build()``, ``start(world)``,
``stop()``); a new part is a row of the table.

API::

    with World(["gc", "scheduler", "kwok"]) as world:   # or World([Kwok(nodes=...), ...])
        world.kubeconfig      # Path of the admin kubeconfig (system:masters)
        world.server          # https://127.0.0.1:PORT
        world.dir             # logs of every part (kwok.log, scheduler.log, ...) and the plane
        world.client          # a foundation.cluster.kube.Client (created on first use)
        world.plane           # the ControlPlane (kubectl(), request(), add_user(), audit_events())
        world.kubectl("get", "pods", "-A")
        world.install_crds([path, ...]) -> [crd names]
        world.part("kwok")    # the started part object
        world.dead()          # None, or which process exited on its own
        world.timings         # {"control plane": s, "crds": s, "kwok": s, ...} of the start

``World(parts, crds=(), upstream_crds=True)`` installs the upstream kubeflow.org/v1 and
scheduling CRDs (as the session plane does) plus ``crds``. Errors are ``WorldError`` (a
``PartError``, ``BuildError`` or ``ControlPlaneError`` underneath, message kept).
"""

from __future__ import annotations

import atexit
import importlib
import shutil
import tempfile
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from .assets import AssetsError, find_assets
from .controlplane import ControlPlane, ControlPlaneError
from .gobuild import BuildError
from .part import Part, PartError
from .paths import upstream_crd_dirs

if TYPE_CHECKING:
    from foundation.cluster.kube import Client

PARTS: dict[str, str | Callable[[], Part]] = {
    "scheduler": "testworld.scheduler:Scheduler",
    "kwok": "testworld.kwok:Kwok",
    "gc": "testworld.controller_manager:ControllerManager",
    "git": "testworld.gitserver:GitPart",
    "flux": "testworld.flux:Flux",
    "argocd": "testworld.argocd:ArgoCD",
    "trainer": "testworld.trainer:Trainer",  # Kubeflow Trainer v2 + JobSet (webhooks on 127.0.0.1)
    "kueue": "testworld.kueue:Kueue",  # v0.17.0
    "kueue-0.19": "testworld.kueue:kueue_0_19",  # Kueue v0.19.2
    "mpi-operator": "testworld.mpi_operator:MPIOperator",  # kubeflow.org/v2beta1 MPIJob (replaces the v1 CRD)
}


class WorldError(RuntimeError):
    """The world could not be built or started; everything started was stopped."""


def make_part(name: str) -> Part:
    """A new part object for a registered name."""
    try:
        factory = PARTS[name]
    except KeyError:
        raise WorldError(f"unknown part {name!r}; known: {', '.join(PARTS)}") from None
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory()


_LIVE: weakref.WeakSet[World] = weakref.WeakSet()


@atexit.register
def _stop_forgotten_worlds() -> None:
    for world in list(_LIVE):
        world.stop()


class World:
    def __init__(self, parts: Iterable[str | Part] = (), *, crds: Iterable[Path | str] = (),
                 upstream_crds: bool = True, plane: ControlPlane | None = None) -> None:
        self.parts: dict[str, Part] = {}
        for item in parts:
            part = make_part(item) if isinstance(item, str) else item
            if part.name in self.parts:
                raise WorldError(f"part {part.name!r} given twice")
            self.parts[part.name] = part
        self.crds = [Path(p) for p in crds]
        self.upstream_crds = upstream_crds
        # a part that makes pods with projected ServiceAccount tokens (the Trainer's TrainJobStatus)
        # needs the API server's ServiceAccount admission, as a cluster has it
        accounts = any(getattr(p, "service_accounts", False) for p in self.parts.values())
        self.plane = plane or ControlPlane(use_existing=False, service_account_admission=accounts)
        self.started: list[Part] = []
        self.timings: dict[str, float] = {}  # seconds each start step took: "control plane", "crds", part names
        self.failed_logs_dir: Path | None = None
        self._client: Client | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def build(self) -> None:
        """Find or build the control plane's binaries and every part's."""
        if self.plane.assets is None and not self.plane.use_existing:
            try:
                self.plane.assets = find_assets()
            except AssetsError as err:
                raise WorldError(str(err)) from err
        for part in self.parts.values():
            try:
                part.build()
            except (BuildError, PartError) as err:
                raise WorldError(str(err)) from err

    def start(self) -> World:
        self.build()
        _LIVE.add(self)
        try:
            try:
                with self._timed("control plane"):
                    self.plane.start()
                crds = (upstream_crd_dirs() if self.upstream_crds else []) + self.crds
                if crds:
                    with self._timed("crds"):
                        self.plane.install_crds(crds)
            except ControlPlaneError as err:
                raise WorldError(str(err)) from err
            for part in self.parts.values():
                self.started.append(part)  # stopped even if its start fails half way
                try:
                    with self._timed(part.name):
                        part.start(self)
                except (PartError, BuildError, ControlPlaneError, OSError) as err:
                    raise WorldError(f"part {part.name} failed to start: {err}") from err
        except BaseException:
            self._preserve_logs()
            try:
                self.stop()
            except WorldError:
                pass  # the start's own error is the one to report
            raise
        return self

    @contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.timings[step] = time.monotonic() - started

    def stop(self) -> None:
        """Stop every started part in reverse order, then the control plane. Idempotent;
        a part whose stop fails does not keep the others running."""
        _LIVE.discard(self)
        problems: list[str] = []
        while self.started:
            part = self.started.pop()
            try:
                part.stop()
            except (OSError, RuntimeError) as err:
                problems.append(f"{part.name}: {err}")
        if self._client is not None:
            self._client.close()
            self._client = None
        self.plane.stop()
        if problems:
            raise WorldError("stopping parts failed: " + "; ".join(problems))

    def dead(self) -> str | None:
        """Which process of the world exited on its own, or None."""
        for part in self.started:
            check = getattr(part, "dead", None)
            if check is not None and (problem := check()):
                return str(problem)
        return self.plane.dead_process()

    def _preserve_logs(self) -> None:
        if self.plane.dir is None or self.plane.keep_dir or not self.plane.dir.exists():
            return
        logs = [p for p in self.plane.dir.glob("*.log") if p.is_file()]
        if logs:
            self.failed_logs_dir = Path(tempfile.mkdtemp(prefix="trainforge-world-failed-"))
            for log in logs:
                shutil.copy2(log, self.failed_logs_dir / log.name)

    # ------------------------------------------------------------------ access
    @property
    def dir(self) -> Path:
        if self.plane.dir is None:
            raise WorldError("world not started")
        return self.plane.dir

    @property
    def kubeconfig(self) -> Path:
        if self.plane.kubeconfig is None:
            raise WorldError("world not started")
        return self.plane.kubeconfig

    @property
    def server(self) -> str:
        if self.plane.server is None:
            raise WorldError("world not started")
        return self.plane.server

    @property
    def client(self) -> Client:
        if self._client is None:
            from foundation.cluster.kube import (
                Client,  # lazy: building parts needs no kubernetes client
            )

            self._client = Client.connect(str(self.kubeconfig), pool_size=4)
        return self._client

    def part(self, name: str) -> Any:
        return self.parts[name]

    def kubectl(self, *args: str, **kwargs: Any) -> Any:
        return self.plane.kubectl(*args, **kwargs)

    def install_crds(self, paths: Iterable[Path | str], timeout: float = 60) -> list[str]:
        return self.plane.install_crds(paths, timeout=timeout)
