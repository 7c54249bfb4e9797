"""``python -m testworld demo-gitops``: watch Flux and Argo CD run the examples, start to finish.

Why it exists: the end-to-end tests prove the loop, but a person wants to see it once:
a commit of compiled jobs, the engines syncing it, pods placed by kube-scheduler and run
by kwok, the jobs going Created, Running, Succeeded as ``kubectl get`` shows them. It is
the same World and loop as tests/e2e (``testworld.gitops``): every example except
kitchen-sink (it waits for Kueue and a PriorityClass nobody has here), once per engine in
``flux-*`` and ``argocd-*`` namespaces. Builds happen first, with a progress line (cold,
the engines take tens of minutes; warm, nothing). Everything started is stopped at the
end, on Ctrl-C too.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from . import gitops, gobuild
from .part import PartError

REPO_ROOT = Path(__file__).resolve().parents[1]
KINDS = "pytorchjobs,tfjobs,mpijobs,xgboostjobs,paddlejobs,jaxjobs,mxjobs"


def _say(text: str) -> None:
    print(text, flush=True)


def _build_with_progress(world: gitops.World) -> None:
    steps = [("control plane", lambda: gobuild.build("k8s")), *((p.name, p.build) for p in world.parts.values())]
    for name, build in steps:
        done = threading.Event()
        started = time.monotonic()

        def tick(name: str = name) -> None:
            while not done.wait(1.0):
                print(f"\r  building {name} ... {time.monotonic() - started:4.0f}s", end="", file=sys.stderr, flush=True)

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            build()
        except gobuild.BuildError as err:
            raise PartError(f"{name}: {err}") from err
        finally:
            done.set()
            ticker.join()
        print(f"\r  {name}: ready ({time.monotonic() - started:.0f}s)" + " " * 20, file=sys.stderr, flush=True)


def _jobs_table(world: gitops.World) -> str:
    out = world.kubectl("get", KINDS, "-A", "--no-headers", "-o",
                        "custom-columns=NAMESPACE:.metadata.namespace,KIND:.kind,NAME:.metadata.name,"
                        "STATE:.status.conditions[-1:].type", check=False).stdout
    return "\n".join(sorted(line for line in out.splitlines() if line.strip()))


def run(timeout: float = 600) -> int:
    world = gitops.make_world()
    _say("building or finding the binaries (control plane, kube-scheduler, kwok, Flux, Argo CD, ...)")
    try:
        _build_with_progress(world)
    except PartError as err:
        _say(f"error: {err}")
        return 1
    _say("starting the world: control plane, GC, kube-scheduler, kwok, git server, Flux, Argo CD, train-controller")
    with world:
        _say(f"  logs in {world.dir}")
        loop = gitops.Loop(world)
        examples = sorted(p for p in (REPO_ROOT / "examples").glob("*.yaml") if p.stem != "kitchen-sink")
        for engine in gitops.ENGINES:
            src = gitops.engine_sources(examples, engine, world.dir / "sources" / engine)
            loop.publish(engine, src)
        sha = loop.commit("jobs: the examples")
        _say(f"pushed {len(examples)} examples per engine to {loop.repo.url} ({sha[:8]})")
        for engine in gitops.ENGINES:
            _say(f"  {engine}: created {', '.join(loop.install(engine))}")
        loop.poke()
        shown, deadline = "", time.monotonic() + timeout
        while time.monotonic() < deadline:
            table = _jobs_table(world)
            if table != shown:
                _say(f"\n$ kubectl get {KINDS} -A   (+{time.monotonic() - deadline + timeout:.0f}s)\n{table}")
                shown = table
            states = [line.split()[-1] for line in table.splitlines()]
            if states and len(states) == 2 * len(examples) and all(s == "Succeeded" for s in states):
                break
            if (problem := world.dead()) is not None:
                _say(f"error: {problem}")
                return 1
            time.sleep(1)
        else:
            _say("error: not every job succeeded in time")
            return 1
        loop.wait_flux("trainforge-default", sha, ready="True", timeout=120)
        loop.wait_argocd("trainforge-default", sha, timeout=120)
        _say("\n$ kubectl get kustomizations -n flux-system; kubectl get applications -n argocd")
        _say(world.kubectl("get", "kustomizations.kustomize.toolkit.fluxcd.io", "-n", "flux-system").stdout)
        _say(world.kubectl("get", "applications.argoproj.io", "-n", "argocd", "-o",
                           "custom-columns=NAME:.metadata.name,SYNC:.status.sync.status,HEALTH:.status.health.status,"
                           "REVISION:.status.sync.revision").stdout)
        _say("every job Succeeded; Flux Ready, Argo CD Synced and Healthy. Stopping everything.")
    return 0
