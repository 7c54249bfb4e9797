"""The parts of the kubelet kwok cannot play, as a process beside it: ``python -m testworld.kubelet``.

Why it exists: kwok's stages see one pod at a time (jq over it, templates of it), so they
cannot know whether the Secret a pod reads exists, cannot name the runtime's error for an
image that does not exist with the kubelet's Events, and write no log. This process reads
pods, Secrets and ConfigMaps through the API server (list + watch), judges each bound pod
with ``testworld.kubelet_rules`` and then, as a kubelet does:

- a pod that can start: its containers' log files and a ``Logs`` object naming them
  (``testworld.podlogs``), then the pod condition ``PREPARED`` (``True``);
- a pod that cannot: its waiting status (Pending, each container's reason and message) and
  the kubelet's Events (source ``kubelet``, on the pod or the container's field path);
  re-judged when a Secret or ConfigMap changes in its namespace, and on a timer for image
  pulls (``ErrImagePull`` held ``PULL_SECONDS``, then ``ImagePullBackOff`` for the back-off,
  ``pull_backoff`` doubling up to 300 s as the kubelet's, then a new pull).

Why it cannot race kwok: kwok's start stage (``testworld.stages``) runs only pods whose
``PREPARED`` condition is True, and only this process writes it, after its last write of a
waiting status; it never writes a pod's status once prepared, and every waiting status it
writes carries the pod's resourceVersion (a pod changed meanwhile is judged again). A pod
annotated ``stages.WAITING_REASON`` is kwok's alone. What a kubelet would check again at
a container's restart (the environment) is not: once prepared, a pod is kwok's.

Logs: ``testworld.kubelet_logs`` (each container's run files and the kwok ``Logs`` object
naming them), made before the ``PREPARED`` condition so a Running pod always has a log.
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import queue
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, EVENTS, PODS, Client, Resource

from . import kubelet_rules as rules
from . import podlogs
from .kubelet_logs import ContainerLogs
from .stages import PREPARED, WAITING_REASON

SECRETS = Resource("", "v1", "secrets", "Secret")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
CONFIG = {"secret": SECRETS, "configmap": CONFIGMAPS}
RETRY = -1  # a timer's token: prepare the pod again after an API error
PULL_SECONDS = 1.0  # how long ErrImagePull shows before the kubelet's next sync backs off
MAX_BACKOFF = 300.0
SMP = "application/strategic-merge-patch+json"


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def say(text: str) -> None:
    print(f"{now()} {text}", flush=True)


def watch_forever(client: Client, res: Resource, out: queue.Queue[tuple[Any, ...]]) -> None:
    """List, then watch from there; a broken or expired watch lists again."""
    while True:
        try:
            listed = client.list(res)
            out.put(("list", res.kind, listed.get("items") or []))
            version = (listed.get("metadata") or {}).get("resourceVersion") or "0"
            while True:
                for event in client.watch(res, resource_version=version, timeout_seconds=300):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise errors.Expired("watch", res.kind, None, None, str(obj.get("message")))
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") != "BOOKMARK":
                        out.put(("event", res.kind, event.get("type"), obj))
        except errors.ApiError as err:
            say(f"watch of {res.kind}: {err}; listing again")
            time.sleep(0.5)


@dataclass
class PodState:
    pod: dict[str, Any]
    sent: set[tuple[str, str, str | None]] = field(default_factory=set)  # Events sent once (mounts, config)
    pull: str = ""  # "", ErrImagePull or ImagePullBackOff: where the pod's failing pulls are
    pulls: int = 0  # pull attempts so far
    token: int = 0  # of the pull's pending timer


class Kubelet:
    def __init__(self, client: Client, *, logs_dir: Path | None, bad_images: str | None, config_refs: bool,
                 pull_backoff: float) -> None:
        self.client = client
        self.logs = ContainerLogs(client, logs_dir) if logs_dir is not None else None
        self.bad_images = re.compile(bad_images) if bad_images else None
        self.config_refs = config_refs
        self.pull_backoff = pull_backoff
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.config: dict[tuple[str, str, str], frozenset[str]] = {}  # (kind, ns, name) -> data keys
        self.pods: dict[str, PodState] = {}
        self.timers: list[tuple[float, str, int]] = []
        self.host_ips: dict[str, str | None] = {}

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        caches = [SECRETS, CONFIGMAPS] if self.config_refs else []
        for res in caches + ([podlogs.cluster_logs_resource()] if self.logs else []):
            self._start(res)  # each cache is whole before the first pod is judged
            self.handle(self.events.get())
        self._start(PODS)
        say("ready")
        while True:
            wait = self.timers[0][0] - time.monotonic() if self.timers else 5.0
            try:
                item = self.events.get(timeout=max(wait, 0.0))
            except queue.Empty:
                item = None
            if item is not None:
                self.guarded(self.handle, item)
            while self.timers and self.timers[0][0] <= time.monotonic():
                _, uid, token = heapq.heappop(self.timers)
                self.guarded(self.on_timer, uid, token)

    def guarded(self, step: Any, *args: Any) -> None:
        """A step that failed on the API server is not the end: the pods it was about are
        prepared again in a second (the kubelet's resync)."""
        try:
            step(*args)
        except errors.ApiError as err:
            say(f"{err}; trying again")
            for uid, state in self.pods.items():
                if self.waiting(state.pod):
                    heapq.heappush(self.timers, (time.monotonic() + 1.0, uid, RETRY))

    def _start(self, res: Resource) -> None:
        threading.Thread(target=watch_forever, args=(self.client, res, self.events), daemon=True,
                         name=f"watch {res.kind}").start()

    def handle(self, item: tuple[Any, ...]) -> None:
        if item[0] == "list":
            _, kind, objects = item
            if kind == "Pod":
                seen = {o["metadata"]["uid"] for o in objects}
                for uid in set(self.pods) - seen:
                    self.forget(uid)
                for pod in objects:
                    self.on_pod(pod)
            elif kind == "ClusterLogs" and self.logs:
                self.logs.cluster_logs.clear()
                for obj in objects:
                    self.logs.on_cluster_logs("ADDED", obj)
            else:
                self.config = {k: v for k, v in self.config.items() if k[0] != kind.lower()}
                for obj in objects:
                    self.on_config(kind, "ADDED", obj)
            return
        _, kind, change, obj = item
        if kind == "Pod":
            if change == "DELETED":
                self.forget(obj["metadata"]["uid"])
            else:
                self.on_pod(obj)
        elif kind == "ClusterLogs" and self.logs:
            self.logs.on_cluster_logs(change, obj)
        else:
            self.on_config(kind, change, obj)

    # ------------------------------------------------------------------ Secrets and ConfigMaps
    def on_config(self, kind: str, change: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (kind.lower(), meta.get("namespace") or "", meta.get("name") or "")
        if change == "DELETED":
            self.config.pop(key, None)
        else:
            self.config[key] = frozenset(obj.get("data") or {})  # what env reads (a ConfigMap's binaryData is not)
        for state in list(self.pods.values()):
            pod = state.pod
            if pod["metadata"]["namespace"] == key[1] and self.waiting(pod) and (key[0], key[2]) in set(
                    rules.references(pod)):
                self.prepare(state)

    def lookup(self, namespace: str, *, fresh: bool) -> rules.Lookup | None:
        """The Secrets and ConfigMaps of ``namespace`` (None: not looked up, every one resolves)."""
        def found(kind: str, name: str) -> frozenset[str] | None:
            key = (kind, namespace, name)
            if fresh:  # a miss in the cache is asked of the API server before a pod waits on it
                try:
                    self.config[key] = frozenset(self.client.get(CONFIG[kind], namespace, name).get("data") or {})
                except errors.NotFound:
                    self.config.pop(key, None)
            return self.config.get(key)
        return found if self.config_refs else None

    # ------------------------------------------------------------------ pods
    @staticmethod
    def waiting(pod: Mapping[str, Any]) -> bool:
        """Bound, Pending, not prepared, not started, not kwok's by annotation, not deleted."""
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        started = any("waiting" not in (s.get("state") or {"waiting": 1})
                      for s in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])])
        prepared = any(c.get("type") == PREPARED and c.get("status") == "True" for c in status.get("conditions") or [])
        return bool((pod.get("spec") or {}).get("nodeName") and status.get("phase") == "Pending" and not started
                    and not prepared and not meta.get("deletionTimestamp")
                    and WAITING_REASON not in (meta.get("annotations") or {}))

    def on_pod(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        state = self.pods.get(uid)
        if state is None:
            state = self.pods[uid] = PodState(pod)
        elif int(pod["metadata"].get("resourceVersion") or 0) < int(state.pod["metadata"].get("resourceVersion") or 0):
            return  # an older copy than one a write of ours answered with
        state.pod = pod
        if self.waiting(pod):
            self.prepare(state)
        elif self.logs:
            self.logs.follow(pod)

    def forget(self, uid: str) -> None:
        self.pods.pop(uid, None)
        if self.logs:
            self.logs.forget(uid)

    def prepare(self, state: PodState) -> None:
        pod = state.pod
        namespace = pod["metadata"]["namespace"]
        verdict = rules.judge(pod, self.lookup(namespace, fresh=False), self.bad_images)
        if not verdict.ready:
            verdict = rules.judge(pod, self.lookup(namespace, fresh=True), self.bad_images)
        if verdict.ready:
            self.start(state)
            return
        pulling = [name for name, fault in verdict.faults.items() if fault.kind == "pull"]
        if pulling and not state.pull:
            self.pull_failed(state, pulling)
        elif not pulling:
            state.pull = ""
        for volume, error in verdict.mounts:
            self.record(state, "Warning", "FailedMount", f'MountVolume.SetUp failed for volume "{volume}" : {error}',
                        None, once=True)
        for name, fault in verdict.faults.items():
            if fault.kind == "config":
                self.record(state, "Warning", "Failed", f"Error: {fault.message}", name, once=True)
        status = rules.waiting_status(pod, verdict, pull_reason=state.pull or "ErrImagePull", now=now(),
                                      host_ip=self.host_ip(pod["spec"]["nodeName"]))
        if rules.shown(status) != rules.shown(pod.get("status") or {}):
            self.write_status(state, {"metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
                                      "status": status})

    def start(self, state: PodState) -> None:
        state.pull = ""
        if self.logs and state.pod["metadata"]["uid"] not in self.logs.pods:
            self.logs.open(state.pod)
        patch = {"status": {"conditions": [{"type": PREPARED, "status": "True", "lastTransitionTime": now()}]}}
        if self.write_status(state, patch):
            say(f"prepared {self.name(state.pod)}")

    def write_status(self, state: PodState, patch: dict[str, Any]) -> bool:
        meta = state.pod["metadata"]
        try:
            state.pod = self.client.patch(PODS, meta["namespace"], meta["name"], patch, sub="status", content_type=SMP)
            return True
        except errors.Conflict:  # changed since it was judged: judge the current pod
            self.on_pod(self.client.get(PODS, meta["namespace"], meta["name"]))
        except errors.NotFound:
            pass
        return False

    # ------------------------------------------------------------------ image pulls
    def pull_failed(self, state: PodState, pulling: list[str]) -> None:
        state.pull, state.pulls = "ErrImagePull", state.pulls + 1
        for name in pulling:
            image = rules.container(state.pod, name).get("image") or ""
            self.record(state, "Normal", "Pulling", f'Pulling image "{rules.with_default_tag(image)}"', name)
            self.record(state, "Warning", "Failed",
                        f'Failed to pull image "{rules.with_default_tag(image)}": {rules.pull_error(image)}', name)
            self.record(state, "Warning", "Failed", "Error: ErrImagePull", name)
        self.after(state, PULL_SECONDS)

    def on_timer(self, uid: str, token: int) -> None:
        state = self.pods.get(uid)
        if state is None or not self.waiting(state.pod) or token not in (state.token, RETRY):
            return
        if token == RETRY or not state.pull:
            self.prepare(state)
            return
        if state.pull == "ImagePullBackOff":
            state.pull = ""  # the back-off is over: prepare pulls again
        else:
            state.pull = "ImagePullBackOff"
            namespace = state.pod["metadata"]["namespace"]
            for name, fault in rules.judge(state.pod, self.lookup(namespace, fresh=False), self.bad_images).faults.items():
                if fault.kind == "pull":
                    image = rules.with_default_tag(rules.container(state.pod, name).get("image") or "")
                    self.record(state, "Normal", "BackOff", f'Back-off pulling image "{image}"', name)
                    self.record(state, "Warning", "Failed", "Error: ImagePullBackOff", name)
            self.after(state, min(self.pull_backoff * 2 ** (state.pulls - 1), MAX_BACKOFF))
        self.prepare(state)

    def after(self, state: PodState, seconds: float) -> None:
        """The pull's next step in ``seconds`` (a newer step makes this one moot)."""
        state.token += 1
        heapq.heappush(self.timers, (time.monotonic() + seconds, state.pod["metadata"]["uid"], state.token))

    # ------------------------------------------------------------------ Events
    def record(self, state: PodState, kind: str, reason: str, message: str, container: str | None, *,
               once: bool = False) -> None:
        """An Event as the kubelet's recorder writes it; a repeat counts on the same Event."""
        pod, key = state.pod, (reason, message, container)
        if once and key in state.sent:
            return
        state.sent.add(key)
        meta = pod["metadata"]
        digest = hashlib.sha256(repr((meta["uid"], *key)).encode()).hexdigest()[:16]
        involved = {"apiVersion": "v1", "kind": "Pod", "namespace": meta["namespace"], "name": meta["name"],
                    "uid": meta["uid"], "resourceVersion": meta.get("resourceVersion")}
        if container:
            involved["fieldPath"] = rules.field_path(pod, container)
        node, at = pod["spec"].get("nodeName"), now()
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{meta['name'][:200]}.{digest}", "namespace": meta["namespace"]},
                "involvedObject": involved, "reason": reason, "message": message, "type": kind,
                "source": {"component": "kubelet", "host": node}, "firstTimestamp": at, "lastTimestamp": at,
                "count": 1, "reportingComponent": "kubelet", "reportingInstance": node}
        try:
            self.client.create(EVENTS, meta["namespace"], body, answer=False)
        except errors.AlreadyExists:
            current = self.client.get(EVENTS, meta["namespace"], body["metadata"]["name"])
            self.client.patch(EVENTS, meta["namespace"], body["metadata"]["name"],
                              {"count": int(current.get("count") or 1) + 1, "lastTimestamp": at})

    # ------------------------------------------------------------------ small readers
    @staticmethod
    def name(pod: Mapping[str, Any]) -> str:
        return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"

    def host_ip(self, node: str) -> str | None:
        if node not in self.host_ips:
            try:
                addresses = (self.client.get(NODES, None, node).get("status") or {}).get("addresses") or []
            except errors.NotFound:
                addresses = []
            self.host_ips[node] = next((a["address"] for a in addresses if a.get("type") == "InternalIP"), None)
        return self.host_ips[node]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testworld.kubelet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--logs-dir", default=None, help="where containers' logs go (none: no logs)")
    parser.add_argument("--bad-images", default=None, help="a pull of an image this regex matches fails")
    parser.add_argument("--no-config-refs", action="store_true", help="Secrets and ConfigMaps are not looked up")
    parser.add_argument("--pull-backoff", type=float, default=10.0, help="first image pull back-off, seconds")
    args = parser.parse_args(argv)
    client = Client.connect(args.kubeconfig, pool_size=8)
    Kubelet(client, logs_dir=Path(args.logs_dir) if args.logs_dir else None, bad_images=args.bad_images,
            config_refs=not args.no_config_refs, pull_backoff=args.pull_backoff).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
