"""Measuring one command: a fresh process to its end, its wall and CPU time and peak RSS.

The benchmarks' figures come from the kernel's accounting of each child (`wait4`), so what
a command costs is measured outside it, whatever it does at exit (train-compile leaves
through `os._exit`). Repeats are summarised by their median and their spread, which the
guard (bench/baseline.py, through compiler_bench.guarded) reads as the noise of a figure.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class Run:
    wall: float  # seconds
    cpu: float  # user + system seconds of the child
    rss_mb: float  # peak resident set of the child
    spread: float = 0.0  # (max - min) / median of the CPU seconds of the repeats this is the median of


def run(argv: list[str], *, stdout: Optional[Path] = None, cpu: Optional[int] = None,
        env: Optional[dict[str, str]] = None) -> Run:
    """Run one command to the end; raise with its stderr if it fails."""
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    err = tempfile.TemporaryFile()
    pin = (lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, preexec_fn=pin, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stdout:
            out.close()  # type: ignore[union-attr]
    if proc.returncode != 0:
        err.seek(0)
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def median(runs: list[Run]) -> Run:
    cpu = statistics.median(r.cpu for r in runs)
    return Run(
        statistics.median(r.wall for r in runs),
        cpu,
        max(r.rss_mb for r in runs),
        (max(r.cpu for r in runs) - min(r.cpu for r in runs)) / cpu if cpu else 0.0,
    )


def spread(*runs: Optional[Run]) -> float:
    """The relative spread of a ratio of medians: its two sides' spreads added."""
    return sum(r.spread for r in runs if r is not None)


def count_instructions(argv: list[str], valgrind: str) -> int:
    """Instructions `argv` executes to its end, as callgrind counts them (~50x slower than
    the program alone). A program that leaves through `os._exit` is counted too."""
    done = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"valgrind {' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    for line in done.stderr.splitlines():
        if "Collected :" in line:
            return int(line.rsplit(":", 1)[1].replace(",", ""))
    raise RuntimeError(f"callgrind printed no count: {done.stderr[-2000:]}")


def cold_start(argv: list[str], *, times: int, cpu: Optional[int]) -> float:
    return statistics.median(run(argv, cpu=cpu).wall for _ in range(times))
