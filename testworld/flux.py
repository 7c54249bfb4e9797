"""Flux (source-controller + kustomize-controller v1.9.6) as a part of the test world.

Why it is shaped so: Flux is how half of trainforge's users sync the compiled tree, and
only the real controllers show what the generated Kustomizations do (cel-go's health
expressions, server-side apply, `.spec.ignore`, pruning). Both are built from the Go
module proxy by ``gobuild`` (a wrapper module copying the controllers' non-directory
replace lines, since ``go install`` refuses modules with replaces; source-controller's
``github.com/fluxcd/pkg/artifact`` v0.18.2/v0.18.3 are refused by the proxy with 403,
so v0.18.1 replaces them). The build also copies each controller's CRDs
(``config/crd/bases/``) from the module into the cache, so starting needs no ``go``.

Running against the world's API server: both processes get ``KUBECONFIG`` (the admin,
so no RBAC to install) and ``RUNTIME_NAMESPACE=flux-system``, watch all namespaces, and
bind every endpoint to a free 127.0.0.1 port: health and metrics of both, and
source-controller's artifact server (``--storage-addr`` = ``--storage-adv-addr``), which
kustomize-controller downloads each revision from. No leader election, no events
address (there is no notification-controller). Logs: ``<world dir>/<controller>.log``.

``reconcile(kind, name)`` sets the ``reconcile.fluxcd.io/requestedAt`` annotation, the
documented way to make Flux act now instead of at its next interval: tests push, then
ask, then wait on the objects' own conditions.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import gobuild
from .composite import Composite
from .controlplane import ControlPlaneError
from .part import LOOPBACK, ProcessPart, free_port, http_ok

if TYPE_CHECKING:
    from .world import World

NAMESPACE = "flux-system"
# A Kustomization whose dependsOn is not Ready yet is looked at again after this long (Flux's
# default is 30s). Every trainer-v2 environment waits once per commit for its prerequisites
# (``train-compile flux``), and the e2e tests make a few dozen such commits: at the default
# that wait was 20-30 s each. The order Flux keeps is the same at any interval.
REQUEUE_DEPENDENCY = "5s"
VERSION = "v1.9.6"
REQUESTED_AT = "reconcile.fluxcd.io/requestedAt"
CONTROLLERS = ("source-controller", "kustomize-controller")


def _with_crds(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str]) -> None:
    """The wrapper build, then the controller's CRDs copied beside the binary."""
    gobuild.RECIPES["wrapper"](entry, work, out, env)
    info = gobuild.module_info(entry.module, entry.version, work, env, gobuild.build_log(work))
    crds = out / "crds"
    crds.mkdir()
    for path in sorted((Path(info["Dir"]) / "config" / "crd" / "bases").glob("*.yaml")):
        shutil.copyfile(path, crds / path.name)
    if not any(crds.iterdir()):
        raise gobuild.BuildError(f"{entry.module}@{entry.version} has no config/crd/bases/*.yaml")


SOURCE_CONTROLLER = gobuild.register(gobuild.Build(
    "source-controller", "github.com/fluxcd/source-controller", VERSION,
    ("github.com/fluxcd/source-controller",), recipe="wrapper", smoke=("--help",), gcflags=gobuild.UNOPTIMIZED,
    replaces=("github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.1",),
    cold="20 min measured at load ~20 with cold modules", custom=_with_crds))
KUSTOMIZE_CONTROLLER = gobuild.register(gobuild.Build(
    "kustomize-controller", "github.com/fluxcd/kustomize-controller", VERSION,
    ("github.com/fluxcd/kustomize-controller",), recipe="wrapper", smoke=("--help",), gcflags=gobuild.UNOPTIMIZED,
    cold="14 min measured at load ~20 with cold modules", custom=_with_crds))


def install_crds(world: World, paths: list[Path], attempts: int = 3) -> None:
    """``world.install_crds``, again when ``kubectl wait`` caught a CRD before the server
    gave it any status (".status.conditions accessor error": a race seen under load)."""
    for attempt in range(attempts):
        try:
            world.install_crds(paths)
            return
        except ControlPlaneError as err:
            if "accessor error" not in str(err) or attempt == attempts - 1:
                raise
            time.sleep(1)


def apply(world: World, body: dict[str, Any]) -> None:
    """Server-side apply one object through the world's kubectl."""
    world.kubectl("apply", "--server-side", "--field-manager=testworld", "-f", "-", input=json.dumps(body))


class _Controller(ProcessPart):
    """One Flux controller process: all namespaces, loopback endpoints, no leader election."""

    def __init__(self, name: str, extra: list[str] | None = None) -> None:
        super().__init__()
        self.name, self.builds, self.extra = name, (name,), extra or []
        self.health = 0

    def argv(self, world: World) -> list[str]:
        self.health = free_port()
        return [self.binary(self.name), "--watch-all-namespaces=true", "--enable-leader-election=false",
                "--log-encoding=json", "--log-level=info", "--events-addr=",
                f"--metrics-addr={LOOPBACK}:{free_port()}", f"--health-addr={LOOPBACK}:{self.health}", *self.extra]

    def env(self, world: World) -> dict[str, str]:
        tmp = world.dir / "flux-tmp"
        tmp.mkdir(exist_ok=True)
        return {"KUBECONFIG": str(world.kubeconfig), "RUNTIME_NAMESPACE": NAMESPACE, "TMPDIR": str(tmp)}

    def ready(self) -> bool:
        return http_ok(f"http://{LOOPBACK}:{self.health}/readyz")


class Flux(Composite):
    """source-controller and kustomize-controller, a ``Part`` named ``flux``."""

    name = "flux"
    builds = (SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER)

    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None

    @staticmethod
    def crd_files() -> list[Path]:
        return [p for e in (SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER) for p in sorted((gobuild.build(e) / "crds").glob("*.yaml"))]

    def start(self, world: World) -> None:
        self.world = world
        install_crds(world, self.crd_files())
        world.kubectl("create", "namespace", NAMESPACE)
        storage = world.dir / "flux-storage"
        storage.mkdir(exist_ok=True)
        addr = f"{LOOPBACK}:{free_port()}"
        for controller in (_Controller("source-controller", [f"--storage-path={storage}", f"--storage-addr={addr}",
                                                             f"--storage-adv-addr={addr}"]),
                           _Controller("kustomize-controller", [f"--requeue-dependency={REQUEUE_DEPENDENCY}"])):
            self.procs.append(controller)
            controller.start(world)

    # ------------------------------------------------------------------ objects
    def git_repository(self, name: str, url: str, *, branch: str = "main", interval: str = "10m") -> None:
        """A GitRepository in flux-system (the generated Kustomizations point at one)."""
        assert self.world is not None
        apply(self.world, {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                           "metadata": {"name": name, "namespace": NAMESPACE},
                           "spec": {"url": url, "interval": interval, "ref": {"branch": branch}, "timeout": "60s"}})

    def reconcile(self, kind: str, name: str, namespace: str = NAMESPACE) -> None:
        """Ask Flux to reconcile now (what ``flux reconcile`` does)."""
        assert self.world is not None
        resource = {"GitRepository": "gitrepositories.source.toolkit.fluxcd.io",
                    "Kustomization": "kustomizations.kustomize.toolkit.fluxcd.io"}[kind]
        self.world.kubectl("annotate", "--overwrite", "-n", namespace, resource, name,
                           f"{REQUESTED_AT}={time.time_ns()}")
