"""Both operators on one API server, watched alike: the harness of the parity test.

The upstream operator (v1.9.4; v1.8.1 for MXJob, in a namespace of its own) and
`train-controller` each watch their own namespace. The harness applies a case to both
sides, identical but for the namespace, and observes both through one set of watches
(controller.runtime.informer across all namespaces), recording each job's history of status
views. Waits are event-driven: every watch event wakes the waiters, and a comparison ends
when both sides agree, or when both have been quiet for `quiet` seconds (then the
difference is real: neither side will change on its own), or at a generous bound.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import parity_views as pv

from testworld.settle import Unsettled, until_quiet

from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster import errors
from controller.runtime.informer import Informer
from foundation.cluster.kube import (
    CONFIGMAPS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
    Client,
    Resource,
)

CHILDREN = {"Pod": PODS, "Service": SERVICES, "ConfigMap": CONFIGMAPS, "ServiceAccount": SERVICEACCOUNTS,
            "Role": ROLES, "RoleBinding": ROLEBINDINGS,
            "HorizontalPodAutoscaler": Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")}
OTHER = {"PersistentVolumeClaim": Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim"),
         "PodGroup": Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup"),
         "PodGroup/x-k8s": Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")}
VIEW = {"Pod": pv.pod_view, "Service": pv.service_view}


@dataclass
class Sides:
    up: str      # the v1.9.4 operator's namespace
    up_mx: str   # the v1.8.1 operator's namespace (MXJob)
    ours: str    # train-controller's namespace

    def up_for(self, kind: str) -> str:
        return self.up_mx if kind == "MXJob" else self.up


@dataclass
class Track:
    """One job on one side: its latest object and the distinct status views it went through."""
    obj: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    changed: float = field(default_factory=time.monotonic)  # last event for the job or one of its children
    deleted: bool = False


class Harness:
    def __init__(self, client: Client, sides: Sides) -> None:
        self.client, self.sides = client, sides
        self.cond = threading.Condition()
        self.tracks: dict[tuple[str, str, str], Track] = {}  # (namespace, kind, job) -> track
        self.informers: dict[str, Informer] = {}
        wanted = {sides.up, sides.up_mx, sides.ours}
        for kind in KINDS.values():
            self.informers[kind.name] = Informer(client, job_resource(kind), handler=self._job_event)
        for name, res in CHILDREN.items():
            self.informers[name] = Informer(client, res, handler=self._child_event)
        self._wanted = wanted
        for inf in self.informers.values():
            inf.start()
        for inf in self.informers.values():
            if not inf.wait_synced(60):
                raise RuntimeError(f"watch of {inf.resource.plural} did not sync")

    def stop(self) -> None:
        for inf in self.informers.values():
            inf.stop()

    # ------------------------------------------------------------------ events
    def _track(self, ns: str, kind: str, name: str) -> Track:
        return self.tracks.setdefault((ns, kind, name), Track())

    def _ours(self, old: dict[str, Any] | None, new: dict[str, Any] | None) -> dict[str, Any] | None:
        """The event's object if it is in one of the three namespaces."""
        obj = new or old
        return obj if obj is not None and obj["metadata"].get("namespace") in self._wanted else None

    def _job_event(self, etype: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = self._ours(old, new)
        if obj is None:
            return
        meta = obj["metadata"]
        with self.cond:
            track = self._track(meta["namespace"], obj["kind"], meta["name"])
            track.changed = time.monotonic()
            if etype == "DELETED":
                track.deleted = True
            else:
                track.obj = new
                view = pv.status_view(new or {}, meta["namespace"])
                if not track.history or track.history[-1] != view:
                    track.history.append(view)
            self.cond.notify_all()

    def _child_event(self, etype: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        obj = self._ours(old, new)
        if obj is None:
            return
        meta = obj["metadata"]
        # a crash-looping pod changes its status for ever: only what an operator does counts
        # as activity (a child created or deleted, or marked for deletion)
        marked = bool(new and new["metadata"].get("deletionTimestamp")) and not (
            old and old["metadata"].get("deletionTimestamp"))
        with self.cond:
            if etype != "MODIFIED" or marked:
                for ref in meta.get("ownerReferences") or []:
                    if ref.get("controller"):
                        self._track(meta["namespace"], ref["kind"], ref["name"]).changed = time.monotonic()
            self.cond.notify_all()

    # ------------------------------------------------------------------ reads
    def job(self, ns: str, kind: str, name: str) -> dict[str, Any] | None:
        return self.informers[kind].get(ns, name)

    def children(self, ns: str, kind: str, name: str) -> dict[str, dict[str, Any]]:
        """'Kind/name' -> view of every object in `ns` the job controls."""
        out = {}
        for ckind in CHILDREN:
            for obj in self.informers[ckind].items():
                meta = obj["metadata"]
                if meta.get("namespace") != ns:
                    continue
                if any(r.get("controller") and r["kind"] == kind and r["name"] == name
                       for r in meta.get("ownerReferences") or []):
                    out[f"{ckind}/{meta['name']}"] = VIEW.get(ckind, pv.helper_view)(obj, ns)
        return out

    def pods(self, ns: str, kind: str, name: str) -> list[dict[str, Any]]:
        return [p for p in self.informers["Pod"].items() if p["metadata"].get("namespace") == ns and any(
            r.get("controller") and r["kind"] == kind and r["name"] == name for r in p["metadata"].get("ownerReferences") or [])]

    def settle(self, views: Callable[[], tuple[Any, Any]], keys: list[tuple[str, str, str]], *,
               done: Callable[[Any, Any], bool], min_quiet: float = 0.0, quiet: float = 30.0,
               timeout: float = 150.0) -> tuple[Any, Any]:
        """The two views once `done(up, ours)` holds and both jobs have been quiet (no event for
        them or their children) for `min_quiet` s; or, if it never does, once both have been
        quiet for `quiet` s (neither will change on its own any more) or after `timeout` s.
        Every watch event wakes the wait (`cond`)."""
        def read() -> tuple[tuple[Any, Any], tuple[float, ...]]:
            return views(), tuple(self._track(*k).changed for k in keys)

        with self.cond:
            try:
                reading = until_quiet(read, quiet=lambda r: min_quiet if done(*r[0]) else quiet, timeout=timeout,
                                      same=lambda r, s: r[1] == s[1], poll=0.25, pause=self.cond.wait,
                                      what=f"{keys}")
            except Unsettled as exc:  # a difference, recorded by the caller
                reading = exc.last
        return reading[0]

    def wait(self, predicate: Callable[[], Any], *, timeout: float = 120.0, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
                self.cond.wait(min(left, 0.5))

    # ------------------------------------------------------------------ writes
    def apply(self, docs: list[dict[str, Any]], ns: str) -> None:
        """Create `docs` in `ns` (namespaced ones retargeted; cluster-scoped ones once)."""
        for doc in docs:
            body = copy.deepcopy(doc)
            kind = body["kind"]
            res = job_resource(KINDS[kind]) if kind in KINDS else CHILDREN.get(kind) or OTHER.get(kind)
            if res is None and kind == "PodGroup":
                res = OTHER["PodGroup/x-k8s"]
            if res is None:
                raise ValueError(f"the parity harness cannot apply a {kind}")
            body["metadata"]["namespace"] = ns
            for subject in body.get("subjects") or []:
                if "namespace" in subject:
                    subject["namespace"] = ns
            if kind == "PodGroup" and body["apiVersion"].startswith("scheduling.x-k8s.io"):
                res = OTHER["PodGroup/x-k8s"]
            try:
                self.client.create(res, ns, body)
            except errors.AlreadyExists:
                pass
