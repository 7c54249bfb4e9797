"""`make bench-curve`: train-controller alone at growing sizes, its cost curve as jobs grow.

Each size runs in a fresh world exactly as `make bench-scale` runs ours (`scale_bench.run_in_world`:
etcd + kube-apiserver, kube-scheduler, kwok with `--nodes` nodes, PyTorchJobs of
`--pods-per-job` pods applied at once, pods that run `--run-seconds` and exit 0), smallest
first. Per size: controller CPU per 1,000 pods, peak RSS, RSS per cached pod ((peak - idle)
/ pods: the informers hold every pod of the namespace), API requests per job, and the time to
every pod created and every job Running. The baseline of each row is the smallest size of the
same run, so a ratio above 1 on CPU per 1,000 pods is a superlinear step, whatever the
machine's speed.

`--bind` names a node in every job's pod template (job i -> node i % nodes): kube-scheduler is
then not in the path. Why it exists: at 2,000 jobs x 8 pods on 2 shared cores scheduling was
the slow part (the last job Running at 1,183 s, pods all created at 295 s), and the curve is
the controller's, not the scheduler's. Both ways are documented in bench/README.md.

`--run-seconds forever` keeps every pod Running until the world stops: the last milestone is
every job Running, and kwok and the API server do a third less per pod (no exit to write and
watch). Why it exists: at 10,000 jobs x 8 pods the world (kube-apiserver, etcd, kwok) took
about five times the controller's CPU and 13.4 GB even so (bench/README.md), so the big sizes
fit the 2 cores and 24 GB only if the world does less.

Sizes the machine cannot hold are not started: before each size the world's peak memory
(VmHWM of kube-apiserver, etcd, kwok and kube-scheduler if it runs) is extrapolated to the next
size and compared with MemAvailable; a size that would not fit is reported as not run, with
both figures (`--no-memory-guard` runs it anyway). The extrapolation is the line through the
last two sizes (the world's fixed part is ~1 GB, so one size's memory per pod overstates a
size 10 times larger by about that), or one size's memory per pod when only one ran. Nothing
fails on timing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from bench import report
from bench.scale_bench import Run, ScaleWorld, ours, run_in_world, say
from bench.scale_controllers import WORKERS, proc_figures

DEFAULT_SIZES = "250,1000,2000,5000,10000"
HEADROOM = 1.25  # the next size's estimate is scaled up by this much before it is compared


def mem_available_mb() -> float:
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def world_estimate_mb(peaks: dict[int, float], pods_per_job: int, jobs: int) -> float:
    """The world's memory at `jobs` by the sizes run so far (jobs -> MB): the line through the
    two largest, or proportional to the one; never less than the largest size's own figure."""
    sizes = sorted(peaks)
    top = sizes[-1]
    if len(sizes) == 1:
        return peaks[top] / top * jobs
    low = sizes[-2]
    slope = max(0.0, (peaks[top] - peaks[low]) / ((top - low) * pods_per_job))
    return max(peaks[top], peaks[top] + slope * (jobs - top) * pods_per_job)


def run_seconds_arg(text: str) -> Optional[float]:
    """--run-seconds: a number of seconds, or "forever" (None: pods never exit)."""
    if text == "forever":
        return None
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a number of seconds, or forever") from None


def _rows(run: Run, base: Run, world_mb: float) -> list[report.Row]:
    R = report.Row
    per_k = 1000 / run.pods
    tag = f"{run.jobs:,} jobs x {run.pods // run.jobs} pods"
    rss_target = {1000: "<= 150 MB", 10000: "<= 1,024 MB"}.get(run.jobs, "")
    m, mb = run.milestones, base.milestones
    return [
        R(f"{tag}: controller CPU per 1,000 pods (s; baseline: {base.jobs:,} jobs)", run.cpu * per_k,
          base.cpu * 1000 / base.pods, "s", "flat: ~1.0x"),
        R(f"{tag}: controller peak RSS (MB)", run.peak_rss_mb, None, "MB", rss_target),
        R(f"{tag}: controller RSS per cached pod (KB; baseline: {base.jobs:,} jobs)",
          (run.peak_rss_mb - run.idle_rss_mb) * 1024 / run.pods,
          (base.peak_rss_mb - base.idle_rss_mb) * 1024 / base.pods, "KB"),
        R(f"{tag}: API requests per job (baseline: {base.jobs:,} jobs)", run.requests_per_job,
          base.requests_per_job, ""),
        R(f"{tag}: apply -> all pods created, per 1,000 pods (s; baseline: {base.jobs:,} jobs)",
          None if m.pods_created is None else m.pods_created * per_k,
          None if mb.pods_created is None else mb.pods_created * 1000 / base.pods, "s"),
        R(f"{tag}: apply -> all jobs Running (s)", m.jobs_running, None, "s"),
        R(f"{tag}: the world's peak RSS (MB: kube-apiserver, etcd, kwok, kube-scheduler if it runs)", world_mb,
          None, "MB"),
    ]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.scale_curve", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help=f"jobs per run, smallest first (default {DEFAULT_SIZES})")
    parser.add_argument("--pods-per-job", type=int, default=8, help="Master 1 + Worker n-1 (default 8)")
    parser.add_argument("--nodes", type=int, default=500, help="kwok nodes (default 500)")
    parser.add_argument("--run-seconds", type=run_seconds_arg, default=25.0,
                        help="how long every pod runs, or forever (default 25)")
    parser.add_argument("--no-memory-guard", action="store_true",
                        help="run every size, even one the world is estimated not to fit")
    parser.add_argument("--bind", action="store_true", help="bind every job's pods to a node by its template "
                        "(kube-scheduler out of the path)")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="seconds to wait for each milestone (default 300 + 0.05 per pod)")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table as markdown here")
    args = parser.parse_args(argv)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    world_peaks: dict[int, float] = {}

    def read_world(world: ScaleWorld, run: Run) -> None:
        world_peaks[run.jobs] = sum(proc_figures(pid).peak_rss_mb for pid in world.pids())

    rows: list[report.Row] = []
    placement = "pods bound by their template (no scheduler)" if args.bind else "pods scheduled by kube-scheduler"
    notes = [f"each size in a fresh world, smallest first; {placement}; baseline = the smallest size of this run"]
    base: Optional[Run] = None
    last: Optional[Run] = None
    for jobs in sizes:
        if last is not None:
            need = world_estimate_mb(world_peaks, args.pods_per_job, jobs) * HEADROOM + last.peak_rss_mb
            have = mem_available_mb()
            if need > have and not args.no_memory_guard:
                notes.append(f"{jobs:,} jobs not run: by the sizes run so far the world would need "
                             f"~{need / 1024:.1f} GB, and {have / 1024:.1f} GB is available")
                say(notes[-1])
                continue
        try:
            run = run_in_world(args, ours(), jobs, bind=args.bind, after=read_world)
        except TimeoutError:
            notes.append(f"{jobs:,} jobs: a milestone timed out (see the log above); larger sizes not run")
            break
        base = base or run
        last = run
        size_rows = _rows(run, base, world_peaks[jobs])
        rows += size_rows
        # each size's figures as soon as it is done: a run stopped during a later size keeps them
        say("; ".join(f"{row.figure} = {row.ours if row.ours is None else round(row.ours, 2)}" for row in size_rows))
        loads = " -> ".join(f"{x:.1f}" for x in run.loads)
        notes.append(f"{jobs:,} jobs: load average (1 min) at apply, each milestone, idle: {loads}; "
                     f"requests: {', '.join(f'{v} {r} {n}' for (v, r), n in run.requests.most_common(6))}")
    runs = "pods never exit" if args.run_seconds is None else f"pods run {args.run_seconds:g} s"
    machine = report.machine([f"{args.nodes} kwok nodes", f"sizes {', '.join(f'{s:,}' for s in sizes)} jobs x "
                              f"{args.pods_per_job} pods", runs, f"{WORKERS} workers",
                              "bound by template" if args.bind else "kube-scheduler"])
    report.emit("trainforge scale benchmark: the cost curve, ours alone", rows, machine_line=machine, notes=notes,
                markdown=args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
