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

Logs: each container's run gets the line ``container NAME started: COMMAND`` when it is
prepared (a restart: when it runs again) and ``container NAME exited with code N (REASON)``
when its exit shows, at the times the status gives.
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
    logs: str = ""  # "", "ours" or "theirs": whose Logs object names the pod
    logs_uid: str = ""
    logs_spec: Any = None
    exits: set[str] = field(default_factory=set)  # containerIDs whose exit line is written
    token: int = 0  # of the pull's pending timer


class Kubelet:
    def __init__(self, client: Client, *, logs_dir: Path | None, bad_images: str | None, config_refs: bool,
                 pull_backoff: float) -> None:
        self.client = client
        self.logs_dir = logs_dir
        self.bad_images = re.compile(bad_images) if bad_images else None
        self.config_refs = config_refs
        self.pull_backoff = pull_backoff
        self.events: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self.config: dict[tuple[str, str, str], frozenset[str]] = {}  # (kind, ns, name) -> data keys
        self.pods: dict[str, PodState] = {}
        self.timers: list[tuple[float, str, int]] = []
        self.host_ips: dict[str, str | None] = {}
        self.cluster_logs: dict[str, dict[str, Any]] = {}  # name -> selector of the ClusterLogs objects

    # ------------------------------------------------------------------ the loop
    def run(self) -> None:
        caches = [SECRETS, CONFIGMAPS] if self.config_refs else []
        for res in caches + ([podlogs.cluster_logs_resource()] if self.logs_dir else []):
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
                    self.forget(self.pods.pop(uid))
                for pod in objects:
                    self.on_pod(pod)
            elif kind == "ClusterLogs":
                self.cluster_logs.clear()
                for obj in objects:
                    self.on_cluster_logs("ADDED", obj)
            else:
                self.config = {k: v for k, v in self.config.items() if k[0] != kind.lower()}
                for obj in objects:
                    self.on_config(kind, "ADDED", obj)
            return
        _, kind, change, obj = item
        if kind == "Pod":
            if change == "DELETED":
                if (state := self.pods.pop(obj["metadata"]["uid"], None)) is not None:
                    self.forget(state)
            else:
                self.on_pod(obj)
        elif kind == "ClusterLogs":
            self.on_cluster_logs(change, obj)
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
        elif self.logs_dir is not None and state.logs == "ours":
            self.follow_logs(state)

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
        if self.logs_dir is not None and not state.logs:
            self.open_logs(state)
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
            image = self.container(state.pod, name).get("image") or ""
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
                    image = rules.with_default_tag(self.container(state.pod, name).get("image") or "")
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

    # ------------------------------------------------------------------ logs
    def open_logs(self, state: PodState) -> None:
        """Each container's first run file with its start line, and a Logs object naming them,
        unless the pod's log is a test's (its own Logs, or a ClusterLogs over it)."""
        pod, root = state.pod, self.logs_dir
        assert root is not None
        inits = {c["name"] for c in pod["spec"].get("initContainers") or []}
        for container in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
            path = podlogs.run_file(root, pod, container["name"], 0)
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [f"container {container['name']} started: {rules.command_line(container)}"]
            if container["name"] in inits:  # kwok finishes init containers as the pod starts
                lines.append(f"container {container['name']} exited with code 0 (Completed)")
            podlogs.write(path, lines)
        if self.served_by_cluster_logs(pod):
            state.logs = "theirs"
            return
        meta = pod["metadata"]
        spec = self.logs_spec(pod)
        body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict([podlogs.OWNED])},
                "spec": spec}
        try:
            made = self.client.create(podlogs.logs_resource(), meta["namespace"], body)
        except errors.AlreadyExists:
            made = self.client.get(podlogs.logs_resource(), meta["namespace"], meta["name"])
            if (made["metadata"].get("labels") or {}).get(podlogs.OWNED[0]) != podlogs.OWNED[1]:
                state.logs = "theirs"
                return
            made = self.patch_logs(made["metadata"], spec)
            if made is None:
                state.logs = "theirs"
                return
        state.logs, state.logs_uid, state.logs_spec = "ours", made["metadata"]["uid"], spec

    def on_cluster_logs(self, change: str, obj: Mapping[str, Any]) -> None:
        """A test's ClusterLogs serves the pods it matches: our Logs for them (which kwok
        would prefer) go. One made just after ours is caught here, as its watch event comes."""
        name = obj["metadata"]["name"]
        if change == "DELETED":
            self.cluster_logs.pop(name, None)
            return
        self.cluster_logs[name] = (obj.get("spec") or {}).get("selector") or {}
        for state in self.pods.values():
            if state.logs == "ours" and self.served_by_cluster_logs(state.pod):
                self.forget(state)
                state.logs = "theirs"

    def served_by_cluster_logs(self, pod: Mapping[str, Any]) -> bool:
        meta = pod["metadata"]
        return any(meta["namespace"] in (selector.get("matchNamespaces") or [meta["namespace"]])
                   and meta["name"] in (selector.get("matchNames") or [meta["name"]])
                   for selector in self.cluster_logs.values())

    def logs_spec(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        assert self.logs_dir is not None
        runs = {s["name"]: int(s.get("restartCount") or 0)
                for s in [*(pod["status"].get("initContainerStatuses") or []), *(pod["status"].get("containerStatuses") or [])]
                if s.get("containerID")}
        entries = []
        for container in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
            name = container["name"]
            run = runs.get(name, 0)
            entry = {"containers": [name], "logsFile": str(podlogs.run_file(self.logs_dir, pod, name, run)),
                     "follow": True}
            if run:
                entry["previousLogsFile"] = str(podlogs.run_file(self.logs_dir, pod, name, run - 1))
            entries.append(entry)
        return {"logs": entries}

    def patch_logs(self, meta: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
        """Our Logs object's new spec, if it is still ours (None: replaced or gone)."""
        try:
            return self.client.patch(podlogs.logs_resource(), meta["namespace"], meta["name"],
                                     {"metadata": {"resourceVersion": meta["resourceVersion"]}, "spec": spec})
        except (errors.Conflict, errors.NotFound):
            return None

    def follow_logs(self, state: PodState) -> None:
        """Start lines of new runs, exit lines, and the Logs object pointing at the current run."""
        pod = state.pod
        assert self.logs_dir is not None
        for status in pod["status"].get("containerStatuses") or []:
            name, run = status["name"], int(status.get("restartCount") or 0)
            current = status.get("state") or {}
            path = podlogs.run_file(self.logs_dir, pod, name, run)
            if "running" in current and (not path.exists() or not path.stat().st_size):
                path.parent.mkdir(parents=True, exist_ok=True)
                podlogs.write(path, [f"container {name} started: {rules.command_line(self.container(pod, name))}"],
                              at=current["running"].get("startedAt"))
            for which, done in (("state", current.get("terminated")), ("lastState", (status.get("lastState") or {})
                                                                         .get("terminated"))):
                if not done or not done.get("containerID") or done["containerID"] in state.exits:
                    continue
                state.exits.add(done["containerID"])
                ended = run if which == "state" or "waiting" in current else run - 1
                podlogs.write(podlogs.run_file(self.logs_dir, pod, name, ended),
                              [f"container {name} exited with code {done.get('exitCode')} ({done.get('reason')})"],
                              at=done.get("finishedAt"))
        spec = self.logs_spec(pod)
        if spec != state.logs_spec:
            meta = {**pod["metadata"], "resourceVersion": self.logs_version(pod)}
            made = self.patch_logs(meta, spec) if meta["resourceVersion"] else None
            if made is None:
                state.logs = "theirs"
            else:
                state.logs_spec = spec

    def logs_version(self, pod: Mapping[str, Any]) -> str | None:
        try:
            current = self.client.get(podlogs.logs_resource(), pod["metadata"]["namespace"], pod["metadata"]["name"])
        except errors.NotFound:
            return None
        ours = (current["metadata"].get("labels") or {}).get(podlogs.OWNED[0]) == podlogs.OWNED[1]
        return current["metadata"]["resourceVersion"] if ours else None

    def forget(self, state: PodState) -> None:
        """A deleted pod's Logs object goes with it (if it is still the one we made)."""
        meta = state.pod["metadata"]
        if state.logs_uid:
            try:
                self.client.delete(podlogs.logs_resource(), meta["namespace"], meta["name"], uid=state.logs_uid)
            except (errors.NotFound, errors.Conflict):
                pass
            state.logs_uid = ""

    # ------------------------------------------------------------------ small readers
    @staticmethod
    def name(pod: Mapping[str, Any]) -> str:
        return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"

    @staticmethod
    def container(pod: Mapping[str, Any], name: str) -> dict[str, Any]:
        spec = pod["spec"]
        return next(c for c in [*(spec.get("initContainers") or []), *spec["containers"]] if c["name"] == name)

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
