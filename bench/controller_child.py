"""The controller under benchmark, in its own process, answering the benchmark on stdin.

`python -m bench.controller_child KUBECONFIG NAMESPACE WORKERS [upstream-order]` builds the same
`Manager` as `train-controller` (every kind enabled, one client, the same pool sizing),
limited to one namespace so rounds do not see each other. Its own process so CPU and
RSS are the controller's alone; its connections are opened before it answers `ready`
(`warm`), as a running controller's are. Commands, one per line, each answered with one JSON
line: `stats` (reconciles, request counts by verb and resource, CPU, RSS, queue),
`resync` (queue every cached job again, as a periodic resync would: a settled job must
cost zero writes) and `quit`. `TRAINFORGE_BENCH_EXPERIMENTS` turns on what-if ceilings
(see `experiment`); the default is the controller exactly as shipped.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from controller.jobs.kinds import select
from controller.manager import Manager, connection_pool_size
from foundation.cluster.kube import PODS, WRITE_VERBS, Client


def _status_mb(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


class Probe:
    """Counts reconciles in flight and the CPU time of the reconcile calls themselves."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.busy = 0
        self.reconcile_cpu = 0.0
        self._lock = threading.Lock()
        inner = manager.process

        def process(key: str) -> None:
            with self._lock:
                self.busy += 1
            start = time.thread_time()
            try:
                inner(key)
            finally:
                spent = time.thread_time() - start
                with self._lock:
                    self.busy -= 1
                    self.reconcile_cpu += spent

        manager.process = process  # type: ignore[method-assign]

    def stats(self) -> dict[str, Any]:
        mgr = self.manager
        counts = mgr.client.snapshot()
        times = os.times()
        return {
            "reconciles": mgr.reconciles,
            "errors": mgr.errors,
            "writes": sum(n for (verb, _), n in counts.items() if verb in WRITE_VERBS),
            "requests": {f"{verb} {res}": n for (verb, res), n in sorted(counts.items())},
            "cpu": times.user + times.system,
            "reconcile_cpu": self.reconcile_cpu,
            "rss_mb": _status_mb("VmRSS"),
            "peak_rss_mb": _status_mb("VmHWM"),
            "queued": len(mgr.queue) + mgr.queue.pending_delayed() + mgr.recorder.pending()  # Events: sent async
            + (mgr.held.pending() if mgr.held else 0),  # --pods-first: Services and status writes held
            "queued_parts": {"ready": len(mgr.queue), "delayed": mgr.queue.pending_delayed(),
                             "events": mgr.recorder.pending()},
            "events_dropped": mgr.recorder.overflowed,
            "busy": self.busy,
            "threads": threading.active_count(),
        }

    def resync(self) -> int:
        keys = 0
        for kind, informer in self.manager.job_informers.items():
            for obj in informer.items():
                meta = obj["metadata"]
                self.manager.queue.add(f"{kind}/{meta.get('namespace', '')}/{meta['name']}")
                keys += 1
        return keys


def experiment(manager: Manager, names: set[str]) -> None:
    """What-if ceilings, patched in here only: they drop work the controller must do, to
    measure what that work costs. Never behaviour to ship.

    `no-events`: Events are not recorded at all. `no-services`: the headless Services
    are not created. Both together leave a pass with its pod creates and status write:
    how close the controller can come to the bare client on this API server.
    """
    if "no-events" in names:
        manager.recorder.event = lambda *args, **kwargs: True  # type: ignore[method-assign]
    if "no-services" in names:
        writes = manager.reconciler.writes
        create_child = writes.create

        def create(ctx: Any, res: Any, obj: dict[str, Any], **kwargs: Any) -> str:
            return create_child(ctx, res, obj, **kwargs) if res.plural != "services" else "created"

        writes.create = create  # type: ignore[method-assign]


def warm(manager: Manager, pool_size: int) -> None:
    """Open, before any clock starts, the connections a burst will use: a controller that has been
    running has them open already, and so has the benchmark's bare client from its earlier
    requests. Cold, every round paid ~25 TLS handshakes (both sides' CPU) inside its burst."""
    connections = pool_size - len(manager.informers())  # the watches hold theirs already
    together = threading.Barrier(connections)

    def one(_: int) -> None:
        together.wait()  # all at once, so each opens a connection of its own
        manager.client.list(PODS, namespace=manager.namespace, limit=1)

    with ThreadPoolExecutor(max_workers=connections) as pool:
        list(pool.map(one, range(connections)))


def main(argv: list[str]) -> int:
    kubeconfig, namespace, workers = argv[0], argv[1], int(argv[2])
    pods_first = argv[3:] != ["upstream-order"]  # train-controller's default; upstream-order: --no-pods-first
    kinds = select("")
    pool_size = connection_pool_size(workers=workers, kinds=len(kinds), pods_first=pods_first)  # as the CLI
    client = Client.connect(kubeconfig, pool_size=pool_size)
    manager = Manager(client, kinds, namespace=namespace, workers=workers, pods_first=pods_first)
    probe = Probe(manager)
    experiment(manager, set(filter(None, os.environ.get("TRAINFORGE_BENCH_EXPERIMENTS", "").split(","))))
    manager.start()
    warm(manager, pool_size)
    print(json.dumps({"ready": True, **probe.stats()}), flush=True)
    try:
        for line in sys.stdin:
            command = line.strip()
            if command == "stats":
                print(json.dumps(probe.stats()), flush=True)
            elif command == "resync":
                print(json.dumps({"queued_keys": probe.resync()}), flush=True)
            elif command == "quit":
                break
    finally:
        manager.stop()
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
