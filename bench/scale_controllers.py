"""The two controllers the scale benchmark compares, each as the process a user runs.

Ours is `train-controller` exactly as shipped (the console script's code, `python -m
controller`, every kind, default workers, pods first); the upstream Go operator is
`testworld.upstream.Operator` (v1.9.4, every scheme it has, `--controller-threads` equal
to our workers, its client rate limit at the default or raised through
`--kube-api-qps`/`--kube-api-burst`). Both run under a user of their own (the audit log
counts that user's requests) and are measured the same way, from /proc: CPU seconds
(user + system, all threads) and peak RSS (`VmHWM`, the kernel's high-water mark, so no
sampling can miss a peak).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Protocol

REPO = Path(__file__).resolve().parents[1]
WORKERS = 4  # train-controller's default --workers; upstream gets as many --controller-threads


@dataclass(frozen=True)
class ProcFigures:
    cpu: float  # user + system seconds, all threads
    rss_mb: float
    peak_rss_mb: float


def proc_figures(pid: int) -> ProcFigures:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    status = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                status[key] = int(value.split()[0]) / 1024
    return ProcFigures(cpu, status.get("VmRSS", 0.0), status.get("VmHWM", 0.0))


class Controller(Protocol):
    label: str
    pid: int

    def start(self) -> object: ...

    def stop(self) -> None: ...


class Ours:
    """`train-controller --namespace NS` in its own process (a testworld ManagedProcess: it dies
    with the benchmark), ready once its workers run."""

    label = "train-controller"

    def __init__(self, kubeconfig: Path, namespace: str, *, workers: int = WORKERS,
                 ready_timeout: float = 120.0, repo: Path = REPO, label: str = "") -> None:
        """`repo`: the checkout whose controller runs (another commit's, for a before/after pair)."""
        from testworld.controlplane import ManagedProcess

        self.label = label or self.label
        self.dir = Path(tempfile.mkdtemp(prefix="trainforge-scale-ours-"))
        argv = [sys.executable, "-m", "controller", f"--kubeconfig={kubeconfig}", f"--namespace={namespace}",
                f"--workers={workers}"]
        self.process = ManagedProcess("train-controller", argv, self.dir / "controller.log", repo)
        self.ready_timeout = ready_timeout

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    def start(self) -> Ours:
        self.process.start()
        deadline = time.monotonic() + self.ready_timeout
        while b"train-controller started" not in self.process.log_path.read_bytes():
            if self.process.exited() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"train-controller did not start; log {self.process.log_path}:\n"
                                   f"{self.process.tail()}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        self.process.stop(30)
        shutil.rmtree(self.dir, ignore_errors=True)


class Upstream:
    """The upstream operator (testworld.upstream), `qps=None` for its default client rate limit."""

    def __init__(self, world: Any, kubeconfig: Path, namespace: str, *, qps: Optional[int],
                 workers: int = WORKERS) -> None:
        from testworld import upstream

        self.world, self.version = world, upstream.PRIMARY
        limit = [f"--kube-api-qps={qps}", f"--kube-api-burst={2 * qps}"] if qps else []
        self.label = f"upstream {self.version}" + (f" --kube-api-qps={qps}" if qps else " (default 20 qps)")
        self.operator = upstream.Operator(namespace, threads=workers, extra_args=limit, kubeconfig=kubeconfig)

    @property
    def pid(self) -> int:
        return self.operator.pid

    def start(self) -> Upstream:
        self.operator.start(self.world)
        return self

    def stop(self) -> None:
        self.operator.stop()


def upstream_binary() -> Path:
    """The v1.9.4 binary, built once (testworld.gobuild) if it is not cached yet."""
    from testworld import upstream

    return upstream.build(upstream.PRIMARY)
