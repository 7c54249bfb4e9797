"""Argo CD v3.2.11 (application controller + repo server + redis) as a part of the test world.

Why it is shaped so: the generated Applications, health Lua, ignoreDifferences and sync
waves only mean something when the real controller runs them. Argo CD is one Go binary
that dispatches on its own name, built from a writable copy of the module
(``go build ./cmd``: the module must be the main module, and v3.3 to v3.5 point
gitops-engine at a directory missing from the module zip; v3.2.12's module does not
compile, v3.2.11 does). The build symlinks it as ``argocd-application-controller`` and
``argocd-repo-server`` and copies ``manifests/crds/`` into the cache. The repo server
shells out to ``git`` and ``kustomize`` (the ``kustomize`` build, put first on its PATH)
and caches in redis, which comes from Debian (``redis-server``, installed with apt-get
when missing and we are root).

Running against the world's API server: ``ARGOCD_FAKE_IN_CLUSTER=true`` with
``KUBECONFIG`` maps ``https://kubernetes.default.svc`` to the world's server; the
``argocd`` namespace gets ``argocd-cm`` (labelled ``app.kubernetes.io/part-of=argocd``,
which the settings manager requires), ``argocd-secret`` and the ``default`` AppProject.
The repo server listens in plaintext, redis and both servers on free 127.0.0.1 ports,
except one thing Argo CD does not let us choose: the application controller's metrics
and health server binds ``0.0.0.0:<--metrics-port>`` (hard-coded), so it gets a free
port but listens on every interface. GnuPG is off, and ``TMPDIR``/``HOME`` point into
the world's dir (the repo server clones into ``$TMPDIR/_argocd-repo``), as does its git
ask-pass socket (``ARGOCD_ASK_PASS_SOCK``), so worlds running side by side share nothing.
Logs: ``<world dir>/argocd-*.log``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import gobuild
from .composite import Composite
from .flux import install_crds
from .part import LOOPBACK, ProcessPart, free_port, http_ok

if TYPE_CHECKING:
    from .world import World

NAMESPACE = "argocd"
VERSION = "v3.2.11"
MODULE = "github.com/argoproj/argo-cd/v3"
ROLES = ("argocd-application-controller", "argocd-repo-server")
REFRESH = "argocd.argoproj.io/refresh"


# Our main for the roles the world runs (go/argocd-roles/main.go), built in the module copy
# instead of ./cmd, Argo CD's all-in-one binary (CLI, API server, Dex, ApplicationSet, ...).
ROLES_MAIN = Path(__file__).with_name("go") / "argocd-roles" / "main.go"
ROLES_PACKAGE = "cmd/trainforge-test-roles"


def _argocd(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str]) -> None:
    """Our roles main built in a copy of the module, the role symlinks, the CRDs."""
    src = gobuild.copy_module(entry, work, env)
    (src / ROLES_PACKAGE).mkdir()
    shutil.copyfile(ROLES_MAIN, src / ROLES_PACKAGE / "main.go")
    gobuild.build_in_copy(entry, src, out, env, gobuild.build_log(work))
    for role in ROLES:
        (out / role).symlink_to("argocd")
    crds = out / "crds"
    crds.mkdir()
    for name in ("application-crd.yaml", "appproject-crd.yaml"):
        shutil.copyfile(src / "manifests" / "crds" / name, crds / name)


ARGOCD = gobuild.register(gobuild.Build(
    "argocd", MODULE, VERSION, (f"{MODULE}/{ROLES_PACKAGE}",), recipe="module-copy", binaries=("argocd",),
    ldflags=f"-s -w -X {MODULE}/common.version={VERSION.lstrip('v')}", gcflags=gobuild.UNOPTIMIZED,
    smoke=("--help",), cold="31 min measured at load ~20 with cold modules (the whole ./cmd, optimized)",
    custom=_argocd))


def _redis(entry: gobuild.Build, work: Path, out: Path, env: dict[str, str]) -> None:
    """Link Debian's redis-server into the cache, installing the package when it is missing."""
    found = shutil.which("redis-server")
    if found is None:
        if os.geteuid() != 0:
            raise gobuild.BuildError("redis-server is missing: run `sudo apt-get install redis-server` "
                                     "(Argo CD's repo server and controller cache in redis)")
        with open(gobuild.build_log(work), "a") as log:
            for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "redis-server"]):
                proc = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, check=False,
                                      env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
                if proc.returncode != 0:
                    raise gobuild.BuildError(f"{' '.join(argv)} exited {proc.returncode}; see {gobuild.build_log(work)}")
        found = shutil.which("redis-server")
        if found is None:
            raise gobuild.BuildError("apt-get installed redis-server but it is not on PATH")
    out.mkdir(parents=True, exist_ok=True)
    (out / "redis-server").symlink_to(found)


REDIS = gobuild.register(gobuild.Build(
    "redis-server", "debian:redis-server", "debian", (), recipe="apt", binaries=("redis-server",),
    cold="apt-get install, ~30 s", custom=_redis))


def _settings() -> list[dict[str, Any]]:
    part_of = {"app.kubernetes.io/part-of": "argocd"}
    return [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "argocd-cm", "namespace": NAMESPACE, "labels": part_of}, "data": {}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "argocd-secret", "namespace": NAMESPACE, "labels": part_of},
         "stringData": {"server.secretkey": secrets.token_hex(16)}},
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
         "metadata": {"name": "default", "namespace": NAMESPACE},
         "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                  "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}},
    ]


class _Redis(ProcessPart):
    name = "argocd-redis"
    builds = ("redis-server",)

    def __init__(self) -> None:
        super().__init__()
        self.port = 0

    def argv(self, world: World) -> list[str]:
        self.port = free_port()
        data = world.dir / "argocd-redis"
        data.mkdir(exist_ok=True)
        return [self.binary("redis-server"), "--bind", LOOPBACK, "--port", str(self.port), "--save", "",
                "--appendonly", "no", "--dir", str(data)]

    def ready(self) -> bool:
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False


class _ArgoProcess(ProcessPart):
    """One role of the argocd binary, run under its role name."""

    builds = ("argocd", "kustomize")
    start_timeout = 120.0

    def __init__(self, role: str, args: list[str]) -> None:
        super().__init__()
        self.name, self.args, self.metrics = role, args, free_port()

    def argv(self, world: World) -> list[str]:
        return [self.binary("argocd", self.name), *self.args, "--metrics-port", str(self.metrics),
                "--logformat", "text", "--loglevel", "info"]

    def env(self, world: World) -> dict[str, str]:
        home, tmp = world.dir / "argocd-home", world.dir / "argocd-tmp"
        home.mkdir(exist_ok=True)
        tmp.mkdir(exist_ok=True)
        kustomize = gobuild.build("kustomize")
        return {"KUBECONFIG": str(world.kubeconfig), "ARGOCD_FAKE_IN_CLUSTER": "true", "ARGOCD_GPG_ENABLED": "false",
                # the repo server's git ask-pass socket, /tmp/reposerver-ask-pass.sock unless set
                "ARGOCD_ASK_PASS_SOCK": str(world.dir / "argocd-ask-pass.sock"),
                "HOME": str(home), "TMPDIR": str(tmp), "PATH": f"{kustomize}:{os.environ.get('PATH', '/usr/bin:/bin')}"}

    def ready(self) -> bool:
        return http_ok(f"http://{LOOPBACK}:{self.metrics}/healthz")


class ArgoCD(Composite):
    """redis, the repo server and the application controller: a ``Part`` named ``argocd``."""

    name = "argocd"
    builds = (ARGOCD, REDIS, "kustomize")

    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None

    def start(self, world: World) -> None:
        self.world = world
        install_crds(world, [gobuild.build(ARGOCD) / "crds"])
        world.kubectl("create", "namespace", NAMESPACE)
        world.kubectl("apply", "--server-side", "--field-manager=testworld", "-f", "-",
                      input=json.dumps({"apiVersion": "v1", "kind": "List", "items": _settings()}))
        redis = _Redis()
        self.procs = [redis]
        redis.start(world)
        repo_port = free_port()
        self.procs.append(_ArgoProcess("argocd-repo-server", [
            "--disable-tls", "--address", LOOPBACK, "--port", str(repo_port), "--redis", f"{LOOPBACK}:{redis.port}",
            "--metrics-address", LOOPBACK]))
        self.procs.append(_ArgoProcess("argocd-application-controller", [
            f"--kubeconfig={world.kubeconfig}", "--namespace", NAMESPACE, "--repo-server", f"{LOOPBACK}:{repo_port}",
            "--repo-server-plaintext", "--redis", f"{LOOPBACK}:{redis.port}",
            # v3 keeps each resource's health in redis only (for its API server); the tests,
            # with no API server, read it from the Application's status.resources instead
            "--persist-resource-health"]))
        for proc in self.procs[1:]:
            proc.start(world)

    def refresh(self, app: str) -> None:
        """Make the controller re-read git now (what the UI's Refresh button does)."""
        assert self.world is not None
        self.world.kubectl("annotate", "--overwrite", "-n", NAMESPACE, "applications.argoproj.io", app,
                           f"{REFRESH}=normal")
