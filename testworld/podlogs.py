"""Pod logs in the test world: real text through the API server's ``pods/log``, served by kwok.

Why it is shaped so: no container runs here, yet ``kubectl logs`` and ``train-compile logs``
must read a pod's log the way they do on a cluster: API server -> the node's kubelet API
-> the container's log file. kwok v0.8.0 is that kubelet API: it serves ``containerLogs``
from a file, in the container runtime's (CRI) log format, for every pod a ``Logs`` object
names (``ClusterLogs``: every pod its selector matches; a pod's own ``Logs`` wins over any
``ClusterLogs``, and of two matching ``ClusterLogs`` kwok takes either), and follows the
file as it grows. ``Kwok`` starts with those two kinds enabled as CRDs (installed from
kwok's own module before it starts) and its nodes report kwok's port and ``localhost`` as
their address, which the API server dials (it prefers a node's Hostname; no ``--kubelet-*``
flag is needed: without a kubelet CA it does not verify kwok's self-signed certificate).

Every pod has a log by default: ``testworld.kubelet`` writes what each container "prints"
(its command line when it starts, its exit code when it ends) into one file per run, as
the kubelet lays them out (``<dir>/<namespace>_<pod>_<uid>/<container>/<restart count>.log``),
and names them in a ``Logs`` object of its own (labelled ``OWNED``), the last run as
``previousLogsFile`` (``kubectl logs --previous``). A test that needs its own text takes
the pod's log over with ``serve`` or ``serve_namespace``; the kubelet then leaves it alone.

API:
  ``serve(client, path, namespace=, pod=, containers=())``: ``pod``'s log (all its containers,
  or those named) is ``path``; the pod may not exist yet (names are deterministic); a log the
  world's kubelet made for it is replaced.
  ``serve_namespace(client, path, namespace=)``: every pod of ``namespace`` logs ``path``.
  ``write(path, lines, stream="stdout", at=None)``: append lines as a container runtime writes
  them (time ``at``, an RFC 3339 text, default now).
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
from .stages import ANNOTATION_PREFIX

if TYPE_CHECKING:
    from foundation.cluster.kube import Client

MODULE, VERSION = "sigs.k8s.io/kwok", "v0.8.0"
CRD_FILES = ("kustomize/crd/bases/kwok.x-k8s.io_logs.yaml", "kustomize/crd/bases/kwok.x-k8s.io_clusterlogs.yaml")
ENABLED = ("Logs", "ClusterLogs")  # kwok --enable-crds
OWNED = (ANNOTATION_PREFIX + "logs-by", "kubelet")  # the label of the Logs objects testworld.kubelet makes


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
    from foundation.cluster.resource import Resource  # lazy: the part table imports without the cluster client

    return Resource("kwok.x-k8s.io", "v1alpha1", plural, kind, namespaced=namespaced)


def _spec(path: Path, containers: Sequence[str]) -> dict[str, Any]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    entry: dict[str, Any] = {"logsFile": str(path), "follow": True}
    if containers:
        entry["containers"] = list(containers)
    return {"logs": [entry]}


def logs_resource() -> Any:
    return _resource("logs", "Logs")


def cluster_logs_resource() -> Any:
    return _resource("clusterlogs", "ClusterLogs", namespaced=False)


def run_file(root: Path, pod: dict[str, Any], container: str, run: int) -> Path:
    """Where a container's run logs, as the kubelet lays out /var/log/pods."""
    meta = pod["metadata"]
    return root / f"{meta['namespace']}_{meta['name']}_{meta['uid']}" / container / f"{run}.log"


def serve(client: Client, path: Path, *, namespace: str, pod: str, containers: Sequence[str] = ()) -> None:
    from foundation.cluster import errors  # lazy: the part table imports without the cluster client

    body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
            "metadata": {"name": pod, "namespace": namespace}, "spec": _spec(path, containers)}
    try:
        client.create(logs_resource(), namespace, body, answer=False)
        return
    except errors.AlreadyExists:
        current = client.get(logs_resource(), namespace, pod)
    labels = current["metadata"].get("labels") or {}
    if labels.get(OWNED[0]) == OWNED[1]:  # the kubelet's: a new object, so the kubelet knows it is no longer its own
        client.delete(logs_resource(), namespace, pod, uid=current["metadata"]["uid"])
        client.create(logs_resource(), namespace, body, answer=False)
    else:
        client.update(logs_resource(), {**body, "metadata": {**body["metadata"],
                                                             "resourceVersion": current["metadata"]["resourceVersion"]}})


def serve_namespace(client: Client, path: Path, *, namespace: str) -> None:
    """A ``ClusterLogs`` for the namespace; the kubelet's own ``Logs`` there (which would win)
    are removed, and it makes no more there (it watches the ``ClusterLogs`` objects and
    removes one it made as this one showed up)."""
    body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs", "metadata": {"name": namespace},
            "spec": {"selector": {"matchNamespaces": [namespace]}, **_spec(path, ())}}
    client.create(cluster_logs_resource(), None, body, answer=False)
    for item in client.list(logs_resource(), namespace=namespace, label_selector="=".join(OWNED))["items"]:
        _delete_quietly(client, namespace, item)


def _delete_quietly(client: Client, namespace: str, item: dict[str, Any]) -> None:
    from foundation.cluster import errors

    try:
        client.delete(logs_resource(), namespace, item["metadata"]["name"], uid=item["metadata"]["uid"])
    except (errors.NotFound, errors.Conflict):
        pass  # gone already, or another object of that name by now


def write(path: Path, lines: Iterable[str], *, stream: str = "stdout", at: str | None = None) -> None:
    """Append `lines`, each a full line (``F``) with the time it is written, as CRI runtimes do."""
    now = at or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    with open(path, "a", encoding="utf-8") as out:
        out.write("".join(f"{now} {stream} F {line}\n" for line in lines))
