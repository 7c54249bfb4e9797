"""Wait for a condition over a set of API objects, woken by a watch instead of a sleep loop.

Why it is shaped so: end-to-end tests wait on other processes (Flux, Argo CD, the
controller, kwok) whose pace depends on a loaded 2-core machine. Polling either wastes
CPU or adds latency; a LIST followed by a WATCH from its resourceVersion sees every
change as it happens, re-checks the predicate on each event, and is bounded by one
deadline. A watch the server closes (its timeoutSeconds, an expired resourceVersion)
is simply re-listed. On timeout the error carries the last value the predicate gave
(a description of what was missing), which is what a failing test should print.

API: ``wait_for(client, resource, check, namespace=None, timeout=..., what=...)`` where
``check(objects: dict[(namespace, name), obj]) -> Any``; truthy ends the wait and is
returned. ``RESOURCES`` names the resources the GitOps tests read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource

Key = tuple[str, str]

RESOURCES = {
    "Kustomization": Resource("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization"),
    "GitRepository": Resource("source.toolkit.fluxcd.io", "v1", "gitrepositories", "GitRepository"),
    "Application": Resource("argoproj.io", "v1alpha1", "applications", "Application"),
    "Pod": Resource("", "v1", "pods", "Pod"),
}


class WaitTimeout(AssertionError):
    """The condition did not hold in time; the message says what was last seen."""


def _key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def wait_for(client: Client, res: Resource, check: Callable[[dict[Key, dict[str, Any]]], Any], *,
             namespace: str | None = None, timeout: float = 120.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        listed = client.list(res, namespace=namespace)
        objects = {_key(o): o for o in listed.get("items") or []}
        last = check(objects)
        if last and not isinstance(last, Missing):
            return last
        version = (listed.get("metadata") or {}).get("resourceVersion") or "0"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            for event in client.watch(res, namespace=namespace, resource_version=version,
                                      timeout_seconds=max(1, min(int(remaining), 60))):
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    break  # expired resourceVersion: list again
                if kind == "DELETED":
                    objects.pop(_key(obj), None)
                elif kind in ("ADDED", "MODIFIED"):
                    objects[_key(obj)] = obj
                else:
                    continue  # BOOKMARK
                last = check(objects)
                if last and not isinstance(last, Missing):
                    return last
                if time.monotonic() > deadline:
                    break
        except errors.Retryable:
            pass  # a broken stream: list again
        if time.monotonic() > deadline:
            break
    raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last seen: {last}")


class Missing(str):
    """A falsy-in-spirit answer for ``check``: what is still missing, kept for the error."""
