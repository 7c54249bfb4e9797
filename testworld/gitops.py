"""The GitOps loop on a World: compile TrainJobs into a git repo, let Flux and Argo CD sync it.

Why it is shaped so: the end-to-end tests (tests/e2e) and the watchable demo
(``python -m testworld demo-gitops``) do the same thing a user does: ``train-compile
build`` into a repository, ``train-compile flux`` / ``train-compile argocd`` beside it,
commit, push, and let the engines act. Only the last step differs (assert or print), so
the steps live here once.

Both engines run in one World at the same time, each on its own copy of the sources:
``engine_sources`` rewrites every job's namespace to ``<engine>-<namespace>`` so the two
never apply or prune each other's objects (in one cluster they would fight over the same
jobs), and the repository holds ``<engine>/deploy`` (the compiled tree) and
``<engine>/gitops`` (the generated Kustomizations or Applications). After a commit the
loop asks both engines to act now (Flux's ``reconcile.fluxcd.io/requestedAt``, Argo CD's
refresh annotation) instead of waiting for their polling intervals; every wait is then a
watch on the engines' own objects (``testworld.watching``).

The world: the garbage collector and namespace controller, kube-scheduler with two more
profiles named like the gang schedulers (``volcano``, ``scheduler-plugins-scheduler``:
the compiled pods ask for them; they place pods like the default one, gang semantics are
not what is under test here), kwok with GPU nodes, the git server, Flux, Argo CD and
train-controller watching all namespaces.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from schemas import upstream

from .argocd import NAMESPACE as ARGOCD_NAMESPACE
from .argocd import ArgoCD
from .controller_manager import ControllerManager
from .flux import NAMESPACE as FLUX_NAMESPACE
from .flux import Flux
from .gitserver import GitPart, Workdir
from .kwok import POD_WORLD_NODES, Kwok, NodePool
from .scheduler import Scheduler
from .train_controller import TrainController
from .watching import RESOURCES, Missing, wait_for
from .world import World

ENGINES = ("flux", "argocd")
GANG_SCHEDULERS = (upstream.VOLCANO_SCHEDULER, upstream.COSCHEDULING_SCHEDULER)
REPO = "trainforge"


class AliasScheduler(Scheduler):
    """kube-scheduler with extra profiles that schedule like the default one under the
    gang schedulers' names (from a KubeSchedulerConfiguration: with --config the client
    and leader election settings come from the file)."""

    def argv(self, world: World) -> list[str]:
        config = world.dir / "scheduler-config.yaml"
        profiles = [{"schedulerName": name} for name in ("default-scheduler", *GANG_SCHEDULERS)]
        config.write_text(yaml.safe_dump({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(world.kubeconfig)},
            "leaderElection": {"leaderElect": False}, "profiles": profiles}))
        return [*super().argv(world), f"--config={config}"]


# The examples ask for ~100 GPUs per engine; with both engines at once that is more than
# the stock pools hold untainted (64), so more plain GPU nodes keep the runs from queueing.
NODES = (*POD_WORLD_NODES, NodePool("gpu", 12, gpus=8))


def make_world(*, run_seconds: float = 2.0) -> World:
    # config_refs=False: the examples read ConfigMaps (feature-store, ...) a platform team would
    # have made; nobody makes them here, and the scenarios are about the engines, not them
    return World([ControllerManager(), AliasScheduler(), Kwok(nodes=NODES, run_seconds=run_seconds, config_refs=False),
                  GitPart(), Flux(),
                  ArgoCD(), TrainController(None)])


def edit_spec(path: Path, change: Callable[[Any], None], out: Path | None = None) -> None:
    """Change a TrainJob file in place (or into ``out``) keeping its quoting: a round trip
    through ruamel, since a plain YAML dump would unquote strings like "3e-5"."""
    from ruamel.yaml import YAML

    rt = YAML()
    rt.preserve_quotes = True
    docs = list(rt.load_all(path.read_text()))
    for doc in docs:
        change(doc)
    with open(out or path, "w") as sink:
        rt.dump_all(docs, sink)


def engine_sources(sources: Iterable[Path], engine: str, out: Path) -> Path:
    """Copy TrainJob files into ``out``, each job's namespace prefixed with ``<engine>-``."""
    out.mkdir(parents=True, exist_ok=True)

    def prefix(doc: Any) -> None:
        doc["metadata"]["namespace"] = f"{engine}-{doc['metadata'].get('namespace') or 'default'}"
    for src in sources:
        edit_spec(src, prefix, out / src.name)
    return out


def train_compile(*args: str) -> str:
    exe = Path(sys.executable).with_name("train-compile")
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"train-compile {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == ctype), {})


class Loop:
    """One repository, both engines. ``publish`` compiles, ``commit`` pushes and pokes."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.flux: Flux = world.part("flux")
        self.argocd: ArgoCD = world.part("argocd")
        self.repo: Workdir = world.part("git").create(REPO)
        self.apps: list[str] = []
        self.kustomizations: list[str] = []

    def publish(self, engine: str, sources: Path, *, prefix: str = "trainforge", folder: str = "",
                timeout: str = "5m", env: str | None = None) -> None:
        """Compile ``sources`` into ``<engine>/<folder>deploy`` and the engine's objects into
        ``<engine>/<folder>gitops`` (not committed yet); only environment ``env`` if given."""
        base = f"{engine}/{folder}"
        only = ["--env", env] if env else []
        deploy = self.repo.path / base / "deploy"
        train_compile("build", str(sources), "-o", str(deploy), *only)
        gitops = self.repo.path / base / "gitops"
        if engine == "flux":
            train_compile("flux", str(sources), "-o", str(gitops), "--path", f"{base}deploy", "--prefix", prefix,
                          "--timeout", timeout, "--interval", "10m", *only)
        else:
            train_compile("argocd", str(sources), "-o", str(gitops), "--path", f"{base}deploy", "--prefix", prefix,
                          "--repo-url", self.repo.url, "--revision", self.repo.branch, *only)

    def install(self, engine: str, folder: str = "") -> list[str]:
        """Create the engine's objects from ``<engine>/<folder>gitops`` (as a user's
        ``kubectl apply -k``); Argo CD's health checks go into argocd-cm first."""
        gitops = self.repo.path / engine / folder / "gitops"
        if engine == "flux":
            self.flux.git_repository("flux-system", self.repo.url, branch=self.repo.branch)
        else:
            self.world.kubectl("-n", ARGOCD_NAMESPACE, "patch", "configmap", "argocd-cm", "--type=merge",
                               f"--patch-file={gitops / 'install' / 'argocd-cm.yaml'}")
        out = self.world.kubectl("apply", "-k", str(gitops), "-o", "name").stdout.split()
        names = [n.split("/", 1)[1] for n in out]
        (self.kustomizations if engine == "flux" else self.apps).extend(names)
        return names

    def commit(self, message: str) -> str:
        """Commit and push everything, then ask both engines to look now; the commit SHA."""
        sha = self.repo.commit(message)
        self.poke()
        return sha

    def poke(self) -> None:
        if self.kustomizations:  # installed: the GitRepository exists
            self.flux.reconcile("GitRepository", "flux-system")
        for app in self.apps:
            self.argocd.refresh(app)

    # ------------------------------------------------------------------ the engines' own status
    def wait_flux(self, name: str, sha: str, *, ready: str = "True", reason: str | None = None,
                  timeout: float = 300) -> dict[str, Any]:
        """The Kustomization once it attempted ``sha`` and its Ready condition is ``ready``."""
        def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
            obj = objects.get((FLUX_NAMESPACE, name))
            if obj is None:
                return Missing(f"no Kustomization {name}")
            cond = condition(obj, "Ready")
            attempted = (obj.get("status") or {}).get("lastAttemptedRevision") or ""
            if attempted.endswith(sha) and cond.get("status") == ready and reason in (None, cond.get("reason")):
                return obj
            return Missing(f"revision {attempted}, Ready={cond.get('status')} {cond.get('reason')}: {cond.get('message')}")
        return wait_for(self.world.client, RESOURCES["Kustomization"], check, namespace=FLUX_NAMESPACE,
                        timeout=timeout, what=f"Kustomization {name} at {sha[:8]} Ready={ready}")

    def wait_argocd(self, app: str, sha: str, *, health: str = "Healthy", sync: str = "Synced",
                    ok: Callable[[dict[str, Any]], bool] | None = None, timeout: float = 300) -> dict[str, Any]:
        """The Application once synced to ``sha`` with the given health (its last operation
        done) and ``ok(app)`` true, if given."""
        def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
            obj = objects.get((ARGOCD_NAMESPACE, app))
            if obj is None:
                return Missing(f"no Application {app}")
            status = obj.get("status") or {}
            got = ((status.get("sync") or {}).get("revision"), (status.get("sync") or {}).get("status"),
                   (status.get("health") or {}).get("status"), (status.get("operationState") or {}).get("phase"))
            if got[0] == sha and got[1] == sync and got[2] == health and got[3] not in ("Running", None) \
                    and (ok is None or ok(obj)):
                return obj
            unsynced = [f"{r.get('kind')}/{r.get('namespace')}/{r.get('name')} {r.get('status')} "
                        f"{(r.get('health') or {}).get('status', '')}" for r in status.get("resources") or []
                        if r.get("status") != "Synced" or (r.get("health") or {}).get("status") not in (None, "Healthy")]
            return Missing(f"revision/sync/health/operation {got}; {(status.get('operationState') or {}).get('message')}; "
                           f"not synced or not healthy: {unsynced}")
        return wait_for(self.world.client, RESOURCES["Application"], check, namespace=ARGOCD_NAMESPACE,
                        timeout=timeout, what=f"Application {app} at {sha[:8]} {sync}/{health}")
