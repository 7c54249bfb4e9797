"""What each write costs the API server, and what that allows the controller's pods/s.

Why: on this machine the API server and etcd share two cores with every client, so
pods/s is bounded by the CPU the server spends per pod. A bare client spends it on one
POST per pod; a controller with upstream's contract also sends a headless Service, two
Events and a status update per job. This module measures, in the same run, the server's
CPU (kube-apiserver + etcd, from /proc) per request of each type the controller sends,
by POSTing copies of the objects the controller round made into a fresh namespace, and
turns the writes sent before the last pod existed into a model: the CPU per pod they
cost, checked against the CPU measured over that window, and the pods/s ratio that write
set allows at best (pod create cost / modelled cost per pod) if the server is the limit.
Only with a control plane started here (its process ids); on an existing cluster the
rows are left out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Callable, Optional

from bench import kube_tools as kt
from bench import report
from foundation.cluster.kube import EVENTS, PODS, SERVICES, Client, Resource

# request-count keys (foundation.cluster.kube.Client.counts, as the child reports them) -> cost row
KINDS = {
    "create /pods": "pod create",
    "create /services": "Service create",
    "create /events": "Event create",
    "create kubeflow.org/pytorchjobs": "PyTorchJob create",
    "update kubeflow.org/pytorchjobs/status": "PyTorchJob status update",
}


class ServerCPU:
    """CPU seconds used so far by kube-apiserver and etcd together."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    @classmethod
    def of(cls, plane: Any) -> Optional[ServerCPU]:
        pids = [getattr(plane, "apiserver_pid", None), getattr(plane, "etcd_pid", None)]
        return cls([p for p in pids if p]) if all(pids) else None

    def seconds(self) -> float:
        return sum(kt.process_stats(pid)[0] for pid in self.pids)

    def spent(self, fn: Callable[[], Any]) -> float:
        before = self.seconds()
        fn()
        return self.seconds() - before


@dataclass
class Costs:
    """Server CPU milliseconds per request, by row name (see KINDS)."""

    ms: dict[str, float]

    def model(self, writes: dict[str, int]) -> float:
        """Server CPU (ms) the given request counts cost; unknown kinds count nothing."""
        return sum(n * self.ms[KINDS[key]] for key, n in writes.items() if KINDS.get(key) in self.ms)


def measure(client: Client, cpu: ServerCPU, namespace: str, *, pods: list[dict[str, Any]],
            services: list[dict[str, Any]], events: list[dict[str, Any]], jobs: list[dict[str, Any]],
            threads: int) -> Costs:
    """POST copies of what the controller round made into `namespace` (empty, fresh), timing the
    server's CPU per request type; the jobs' status is then PUT back as the controller wrote it."""
    ms: dict[str, float] = {}

    def post(row: str, res: Resource, bodies: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = []
        if bodies:
            seconds = cpu.spent(lambda: out.extend(
                kt.parallel(lambda body: client.create(res, namespace, body), bodies, threads=threads)))
            ms[row] = 1000 * seconds / len(bodies)
        return out

    post("pod create", PODS, [kt.bare_copy(p, namespace, "Pod") for p in pods])
    post("Service create", SERVICES, [kt.bare_copy(s, namespace, "Service") for s in services])
    post("Event create", EVENTS, [kt.bare_copy(e, namespace, "Event") for e in events])
    created = post("PyTorchJob create", kt.PYTORCHJOBS,
                   [kt.bare_copy(j, namespace, "PyTorchJob", "kubeflow.org/v1") for j in jobs])
    status_of = {j["metadata"]["name"]: j.get("status") for j in jobs}
    updates = [{**job, "status": status_of[job["metadata"]["name"]]} for job in created
               if status_of.get(job["metadata"]["name"])]
    if updates:
        seconds = cpu.spent(lambda: kt.parallel(lambda body: client.update(kt.PYTORCHJOBS, body, sub="status"),
                                                updates, threads=threads))
        ms["PyTorchJob status update"] = 1000 * seconds / len(updates)
    return Costs(ms)


def rows(costs: Costs, windows: list[tuple[dict[str, int], float]], *, pods: int, bare_cpu: float,
         pair_cpu: float) -> list[report.Row]:
    """The cost table. `windows`: per controller round, (requests sent, server CPU seconds) from
    apply to every pod created; `bare_cpu`/`pair_cpu`: server CPU of the bare rounds (medians)."""
    R = report.Row
    measured = statistics.median(1000 * cpu / pods for _, cpu in windows)
    modelled = statistics.median(costs.model(writes) / pods for writes, _ in windows)
    out = [
        R("API server + etcd CPU per pod, apply -> all pods created (ms; baseline: bare POSTs of the pods)",
          measured, 1000 * bare_cpu / pods, "ms"),
        R("... baseline: bare POSTs of each pod and its headless Service (ms)", measured, 1000 * pair_cpu / pods, "ms"),
    ]
    out += [R(f"API server + etcd CPU per {row} (ms, copies of the round's objects)", value, None, "ms")
            for row, value in costs.ms.items()]
    return out + [
        R("... the requests sent before the last pod, at those costs, per pod (ms; baseline: measured above)",
          modelled, measured, "ms"),
        R("best pods/s ratio those requests allow if the API server is the limit (pod create / modelled per pod)",
          costs.ms.get("pod create"), modelled, "ms"),
    ]


def window_writes(before: dict[str, int], after: dict[str, int], *, job_creates: int) -> dict[str, int]:
    """Controller requests between two child stats, plus the jobs the benchmark applied."""
    out = {k: n - before.get(k, 0) for k, n in after.items() if k in KINDS and n - before.get(k, 0)}
    out["create kubeflow.org/pytorchjobs"] = out.get("create kubeflow.org/pytorchjobs", 0) + job_creates
    return out

