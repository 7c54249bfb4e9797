"""``python -m testworld {cluster,assets,build}``: a dev cluster in the foreground, the binaries.

Why it is shaped so: developers want ``kubectl`` against the same world the tests
use, without learning the fixtures. ``cluster [--with gc,scheduler,kwok]`` runs a
``World`` in the foreground (Ctrl-C / SIGTERM stop it; every child is stopped before
exit) and
writes the admin kubeconfig to a *stable* path so ``export KUBECONFIG=...`` can
be pasted once. Its kwok is the tests' (``testworld.kwok``): pods run and exit, every pod
has a log, an image ``--bad-images`` matches fails to pull (by default one with the word
``does-not-exist`` or ``typo``; ``--bad-images ''``: none does), a pod waits for a missing
Secret or ConfigMap until it is created (``--no-config-refs``: nothing is looked up). The stable file is removed on exit because it would point at a
dead server. ``assets`` prints the control plane binaries' dir (building them if
needed); ``build [PART...]`` builds or finds the test world's binaries (testworld.gobuild),
one progress line per part with its build time; ``suite`` is ``make test`` (testworld.suite);
``docs serve|build`` is ``make docs`` and ``make docs-build`` (testworld.docsite).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from .assets import AssetsError, asset_dir
from .controlplane import ControlPlane, ControlPlaneError
from .kubelet_rules import DEFAULT_BAD_IMAGES
from .paths import cache_root


class _Shutdown(Exception):
    """Raised from the SIGTERM/SIGHUP handler to unwind into the cleanup path."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Shutdown(signal.Signals(signum).name)


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cluster(args: argparse.Namespace) -> int:
    from .world import World, WorldError

    stable = Path(args.kubeconfig) if args.kubeconfig else cache_root() / "cluster" / "kubeconfig"
    parts: list[Any] = [p.strip() for p in (args.with_ or "").split(",") if p.strip()]
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # also when started in the background
    wrote = False
    world: World | None = None
    try:
        world = World([_kwok(args) if p == "kwok" else p for p in parts], crds=args.crds, upstream_crds=not args.no_upstream_crds,
                      plane=ControlPlane(apiserver_port=args.port, use_existing=False))
        _err(f"building or finding the binaries of: control plane{''.join(', ' + p for p in parts)} ...")
        world.build()
        started = time.monotonic()
        _err("starting etcd + kube-apiserver" + "".join(f", {p}" for p in parts) + " ...")
        world.start()
        ready = time.monotonic() - started
        plane = world.plane
        stable.parent.mkdir(parents=True, exist_ok=True)
        tmp = stable.with_suffix(".tmp")
        tmp.write_bytes(world.kubeconfig.read_bytes())
        tmp.chmod(0o600)
        tmp.replace(stable)
        wrote = True
        steps = ", ".join(f"{step} {secs:.1f}s" for step, secs in world.timings.items())
        _err(f"ready in {ready:.1f}s ({steps}); server {plane.server}")
        _err(f"audit log: {plane.audit_log}; logs: {world.dir}")
        if "kwok" not in parts:
            _err("no kubelet runs: pods stay Pending unless you write their status (--with gc,scheduler,kwok runs them).")
        _err("Ctrl-C stops everything.")
        print(f"kubeconfig: {stable}")
        print(f"export KUBECONFIG={stable}", flush=True)
        while True:
            problem = world.dead()
            if problem:
                _err(problem)
                return 1
            time.sleep(0.5)
    except (KeyboardInterrupt, _Shutdown) as why:
        _err(f"stopping ({str(why) or 'SIGINT'}) ...")
        return 0
    except (AssetsError, ControlPlaneError, WorldError) as err:
        _err(str(err))
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not break cleanup
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if world is not None:
            try:
                world.stop()
            except WorldError as err:
                _err(str(err))
        if wrote:
            stable.unlink(missing_ok=True)
        _err("stopped: etcd and kube-apiserver are gone" + "".join(f", {p}" for p in parts))


def _kwok(args: argparse.Namespace) -> Any:
    from .kwok import Kwok

    return Kwok(bad_images=args.bad_images or None, config_refs=not args.no_config_refs)


def _assets(args: argparse.Namespace) -> int:
    try:
        print(asset_dir(build=not args.no_build))
    except AssetsError as err:
        _err(str(err))
        return 1
    return 0


def build_named(names: Sequence[str]) -> int:
    """Build or find each named part of testworld.gobuild.BUILDS, one progress line each; 1 on the first failure."""
    from . import gobuild

    gobuild.load_rows()  # the table of pinned builds, with the rows of every ROW_MODULES module
    for name in names:
        try:
            entry = gobuild.BUILDS[name]
        except KeyError:
            _err(f"unknown part {name!r}; known: {', '.join(gobuild.BUILDS)}")
            return 1
        label = f"{name} {entry.version}"
        found = gobuild.find(entry)
        if found is not None:
            _err(f"{label}: cached ({found})")
            continue
        _err(f"{label}: building from the Go module proxy (cold {entry.cold or 'a few minutes'}) ...")
        started = time.monotonic()
        try:
            where = gobuild.build(entry, say=_err)
        except gobuild.BuildError as err:
            _err(f"{label}: {err}")
            return 1
        _err(f"{label}: built in {time.monotonic() - started:.0f}s ({where})")
    return 0


def _build(args: argparse.Namespace) -> int:
    from . import gobuild

    return build_named(args.parts or list(gobuild.load_rows()))


def _suite(args: argparse.Namespace) -> int:
    from .suite import run

    return run()


def _demo_gitops(args: argparse.Namespace) -> int:
    from .demo_gitops import run

    return run(timeout=args.timeout)


def _docs(args: argparse.Namespace) -> int:
    from .docsite import run

    return run(args.action)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testworld", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cl = sub.add_parser("cluster", help="run a World (etcd + kube-apiserver, the upstream CRDs, --with parts) until Ctrl-C")
    cl.add_argument("--with", dest="with_", default="", metavar="PARTS",
                    help="comma-separated parts to start too, e.g. gc,scheduler,kwok (names from testworld.world.PARTS)")
    cl.add_argument("--port", type=int, default=None, help="API server port on 127.0.0.1 (default: a free one)")
    cl.add_argument("--kubeconfig", default=None,
                    help="where to write the admin kubeconfig (default: $TRAINFORGE_CACHE/cluster/kubeconfig)")
    cl.add_argument("--crds", action="append", default=[], metavar="PATH", help="extra CRD file/dir to install")
    cl.add_argument("--no-upstream-crds", action="store_true", help="do not install the shared upstream CRDs")
    cl.add_argument("--bad-images", default=DEFAULT_BAD_IMAGES, metavar="REGEX",
                    help="kwok: pulling an image this matches fails (default %(default)r; '' for none)")
    cl.add_argument("--no-config-refs", action="store_true",
                    help="kwok: start pods whatever Secrets and ConfigMaps they read (default: wait for missing ones)")
    cl.set_defaults(func=_cluster)
    asg = sub.add_parser("assets", help="print the dir holding kube-apiserver and etcd (build if needed)")
    asg.add_argument("--no-build", action="store_true", help="fail instead of building")
    asg.set_defaults(func=_assets)
    bld = sub.add_parser("build", help="build or find the test world's binaries (all parts by default)")
    bld.add_argument("parts", nargs="*", metavar="PART", help="names from testworld.gobuild.BUILDS")
    bld.set_defaults(func=_build)
    suite = sub.add_parser("suite", help="make test: every test, the late engines built in the background "
                                          "while the rest run (testworld/suite.py)")
    suite.set_defaults(func=_suite)
    demo = sub.add_parser("demo-gitops", help="Flux and Argo CD sync the examples from a local git repo; watch "
                                              "the jobs go Created, Running, Succeeded; stop everything")
    demo.add_argument("--timeout", type=float, default=600, help="seconds to wait for every job (default 600)")
    demo.set_defaults(func=_demo_gitops)
    docs = sub.add_parser("docs", help="the documentation site: serve it on 127.0.0.1:8000 (make docs) or build it "
                                        "strictly into site/ (make docs-build); testworld/docsite.py")
    docs.add_argument("action", choices=("serve", "build"))
    docs.set_defaults(func=_docs)
    args = parser.parse_args(argv)
    return int(args.func(args))
