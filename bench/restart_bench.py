"""The whole-job restart round of `make bench-controller` (issue 38 item 2).

A 64-pod PyTorchJob with `trainforge.dev/restart-scope: job` runs (every pod Running); one
pod fails (the benchmark, as the kubelet, reports its exit through pods/status). Timed from
that report until all 64 pods of the next attempt exist and run, seen on one pod watch. The
benchmark plays the kubelet for every pod the watch shows new (pods/status -> Running, a
thread pool), so both rounds pay the same kubelet. The baseline is the bare client doing the
same job by hand in the same run: delete the 64 pods (a thread pool), wait until the watch
shows all gone, create the 64 again (the same bodies), timed to the same point. The
controller's requests in the restart are counted at its client: the revision's PATCH, a
mark (PATCH) and a DELETE per pod, a POST per pod, its status writes and Events.

The control plane here has no nodes, so a deleted pod goes at once (no grace period): what
is measured is the controller's own cost against the bare client's, not a kubelet's.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

from bench import kube_tools as kt
from bench import report
from foundation.cluster import errors
from foundation.cluster.kube import PODS, Client
from schemas import marks

ATTEMPT = "train-controller.trainforge.dev/attempt"


@dataclass
class Restart:
    seconds: float  # the failed pod's report -> every pod of the next attempt Running
    to_created: float  # ... -> every pod of the next attempt created
    requests: dict[str, int]  # the controller's, in that window (empty for the bare client)


class Kubelet:
    """Runs every pod the watch shows new, on a thread pool (both rounds alike)."""

    def __init__(self, client: Client, threads: int) -> None:
        self.client = client
        self.pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kubelet")
        self.seen: set[str] = set()
        self.lock = threading.Lock()

    def keep(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The Follow's `keep`: starts each pod (by uid) once, keeps what the rounds read."""
        uid = pod["metadata"]["uid"]
        status = pod.get("status") or {}
        with self.lock:
            fresh = uid not in self.seen
            self.seen.add(uid)
        if fresh and status.get("phase") in (None, "Pending") and not pod["metadata"].get("deletionTimestamp"):
            self.pool.submit(self._run, pod)
        return {"uid": uid, "phase": status.get("phase"),
                "attempt": (pod["metadata"].get("annotations") or {}).get(ATTEMPT)}

    def _run(self, pod: dict[str, Any]) -> None:
        try:
            kt.run_pod(self.client, pod)
        except errors.NotFound:
            pass

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def whole_job(name: str, nodes: int) -> dict[str, Any]:
    body = kt.pytorch_job(name, nodes)
    body["metadata"]["annotations"] = {marks.RESTART_SCOPE: marks.RESTART_SCOPE_JOB}
    return body


def fail(client: Client, namespace: str, name: str) -> None:
    """The kubelet's report of a container that exited 1 (restartPolicy Never: the pod failed)."""
    status = {"phase": "Failed", "containerStatuses": [{
        "name": "pytorch", "image": "ghcr.io/acme/bert:1.4.2", "imageID": "", "ready": False, "restartCount": 0,
        "state": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": "2024-01-01T00:00:00Z",
                                 "finishedAt": "2024-01-01T00:00:01Z"}}}]}
    client.patch(PODS, namespace, name, {"status": status}, sub="status")


def controller_round(bench: Any, child_of: Any, *, nodes: int = 64) -> Restart:
    """One restart under the controller (`child_of(namespace)` starts it); `bench` is the Bench."""
    client, ns = bench.client, f"rst-{uuid.uuid4().hex[:6]}"
    kt.create_namespace(client, ns)
    child = child_of(ns)
    kubelet = Kubelet(client, bench.threads)
    pods = kt.Follow(client, PODS, ns, keep=kubelet.keep)
    try:
        client.create(kt.PYTORCHJOBS, ns, whole_job("big", nodes))
        pods.wait(lambda objs: len(objs) == nodes and all(p["phase"] == "Running" for p in objs.values()),
                  timeout=bench.timeout, what=f"{nodes} pods of attempt 0 running")
        child.settle()
        before = child.ask("stats")["requests"]
        t0 = time.perf_counter()
        fail(client, ns, "big-worker-0")

        def attempt(objs: dict[str, Any], phase: Optional[str]) -> bool:
            return len(objs) == nodes and all(p["attempt"] == "1" and (phase is None or p["phase"] == phase)
                                              for p in objs.values())

        t_created = pods.wait(lambda objs: attempt(objs, None), timeout=bench.timeout, what="attempt 1 created")
        t_running = pods.wait(lambda objs: attempt(objs, "Running"), timeout=bench.timeout, what="attempt 1 running")
        child.settle()
        after = child.ask("stats")["requests"]
        return Restart(t_running - t0, t_created - t0,
                       {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v - before.get(k, 0)})
    finally:
        pods.stop()
        kubelet.close()
        child.quit()


def bare_round(bench: Any, bodies: list[dict[str, Any]]) -> Restart:
    """The same restart by hand: the 64 pods deleted, gone, created again, run."""
    client, ns = bench.client, f"rsb-{uuid.uuid4().hex[:6]}"
    kt.create_namespace(client, ns)
    kubelet = Kubelet(client, bench.threads)
    pods = kt.Follow(client, PODS, ns, keep=kubelet.keep)
    copies = [kt.bare_copy(b, ns, "Pod") for b in bodies]
    try:
        kt.parallel(lambda body: client.create(PODS, ns, body, answer=False), copies, threads=bench.threads)
        pods.wait(lambda objs: len(objs) == len(copies) and all(p["phase"] == "Running" for p in objs.values()),
                  timeout=bench.timeout, what="the pods running")
        first = {p["uid"] for p in pods.objects.values()}
        t0 = time.perf_counter()
        kt.parallel(lambda body: client.delete(PODS, ns, body["metadata"]["name"]), copies, threads=bench.threads)
        pods.wait(lambda objs: not objs, timeout=bench.timeout, what="the pods gone")
        kt.parallel(lambda body: client.create(PODS, ns, body, answer=False), copies, threads=bench.threads)

        def again(objs: dict[str, Any], running: bool) -> bool:
            return len(objs) == len(copies) and all(p["uid"] not in first and (not running or p["phase"] == "Running")
                                                    for p in objs.values())

        t_created = pods.wait(lambda objs: again(objs, False), timeout=bench.timeout, what="created again")
        t_running = pods.wait(lambda objs: again(objs, True), timeout=bench.timeout, what="running again")
        return Restart(t_running - t0, t_created - t0, {})
    finally:
        pods.stop()
        kubelet.close()


def pod_bodies(client: Client, namespace: str) -> list[dict[str, Any]]:
    return client.list(PODS, namespace=namespace)["items"]


def rows(ours: list[Restart], bare: list[Restart], *, nodes: int) -> list[report.Row]:
    from statistics import median

    R = report.Row
    last = ours[-1].requests
    per_pod = sum(v for k, v in last.items() if k.split()[0] in ("create", "delete", "patch", "update")) / nodes
    return [
        R(f"whole-job restart of a {nodes}-pod job: one pod's exit -> all {nodes} new pods Running (s; baseline: "
          "the bare client deleting them, waiting, creating them)", median(r.seconds for r in ours),
          median(r.seconds for r in bare), "s", "<= 1.5x"),
        R("... -> all new pods created (s)", median(r.to_created for r in ours), median(r.to_created for r in bare),
          "s"),
        R("write requests per pod in the restart, the controller's client (baseline: a DELETE and a POST)",
          per_pod, 2.0, ""),
    ]


def requests_note(ours: list[Restart]) -> str:
    return f"whole-job restart, the controller's requests in the last round: {ours[-1].requests}"


def main_rounds(bench: Any, child_of: Any, *, repeat: int, nodes: int = 64) -> tuple[list[Restart], list[Restart]]:
    """Interleaved controller and bare rounds; the bare client POSTs the pods a controller round made."""
    ours: list[Restart] = []
    bare: list[Restart] = []
    bodies = [kt.bare_copy(p, "x", "Pod") for p in _sample_pods(bench, child_of, nodes)]
    for i in range(repeat):
        ours.append(controller_round(bench, child_of, nodes=nodes))
        bare.append(bare_round(bench, bodies))
        print(f"controller bench: restart round {i + 1}/{repeat}: controller {ours[-1].seconds:.3f} s, "
              f"bare client {bare[-1].seconds:.3f} s", flush=True, file=sys.stderr)
    return ours, bare


def _sample_pods(bench: Any, child_of: Any, nodes: int) -> list[dict[str, Any]]:
    """The pods the controller makes for the job (a round of its own, not timed): the bare
    client's bodies are those, so both sides create the same objects."""
    client, ns = bench.client, f"rss-{uuid.uuid4().hex[:6]}"
    kt.create_namespace(client, ns)
    child = child_of(ns)
    try:
        client.create(kt.PYTORCHJOBS, ns, whole_job("big", nodes))
        deadline = time.monotonic() + bench.timeout
        while len(found := pod_bodies(client, ns)) < nodes:
            if time.monotonic() > deadline:
                raise TimeoutError("the sample pods were not created")
            time.sleep(0.2)
        return found
    finally:
        child.quit()
