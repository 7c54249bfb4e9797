"""``python -m testworld {cluster,assets}``: a dev cluster in the foreground.

Why it is shaped so: developers want ``kubectl`` against the same control plane
the tests use, without learning the fixture. ``cluster`` runs it in the
foreground (Ctrl-C / SIGTERM stop it; both children are stopped before exit) and
writes the admin kubeconfig to a *stable* path so ``export KUBECONFIG=...`` can
be pasted once. The stable file is removed on exit because it would point at a
dead server. ``assets`` prints the binaries' dir (building them if needed).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from .assets import AssetsError, asset_dir
from .controlplane import ControlPlane, ControlPlaneError
from .pytest_plugin import upstream_crd_dirs


class _Shutdown(Exception):
    """Raised from the SIGTERM/SIGHUP handler to unwind into the cleanup path."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Shutdown(signal.Signals(signum).name)


def cache_root() -> Path:
    return Path(os.environ.get("TRAINFORGE_CACHE") or Path.home() / ".cache" / "trainforge")


def _err(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cluster(args: argparse.Namespace) -> int:
    stable = Path(args.kubeconfig) if args.kubeconfig else cache_root() / "cluster" / "kubeconfig"
    crds: list[Path] = [] if args.no_upstream_crds else upstream_crd_dirs()
    crds += [Path(p) for p in args.crds]
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    plane = ControlPlane(apiserver_port=args.port, use_existing=False)
    wrote = False
    try:
        started = time.monotonic()
        _err("starting etcd + kube-apiserver ...")
        plane.start()
        ready = time.monotonic() - started
        names = plane.install_crds(crds) if crds else []
        assert plane.kubeconfig is not None
        stable.parent.mkdir(parents=True, exist_ok=True)
        tmp = stable.with_suffix(".tmp")
        tmp.write_bytes(plane.kubeconfig.read_bytes())
        tmp.chmod(0o600)
        tmp.replace(stable)
        wrote = True
        _err(f"ready in {ready:.1f}s; {len(names)} CRDs installed; server {plane.server}")
        _err(f"audit log: {plane.audit_log}; logs: {plane.dir}")
        _err("no kubelet/controllers run: pods stay Pending unless you write their status. Ctrl-C stops.")
        print(f"kubeconfig: {stable}")
        print(f"export KUBECONFIG={stable}", flush=True)
        while True:
            problem = plane.dead_process()
            if problem:
                _err(problem)
                return 1
            time.sleep(0.5)
    except (KeyboardInterrupt, _Shutdown) as why:
        _err(f"stopping ({why or 'SIGINT'}) ...")
        return 0
    except (AssetsError, ControlPlaneError) as err:
        _err(str(err))
        return 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not break cleanup
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        plane.stop()
        if wrote:
            stable.unlink(missing_ok=True)
        _err("stopped: etcd and kube-apiserver are gone")


def _assets(args: argparse.Namespace) -> int:
    try:
        print(asset_dir(build=not args.no_build))
    except AssetsError as err:
        _err(str(err))
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testworld", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cl = sub.add_parser("cluster", help="run etcd + kube-apiserver with the upstream CRDs until Ctrl-C")
    cl.add_argument("--port", type=int, default=None, help="API server port on 127.0.0.1 (default: a free one)")
    cl.add_argument("--kubeconfig", default=None,
                    help="where to write the admin kubeconfig (default: $TRAINFORGE_CACHE/cluster/kubeconfig)")
    cl.add_argument("--crds", action="append", default=[], metavar="PATH", help="extra CRD file/dir to install")
    cl.add_argument("--no-upstream-crds", action="store_true", help="do not install the shared upstream CRDs")
    cl.set_defaults(func=_cluster)
    asg = sub.add_parser("assets", help="print the dir holding kube-apiserver and etcd (build if needed)")
    asg.add_argument("--no-build", action="store_true", help="fail instead of building")
    asg.set_defaults(func=_assets)
    args = parser.parse_args(argv)
    return int(args.func(args))
