"""What each container of the test world "prints", and the kwok ``Logs`` object that serves it:
the container runtime's log part of ``testworld.kubelet``.

Why it is shaped so: ``kubectl logs`` on any pod should show something real without a test
writing a ``Logs`` object, and kwok serves a pod's log only from files a ``Logs`` (or
``ClusterLogs``) object names. So for each pod it prepares, ``testworld.kubelet`` writes one
file per container run, where the kubelet would (``podlogs.run_file``), and one ``Logs``
object labelled ``podlogs.OWNED`` naming the current run (``logsFile``) and the one before
(``previousLogsFile``, ``kubectl logs --previous``). The files and the object exist before
kwok may start the pod, so a Running pod always has a log. A log a test serves wins: a
``Logs`` object not labelled ours is never touched, and ours goes when a test's
``ClusterLogs`` covers the pod (kwok would prefer ours).

The lines: ``container NAME started: COMMAND`` as a run starts and ``container NAME exited
with code N (REASON)`` as its exit shows, at the times the pod's status gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foundation.cluster import errors

from . import podlogs
from .kubelet_rules import command_line, container

if TYPE_CHECKING:
    from collections.abc import Mapping

    from foundation.cluster.kube import Client


@dataclass
class PodLog:
    pod: dict[str, Any]
    ours: bool = False  # False: the pod's log is a test's (or not made yet)
    uid: str = ""  # of our Logs object
    spec: Any = None  # what our Logs object says
    exits: set[str] = field(default_factory=set)  # containerIDs whose exit line is written


def started(name: str, pod: Mapping[str, Any]) -> str:
    return f"container {name} started: {command_line(container(pod, name))}"


def exited(name: str, terminated: Mapping[str, Any]) -> str:
    return f"container {name} exited with code {terminated.get('exitCode')} ({terminated.get('reason')})"


def owned(obj: Mapping[str, Any]) -> bool:
    return (obj["metadata"].get("labels") or {}).get(podlogs.OWNED[0]) == podlogs.OWNED[1]


class ContainerLogs:
    def __init__(self, client: Client, root: Path) -> None:
        self.client, self.root = client, root
        self.pods: dict[str, PodLog] = {}  # by pod uid
        self.cluster_logs: dict[str, dict[str, Any]] = {}  # name -> selector of each ClusterLogs object

    def open(self, pod: dict[str, Any]) -> None:
        """Each container's first run file with its start line, and our Logs object naming
        them, unless the pod's log is a test's (its own Logs, or a ClusterLogs over it)."""
        log = self.pods[pod["metadata"]["uid"]] = PodLog(pod)
        inits = {c["name"] for c in pod["spec"].get("initContainers") or []}
        for spec in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
            path = podlogs.run_file(self.root, pod, spec["name"], 0)
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = [started(spec["name"], pod)]
            if spec["name"] in inits:  # kwok finishes init containers as the pod starts
                lines.append(exited(spec["name"], {"exitCode": 0, "reason": "Completed"}))
            podlogs.write(path, lines)
        if self.served_by_cluster_logs(pod):
            return
        meta, wanted = pod["metadata"], self.spec(pod)
        body = {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict([podlogs.OWNED])},
                "spec": wanted}
        try:
            made = self.client.create(podlogs.logs_resource(), meta["namespace"], body)
        except errors.AlreadyExists:  # a test's (kept), or ours for an earlier pod of this name (taken over)
            current = self.client.get(podlogs.logs_resource(), meta["namespace"], meta["name"])
            made = self.patch(current["metadata"], wanted) if owned(current) else None
            if made is None:
                return
        log.ours, log.uid, log.spec = True, made["metadata"]["uid"], wanted

    def follow(self, pod: dict[str, Any]) -> None:
        """Start lines of new runs, exit lines, and our Logs object naming the current run."""
        log = self.pods.get(pod["metadata"]["uid"])
        if log is None or not log.ours:
            return
        log.pod = pod
        for status in pod["status"].get("containerStatuses") or []:
            name, run = status["name"], int(status.get("restartCount") or 0)
            now = status.get("state") or {}
            path = podlogs.run_file(self.root, pod, name, run)
            if "running" in now and (not path.exists() or not path.stat().st_size):
                path.parent.mkdir(parents=True, exist_ok=True)
                podlogs.write(path, [started(name, pod)], at=now["running"].get("startedAt"))
            last = (status.get("lastState") or {}).get("terminated")
            # a terminated state is this run's; lastState's is this one's while it waits to restart, else the one before
            for done, ended in ((now.get("terminated"), run), (last, run if "waiting" in now else run - 1)):
                if done and done.get("containerID") and done["containerID"] not in log.exits:
                    log.exits.add(done["containerID"])
                    podlogs.write(podlogs.run_file(self.root, pod, name, ended), [exited(name, done)],
                                  at=done.get("finishedAt"))
        wanted = self.spec(pod)
        if wanted != log.spec:
            current = self.current(pod)
            made = self.patch(current["metadata"], wanted) if current and owned(current) else None
            log.ours, log.spec = made is not None, wanted

    def spec(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        status = pod.get("status") or {}
        runs = {s["name"]: int(s.get("restartCount") or 0)
                for s in [*(status.get("initContainerStatuses") or []), *(status.get("containerStatuses") or [])]
                if s.get("containerID")}
        entries = []
        for spec in [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]:
            name, run = spec["name"], runs.get(spec["name"], 0)
            entry = {"containers": [name], "logsFile": str(podlogs.run_file(self.root, pod, name, run)), "follow": True}
            if run:
                entry["previousLogsFile"] = str(podlogs.run_file(self.root, pod, name, run - 1))
            entries.append(entry)
        return {"logs": entries}

    def current(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        try:
            return self.client.get(podlogs.logs_resource(), pod["metadata"]["namespace"], pod["metadata"]["name"])
        except errors.NotFound:
            return None

    def patch(self, meta: Mapping[str, Any], spec: dict[str, Any]) -> dict[str, Any] | None:
        """Our Logs object with a new spec, if it is still the one read (None: replaced or gone)."""
        try:
            return self.client.patch(podlogs.logs_resource(), meta["namespace"], meta["name"],
                                     {"metadata": {"resourceVersion": meta["resourceVersion"]}, "spec": spec})
        except (errors.Conflict, errors.NotFound):
            return None

    def forget(self, uid: str) -> None:
        """A deleted pod's Logs object goes with it (if it is still the one we made)."""
        log = self.pods.pop(uid, None)
        if log is not None:
            self.drop(log)

    def drop(self, log: PodLog) -> None:
        meta = log.pod["metadata"]
        if log.ours:
            try:
                self.client.delete(podlogs.logs_resource(), meta["namespace"], meta["name"], uid=log.uid)
            except (errors.NotFound, errors.Conflict):
                pass
        log.ours = False

    def on_cluster_logs(self, change: str, obj: Mapping[str, Any]) -> None:
        """A test's ClusterLogs serves the pods it matches: our Logs for them go. One made
        just after ours is caught here, as its watch event comes."""
        name = obj["metadata"]["name"]
        if change == "DELETED":
            self.cluster_logs.pop(name, None)
            return
        self.cluster_logs[name] = (obj.get("spec") or {}).get("selector") or {}
        for log in self.pods.values():
            if log.ours and self.served_by_cluster_logs(log.pod):
                self.drop(log)

    def served_by_cluster_logs(self, pod: Mapping[str, Any]) -> bool:
        meta = pod["metadata"]
        return any(meta["namespace"] in (selector.get("matchNamespaces") or [meta["namespace"]])
                   and meta["name"] in (selector.get("matchNames") or [meta["name"]])
                   for selector in self.cluster_logs.values())
