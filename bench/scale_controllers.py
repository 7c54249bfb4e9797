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
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Protocol

from controller.kube import Client

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
    """`train-controller --namespace NS` in its own process, ready once its workers run."""

    label = "train-controller"

    def __init__(self, kubeconfig: Path, namespace: str, *, workers: int = WORKERS,
                 ready_timeout: float = 120.0) -> None:
        self.kubeconfig, self.namespace, self.workers = kubeconfig, namespace, workers
        self.ready_timeout = ready_timeout
        self.log = Path(tempfile.mkdtemp(prefix="trainforge-scale-ours-")) / "controller.log"
        self.proc: Optional[subprocess.Popen[bytes]] = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> Ours:
        argv = [sys.executable, "-m", "controller", f"--kubeconfig={self.kubeconfig}",
                f"--namespace={self.namespace}", f"--workers={self.workers}"]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + self.ready_timeout
        while b"train-controller started" not in self.log.read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"train-controller did not start; log {self.log}:\n"
                                   f"{self.log.read_bytes()[-2000:].decode(errors='replace')}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Upstream:
    """The upstream operator (testworld.upstream), `qps=None` for its default client rate limit."""

    def __init__(self, kubeconfig: Path, client: Client, namespace: str, *, qps: Optional[int],
                 workers: int = WORKERS) -> None:
        from testworld import upstream

        self.version = upstream.PRIMARY
        limit = [f"--kube-api-qps={qps}", f"--kube-api-burst={2 * qps}"] if qps else []
        self.label = f"upstream {self.version}" + (f" --kube-api-qps={qps}" if qps else " (default 20 qps)")
        self.operator = upstream.Operator(kubeconfig, client, namespace, threads=workers, extra_args=limit)

    @property
    def pid(self) -> int:
        return self.operator.pid

    def start(self) -> Upstream:
        self.operator.start()
        return self

    def stop(self) -> None:
        self.operator.stop()


def upstream_binary() -> Path:
    """The v1.9.4 binary, built once (testworld.upstream) if it is not cached yet."""
    from testworld import upstream

    return upstream.build(upstream.PRIMARY)
