"""Pod logs in the test world: real text through the API server's ``pods/log``, served by kwok.

Why it is shaped so: no container runs here, yet ``kubectl logs`` and ``train-compile logs``
must read a pod's log the way they do on a cluster: API server -> the node's kubelet API
-> the container's log file. kwok v0.8.0 is that kubelet API: it serves ``containerLogs``
from a file, in the container runtime's (CRI) log format, for every pod a ``Logs`` object
names (``ClusterLogs``: every pod its selector matches), and follows the file as it grows.
``Kwok`` starts with those two kinds enabled as CRDs (installed from kwok's own module
before it starts) and its nodes report kwok's port and ``localhost`` as their address,
which the API server dials (it prefers a node's Hostname; no ``--kubelet-*`` flag is
needed: without a kubelet CA it does not verify kwok's self-signed certificate).

API:
  ``serve(client, path, namespace=, pod=, containers=())``: ``pod``'s log (all its containers,
  or those named) is ``path``; the pod may not exist yet (names are deterministic).
  ``serve_namespace(client, path, namespace=)``: every pod of ``namespace`` logs ``path``.
  ``write(path, lines, stream="stdout")``: append lines as a container runtime writes them.
  kwok follows the file like a kubelet, but a followed stream never ends by itself: kwok
  asks no runtime whether the container still runs.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import gobuild
from .part import PartError

if TYPE_CHECKING:
    from foundation.cluster.kube import Client

MODULE, VERSION = "sigs.k8s.io/kwok", "v0.8.0"
CRD_FILES = ("kustomize/crd/bases/kwok.x-k8s.io_logs.yaml", "kustomize/crd/bases/kwok.x-k8s.io_clusterlogs.yaml")
ENABLED = ("Logs", "ClusterLogs")  # kwok --enable-crds


@functools.lru_cache(maxsize=1)
def crd_paths() -> tuple[Path, ...]:
    """kwok's Logs and ClusterLogs CRDs, from its module in Go's module cache (where
    building kwok put it; downloaded when absent)."""
    work = Path(tempfile.mkdtemp(prefix="trainforge-kwok-module-"))
    try:
        root = Path(gobuild.module_info(MODULE, VERSION, work, gobuild.go_env(), work / "download.log")["Dir"])
    except gobuild.BuildError as err:  # GoMissing included
        raise PartError(f"kwok log CRDs: {err}") from err
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return tuple(root / f for f in CRD_FILES)


def _resource(plural: str, kind: str, *, namespaced: bool = True) -> Any:
    from foundation.cluster.kube import Resource  # lazy: the part table imports without the controller

    return Resource("kwok.x-k8s.io", "v1alpha1", plural, kind, namespaced=namespaced)


def _spec(path: Path, containers: Sequence[str]) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    entry: dict[str, Any] = {"logsFile": str(path), "follow": True}
    if containers:
        entry["containers"] = list(containers)
    return {"logs": [entry]}


def serve(client: Client, path: Path, *, namespace: str, pod: str, containers: Sequence[str] = ()) -> None:
    body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
            "metadata": {"name": pod, "namespace": namespace}, "spec": _spec(path, containers)}
    client.create(_resource("logs", "Logs"), namespace, body, answer=False)


def serve_namespace(client: Client, path: Path, *, namespace: str) -> None:
    body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs", "metadata": {"name": namespace},
            "spec": {"selector": {"matchNamespaces": [namespace]}, **_spec(path, ())}}
    client.create(_resource("clusterlogs", "ClusterLogs", namespaced=False), None, body, answer=False)


def write(path: Path, lines: Iterable[str], *, stream: str = "stdout") -> None:
    """Append `lines`, each a full line (``F``) with the time it is written, as CRI runtimes do."""
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with open(path, "a", encoding="utf-8") as out:
        out.write("".join(f"{now} {stream} F {line}\n" for line in lines))
