"""What the controller benchmark does to the API server besides running the controller.

Small pieces, each what a user or a node would do: build PyTorchJobs, create things
in parallel (the bare-client baseline is nothing more than that), play the kubelet
through pods/status, follow a namespace with one watch instead of polling lists (a
poll of hundreds of pods would load the server being measured), and read the API
server's own `apiserver_request_total` counter.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

from foundation.cluster import errors
from foundation.cluster.kube import PODS, Client, Resource, end_stream

NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
SECRETS = Resource("", "v1", "secrets", "Secret")
PYTORCHJOBS = Resource("kubeflow.org", "v1", "pytorchjobs", "PyTorchJob")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE", "APPLY")
_SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "ownerReferences", "generation")


def pytorch_job(name: str, nodes: int) -> dict[str, Any]:
    """A PyTorchJob of `nodes` pods (Master x1, Worker x nodes-1), as the compiler writes one."""
    def replica(count: int) -> dict[str, Any]:
        container = {"name": "pytorch", "image": "ghcr.io/acme/bert:1.4.2", "command": ["python", "train.py"],
                     "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                     "resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"cpu": "32", "nvidia.com/gpu": 8}}}
        return {"replicas": count, "restartPolicy": "OnFailure", "template": {"spec": {"containers": [container]}}}

    specs = {"Master": replica(1)}
    if nodes > 1:
        specs["Worker"] = replica(nodes - 1)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": specs}}


def parallel(fn: Callable[[Any], Any], items: Iterable[Any], *, threads: int) -> list[Any]:
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(fn, items))


def create_namespace(client: Client, name: str, *, exist_ok: bool = False) -> None:
    try:
        client.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except errors.AlreadyExists:
        if not exist_ok:
            raise


def process_stats(pid: int) -> tuple[float, float]:
    """(user + system CPU seconds, RSS in MB) of a running process, from /proc."""
    import os

    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    rss = 0.0
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return cpu, rss


def bare_copy(obj: dict[str, Any], namespace: str, kind: str, api_version: str = "v1") -> dict[str, Any]:
    """The same object as a plain client would POST it into `namespace`: no server fields, no
    owner, no status (an Event's involvedObject moves along)."""
    out = {k: v for k, v in obj.items() if k != "status"}
    out["apiVersion"], out["kind"] = api_version, kind
    out["metadata"] = {k: v for k, v in obj["metadata"].items() if k not in _SERVER_FIELDS}
    out["metadata"]["namespace"] = namespace
    if "involvedObject" in obj:
        out["involvedObject"] = {**obj["involvedObject"], "namespace": namespace}
    return out


def run_pod(client: Client, pod: dict[str, Any]) -> None:
    """What a kubelet reports once every container started."""
    started = "2024-01-01T00:00:00Z"
    statuses = [{"name": c["name"], "image": c["image"], "imageID": "", "ready": True, "restartCount": 0,
                 "started": True, "state": {"running": {"startedAt": started}}} for c in pod["spec"]["containers"]]
    status = {"phase": "Running", "startTime": started, "containerStatuses": statuses,
              "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": started}]}
    meta = pod["metadata"]
    client.patch(PODS, meta["namespace"], meta["name"], {"status": status}, sub="status")


def job_running(job: dict[str, Any]) -> bool:
    return any(c.get("type") == "Running" and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


class Follow:
    """The objects of one resource in one namespace, kept current by a watch.

    `keep(obj)` chooses what `objects` holds per name (default: the object); it runs on the
    watch thread under the lock, for every object seen. A scale run keeps a few fields of
    8,000 pods instead of ~40 KB of parsed JSON each."""

    def __init__(self, client: Client, res: Resource, namespace: str,
                 keep: Callable[[dict[str, Any]], Any] = lambda obj: obj) -> None:
        self.client, self.res, self.namespace, self.keep = client, res, namespace, keep
        self.objects: dict[str, Any] = {}
        self.first_seen: dict[str, float] = {}
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._resp: Any = None  # the open watch, closed by stop()
        self._rv = ""
        self._relist()
        self._thread = threading.Thread(target=self._run, name=f"follow-{res.plural}", daemon=True)
        self._thread.start()

    def _relist(self) -> None:
        listing = self.client.list(self.res, namespace=self.namespace)
        with self._changed:
            self.objects.clear()
            for obj in listing["items"]:
                self._put(obj)
            self._rv = listing["metadata"]["resourceVersion"]
            self._changed.notify_all()

    def _put(self, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        self.first_seen.setdefault(name, time.perf_counter())
        self.objects[name] = self.keep(obj)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(self.res, namespace=self.namespace, resource_version=self._rv,
                                               timeout_seconds=120, on_open=self._opened):
                    obj = event.get("object") or {}
                    if event.get("type") == "BOOKMARK":
                        self._rv = obj["metadata"]["resourceVersion"]
                        continue
                    if event.get("type") == "ERROR":
                        raise errors.Retryable("watch", self.res.kind, self.namespace, None, str(obj))
                    with self._changed:
                        if event.get("type") == "DELETED":
                            self.objects.pop(obj["metadata"]["name"], None)
                        else:
                            self._put(obj)
                        self._rv = obj["metadata"]["resourceVersion"]
                        self._changed.notify_all()
                    if self._stop.is_set():
                        return
            except errors.ApiError:  # a broken stream or 410 Gone: start again from a list
                if self._stop.is_set():  # stop() cut the stream
                    return
                time.sleep(0.2)
                try:
                    self._relist()
                except errors.ApiError:
                    pass

    def wait(self, predicate: Callable[[dict[str, Any]], bool], *, timeout: float, what: str) -> float:
        """perf_counter() when `predicate(objects)` first held."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not predicate(self.objects):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
                self._changed.wait(min(left, 1.0))
        return time.perf_counter()

    def _opened(self, resp: Any) -> None:
        self._resp = resp
        if self._stop.is_set():
            resp.close()

    def stop(self) -> None:
        """End the watch now: left open it would stay on the server for its 120 s, a watcher
        every later round's events are dispatched past."""
        self._stop.set()
        if self._resp is not None:
            end_stream(self._resp)


_LABELS = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def server_writes(metrics: bytes) -> Counter[tuple[str, str]]:
    """apiserver_request_total write requests by (verb, resource[/subresource]), leases aside."""
    out: Counter[tuple[str, str]] = Counter()
    for line in metrics.decode().splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition("} ")
        labels = dict(_LABELS.findall(labels_text))
        if labels.get("verb") in WRITE_METHODS and labels.get("resource") != "leases":  # the server's own heartbeat
            resource = labels.get("resource", "") + (f"/{labels['subresource']}" if labels.get("subresource") else "")
            out[(labels["verb"], resource)] += int(float(value))
    return out
