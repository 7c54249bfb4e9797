"""Builders and a pretend kubelet for the controller tests.

Jobs are built from a few arguments (`job("PyTorchJob", "demo", Master=1, Worker=2)`)
rather than 80-line dicts; `Kubelet` writes pod status through the pods/status
subresource exactly as a node would, since the test control plane has no kubelet.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from foundation.frameworks import by_kind
from controller.jobs.kinds import KINDS, job_resource, select
from controller.manager import Manager
from foundation.cluster import errors
from foundation.cluster.kube import PODS, Client, Resource
from testworld.settle import until_quiet


def container(kind: str, **extra: Any) -> dict[str, Any]:
    facts = by_kind(kind).facts
    return {"name": facts.container if kind != "MPIJob" else "mpi", "image": f"example.com/{facts.name}:1", **extra}


def replica(kind: str, count: int | None, *, restart: str | None = None, containers: list[dict[str, Any]] | None = None,
            template_meta: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": containers or [container(kind)]}}}
    if template_meta:
        spec["template"]["metadata"] = template_meta
    if count is not None:
        spec["replicas"] = count
    if restart:
        spec["restartPolicy"] = restart
    return spec


def job(kind: str, name: str, *, restart: str | None = None, spec: dict[str, Any] | None = None,
        run_policy: dict[str, Any] | None = None, **replicas: int | None) -> dict[str, Any]:
    """A job of `kind` with `replicas` per type (e.g. Master=1, Worker=2)."""
    facts = by_kind(kind).facts
    body: dict[str, Any] = {facts.replica_specs: {rt: replica(kind, n, restart=restart) for rt, n in replicas.items()}}
    if kind == "MXJob":
        body["jobMode"] = "MXTrain"
    if run_policy:
        body["runPolicy"] = run_policy
    body.update(spec or {})
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name}, "spec": body}


def running_pytorch(**changes: Any) -> dict[str, Any]:
    """A PyTorchJob as read from the cluster (1 Master, 2 Workers, OnFailure, a run policy, a uid);
    `a__b=value` sets `a.b`."""
    body = job("PyTorchJob", "j", restart="OnFailure", run_policy={"backoffLimit": 3, "cleanPodPolicy": "All"},
               Master=1, Worker=2)
    body["metadata"].update(uid="u-1", namespace="ns")
    for path, value in changes.items():
        node = body
        *parents, last = path.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return body


def wait_for(predicate: Callable[[], Any], *, timeout: float = 45.0, interval: float = 0.05, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last value: {last!r}")


def settled(manager: Manager, since: int, *, quiet: float = 0.3, timeout: float = 30.0) -> None:
    """The positive signal an absence is asserted after, instead of a fixed sleep: the
    controller has reconciled since `since` (`manager.reconciles`, read before the change),
    and then its queue stayed empty with no reconcile for `quiet` s. Whatever it would do
    about the change, it has done; a slow controller makes this wait longer, never pass early."""
    until_quiet(lambda: (manager.reconciles, len(manager.queue)), ready=lambda r: r[0] > since and r[1] == 0,
                quiet=quiet, timeout=timeout, poll=0.02, what=f"the controller (reconciles since {since})")


def quiet_writes(manager: Manager, *, quiet: float = 0.6, timeout: float = 10.0) -> int:
    """Once the controller has sent no write for `quiet` s with its queue empty: its writes so far."""
    writes, _ = until_quiet(lambda: (manager.client.writes(), len(manager.queue)), ready=lambda r: r[1] == 0,
                            quiet=quiet, timeout=timeout, poll=0.1, what="the controller's writes")
    return writes


# train-controller's default is --pods-first; `make test` runs tests/controller a second time
# with TRAINFORGE_TEST_UPSTREAM_ORDER=1 (--no-pods-first), so every behaviour holds in both orders.
PODS_FIRST = os.environ.get("TRAINFORGE_TEST_UPSTREAM_ORDER") != "1"


@contextmanager
def running_manager(kubeconfig: str, namespace: str, *, pool_size: int, pods_first: bool,
                    quiet: float | None = None, stuck_after: float | None = None) -> Iterator[Manager]:
    """The controller, in this process, watching only `namespace`, stopped afterwards;
    `quiet` overrides how long --pods-first waits after the last pod create, `stuck_after`
    the --stuck-pod-threshold (seconds)."""
    client = Client.connect(kubeconfig, pool_size=pool_size)
    mgr = Manager(client, select(""), namespace=namespace, workers=2, watch_timeout=60, pods_first=pods_first,
                  **({"stuck_after": stuck_after} if stuck_after is not None else {}))
    if quiet is not None:
        assert mgr.held is not None
        mgr.held.quiet = quiet
    mgr.start()
    try:
        yield mgr
    finally:
        mgr.stop()
        client.close()


class Cluster:
    """Test-side access to the API server (its own client, never the controller's)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client, self.namespace = client, namespace

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        res = job_resource(KINDS[obj["kind"]])
        return self.client.create(res, self.namespace, obj)

    def get_job(self, kind: str, name: str) -> dict[str, Any] | None:
        try:
            return self.client.get(job_resource(KINDS[kind]), self.namespace, name)
        except errors.NotFound:
            return None

    def pods(self) -> dict[str, dict[str, Any]]:
        items = self.client.list(PODS, namespace=self.namespace)["items"]
        return {p["metadata"]["name"]: p for p in items}

    def objects(self, res: Resource) -> dict[str, dict[str, Any]]:
        items = self.client.list(res, namespace=self.namespace)["items"]
        return {o["metadata"]["name"]: o for o in items}

    def conditions(self, kind: str, name: str) -> list[tuple[str, str, str]]:
        current = self.get_job(kind, name) or {}
        return [(c["type"], c["status"], c["reason"]) for c in (current.get("status") or {}).get("conditions") or []]

    def wait_condition(self, kind: str, name: str, ctype: str, *, status: str = "True", timeout: float = 45.0) -> dict[str, Any]:
        def check() -> Any:
            current = self.get_job(kind, name) or {}
            for c in (current.get("status") or {}).get("conditions") or []:
                if c["type"] == ctype and c["status"] == status:
                    return current
            return None
        return wait_for(check, timeout=timeout, what=f"{kind} {name} {ctype}={status}")

    def wait_pods(self, names: set[str], *, timeout: float = 45.0) -> dict[str, dict[str, Any]]:
        return wait_for(lambda: (lambda pods: pods if set(pods) == names else None)(self.pods()), timeout=timeout,
                        what=f"pods {sorted(names)}")

    # ------------------------------------------------------------------ the pretend kubelet
    def set_phase(self, pod_name: str, phase: str, *, exit_code: int | None = None, restarts: int = 0,
                  reason: str | None = None) -> None:
        pod = self.client.get(PODS, self.namespace, pod_name)
        statuses = []
        for c in pod["spec"]["containers"]:
            state: dict[str, Any]
            if phase == "Running":
                state = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}
            elif phase in ("Succeeded", "Failed"):
                code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
                state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                        "startedAt": "2024-01-01T00:00:00Z", "finishedAt": "2024-01-01T00:00:01Z"}}
            else:
                state = {"waiting": {"reason": "ContainerCreating"}}
            statuses.append({"name": c["name"], "image": c["image"], "imageID": "", "ready": phase == "Running",
                             "restartCount": restarts, "state": state})
        status: dict[str, Any] = {"phase": phase, "containerStatuses": statuses}
        if reason:
            status["reason"] = reason
        self.client.patch(PODS, self.namespace, pod_name, {"status": status}, sub="status")

    def run_all(self, *names: str) -> None:
        for name in names:
            self.set_phase(name, "Running")


def env_of(pod: dict[str, Any], container_name: str | None = None) -> dict[str, Any]:
    """name -> value (or valueFrom) of the first container (or the named one)."""
    containers = pod["spec"]["containers"]
    c = next(c for c in containers if container_name is None or c["name"] == container_name)
    return {e["name"]: e.get("value", e.get("valueFrom", "")) for e in c.get("env") or []}


def tf_config(pod: dict[str, Any]) -> dict[str, Any]:
    return json.loads(env_of(pod, "tensorflow")["TF_CONFIG"])


# RBAC the controller holds only to grant it to MPI launchers' Roles (the server refuses to
# let it grant what it lacks), never requested itself
ESCALATION_ONLY = {("get", "/pods"), ("create", "/pods/exec")}


def one_job_resource(pairs: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """(verb, resource) pairs with every kind's jobs as one resource, `kubeflow.org/<jobs>`
    (sub-resources kept): a rule used for one kind counts as used for all."""
    plurals = {k.facts.plural for k in KINDS.values()}

    def norm(resource: str) -> str:
        group, _, rest = resource.partition("/")
        plural, _, sub = rest.partition("/")
        return f"{group}/<jobs>" + (f"/{sub}" if sub else "") if plural in plurals else resource

    return {(verb, norm(resource)) for verb, resource in pairs}
