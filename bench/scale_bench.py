"""`make bench-scale`: both controllers on a real pod lifecycle, 1,000 jobs x 8 pods at once.

Each run gets a fresh test world (`testworld.World`: etcd + kube-apiserver, kube-scheduler
and kwok with `--nodes` fake nodes whose pods run for `--run-seconds` and exit 0), one
controller under a user of its own, and `--jobs` PyTorchJobs (Master x1 + Worker x7)
applied at once by 16 client threads. Timed from the first create to: every pod created,
every job Running, every job Succeeded (`bench.scale_lifecycle`). Then, once the
controller has sent no request for 5 s: its API requests per job (the audit log, by its user:
`bench.audit_count`), its CPU seconds per 1,000 pods and its peak RSS (/proc), and the
API server's + etcd's CPU per 1,000 pods.

Runs, one after the other, each in its own world: ours (`train-controller` as shipped);
the upstream operator v1.9.4 with `--controller-threads` equal to our workers and its
client rate limit raised (`--kube-api-qps`, default 5,000); and, because at its default
of 20 requests/s a 1,000-job run would take ~30 min, the upstream operator at that default
together with ours again at `--default-limit-jobs` (100). Wall-clock ratios against the
default limit measure that limit; CPU per pod and requests per job are the comparison no
setting moves. Ours alone at growing sizes is `bench.scale_curve` (`make bench-curve`).
Nothing fails on timing; the table is printed (and written with
--markdown).
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from bench import audit_count, baseline, report, server_cost, stacks
from bench import kube_tools as kt
from bench.scale_controllers import (
    WORKERS,
    Controller,
    Ours,
    Upstream,
    proc_figures,
    upstream_binary,
)
from bench.scale_lifecycle import Lifecycle, Milestones, pytorch_job
from controller.runtime.event_correlator import split_combined
from foundation.cluster.kube import EVENTS, Client
from testworld.settle import Unsettled, until_quiet

REPO = Path(__file__).resolve().parents[1]
USER = "trainforge-bench-controller"  # the controller's identity, the audit log's filter
THREADS = 16
NODE_PREFIX = "scale"  # the kwok nodes are scale-0 ... scale-{nodes - 1}


def say(text: str) -> None:
    print(f"scale bench: {text}", file=sys.stderr, flush=True)


def load() -> float:
    return os.getloadavg()[0]


@dataclass
class Run:
    """One controller's figures in one world."""

    label: str
    jobs: int
    pods: int
    milestones: Milestones
    cpu: float  # controller CPU seconds, apply -> its last request after every job Succeeded
    peak_rss_mb: float
    idle_rss_mb: float
    requests: Counter[tuple[str, str]]
    server_cpu: Optional[float]  # kube-apiserver + etcd, same window
    loads: list[float] = field(default_factory=list)  # 1-min load average at apply, each milestone, the end
    events: Counter[str] = field(default_factory=Counter)  # Events on the jobs by reason, repeats included
    event_objects: Counter[str] = field(default_factory=Counter)  # Event objects by reason (one POST each)
    distinct: tuple[int, int] = (0, 0)  # distinct pod/Service-create and Succeeded Events found, expected

    @property
    def distinct_per_job(self) -> float:
        return self.distinct[0] / self.jobs

    @property
    def expected_per_job(self) -> float:
        return self.distinct[1] / self.jobs

    @property
    def event_writes_per_job(self) -> float:
        return sum(n for (_, res), n in self.requests.items() if res in ("events", "events.k8s.io/events")) / self.jobs

    @property
    def writes_per_job(self) -> float:
        return audit_count.writes(self.requests) / self.jobs

    @property
    def status_writes_per_job(self) -> float:
        return sum(n for (verb, res), n in self.requests.items()
                   if res.endswith("/status") and verb in ("update", "patch")) / self.jobs

    @property
    def shown_running_share(self) -> float:
        """Of the jobs, those seen Running before Succeeded (a state the user saw)."""
        return self.milestones.shown_running / self.jobs

    def report_lag(self, quantile: float) -> Optional[float]:
        """Seconds from a job's Master pod Succeeded to the job Succeeded, at `quantile` of the jobs."""
        lags = sorted(self.milestones.report_lags)
        return lags[min(len(lags) - 1, int(quantile * len(lags)))] if lags else None

    @property
    def requests_per_job(self) -> float:
        return sum(self.requests.values()) / self.jobs

    def summary(self) -> dict[str, Any]:
        m = self.milestones
        return {"label": self.label, "jobs": self.jobs, "pods": self.pods, "to_pods": m.pods_created,
                "to_running": m.jobs_running, "to_succeeded": m.jobs_succeeded, "cpu": round(self.cpu, 2),
                "peak_rss_mb": round(self.peak_rss_mb, 1), "requests_per_job": round(self.requests_per_job, 2),
                "writes_per_job": round(self.writes_per_job, 2), "server_cpu": self.server_cpu,
                "loads": [round(x, 1) for x in self.loads]}


def job_events(client: Client, namespace: str) -> tuple[Counter[str], Counter[str]]:
    """Events recorded on the namespace's jobs by reason: an aggregated Event by its count (what
    a user's `kubectl describe` shows; a recorder that drops Events under load shows less), and
    the Event objects (one POST each: which reasons the Event writes went to)."""
    repeats: Counter[str] = Counter()
    objects: Counter[str] = Counter()
    for event in client.list(EVENTS, namespace=namespace)["items"]:
        if (event.get("involvedObject") or {}).get("kind") == "PyTorchJob":
            repeats[event.get("reason", "")] += int(event.get("count") or 1)
            objects[event.get("reason", "")] += 1
    return repeats, objects


def distinct_events(client: Client, namespace: str, jobs: int, pods_per_job: int) -> tuple[int, int]:
    """(found, expected) distinct Events a user's `kubectl describe` of each job should show: one
    "Created pod: <pod>" and one "Created service: <pod>" per pod, as both controllers word them,
    and one {Kind}Succeeded per job; a combined Event counts for every message it lists.
    ExitedWithCode is left out: how many exits a pass sees differs between the two (bench/README.md)."""
    found: set[tuple[str, str, str]] = set()
    for event in client.list(EVENTS, namespace=namespace)["items"]:
        ref = event.get("involvedObject") or {}
        if ref.get("kind") != "PyTorchJob":
            continue
        reason = event.get("reason", "")
        if reason == "PyTorchJobSucceeded":
            found.add((ref.get("name", ""), reason, ""))
        else:
            found.update((ref.get("name", ""), reason, m) for m in split_combined(event.get("message") or ""))
    expected: set[tuple[str, str, str]] = set()
    for i in range(jobs):
        job = f"job-{i:05d}"
        pods = [f"{job}-master-0"] + [f"{job}-worker-{k}" for k in range(pods_per_job - 1)]
        expected.update((job, "SuccessfulCreatePod", f"Created pod: {p}") for p in pods)
        expected.update((job, "SuccessfulCreateService", f"Created service: {p}") for p in pods)
        expected.add((job, "PyTorchJobSucceeded", ""))
    return len(found & expected), len(expected)


QUIET = 5.0  # s without a request from the controller that end a run (`_idle`)


def _idle(logs: Callable[[], list[Path]], *, quiet: float = QUIET, timeout: float = 60.0) -> float:
    """Until the controller sent no request for `quiet` s (its audit log, which holds only its
    requests, stopped growing); the seconds waited.

    Why requests, not CPU: upstream's process stays above 1% of a core for over a minute after
    its last request at 1,000 jobs, and waiting that out cost `make bench-scale` ~2 min of its
    20 (2026-11-27). `quiet` is the longest a train-controller write is held (a pod burst's 5 s)."""
    started = time.monotonic()
    try:
        until_quiet(lambda: sum(path.stat().st_size for path in logs()), quiet=quiet, timeout=timeout,
                    poll=min(quiet / 4, 0.5), what="the controller's audit log")
    except Unsettled:  # a run that never goes quiet is measured as far as it got
        pass
    return time.monotonic() - started


def _profiler(pid: int, out: Optional[Path]) -> Optional[subprocess.Popen[bytes]]:
    """py-spy recording `pid` into `out` until it exits: collapsed stacks of the thread holding
    the GIL, i.e. where its CPU goes."""
    if out is None:
        return None
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([spy, "record", "-p", str(pid), "-r", "50", "--format", "raw", "--gil", "--nonblocking",
                             "-o", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def measure(world: Any, make: Callable[[Any, Path, str], Controller], *, jobs: int, pods_per_job: int,
            run_seconds: Optional[float], timeout: float, profile: Optional[Path] = None, bind: int = 0) -> Run:
    """One controller in `world`: start it, apply the jobs, time the lifecycle, read its figures.
    With `bind` (the world's node count), job i's pods name node i % bind in their template;
    `run_seconds` None: the pods never exit, and the last milestone is every job Running."""
    client = Client.connect(str(world.kubeconfig), pool_size=THREADS + 8)
    namespace = f"scale-{uuid.uuid4().hex[:6]}"
    kt.create_namespace(client, namespace)
    kubeconfig = world.plane.add_user(USER, ["system:masters"])
    controller = make(world.world, kubeconfig, namespace)
    say(f"{controller.label}: starting")
    controller.start()
    spy = _profiler(controller.pid, profile if isinstance(controller, Ours) else None)
    total = jobs * pods_per_job
    life = Lifecycle(client, namespace, jobs=jobs, pods=total)
    server = world.server_cpu
    try:
        idle = proc_figures(controller.pid)
        bodies = [pytorch_job(f"job-{i:05d}", pods_per_job, run_seconds,
                              node=f"{NODE_PREFIX}-{i % bind}" if bind else None) for i in range(jobs)]
        since = datetime.datetime.now(datetime.timezone.utc)  # the server's clock is this machine's
        loads, cpu0, server0 = [load()], idle.cpu, server()
        say(f"{controller.label}: applying {jobs} jobs x {pods_per_job} pods (load {loads[0]:.1f})")
        life.start_clock()
        kt.parallel(lambda body: client.create(kt.PYTORCHJOBS, namespace, body, answer=False), bodies,
                    threads=THREADS)
        waits = [(life.wait_pods, "pods created"), (life.wait_running, "jobs Running")]
        if run_seconds is not None:
            waits.append((life.wait_succeeded, "jobs Succeeded"))
        for wait, what in waits:
            try:
                seconds = wait(timeout)
            except TimeoutError:
                say(f"{controller.label}: timed out; {life.counts()}")
                raise
            loads.append(load())
            say(f"{controller.label}: all {what} at {seconds:.1f} s (load {loads[-1]:.1f}; {life.counts()})")
        say(f"{controller.label}: no request for {QUIET:.0f} s after {_idle(world.audit_logs):.0f} s")
        end = proc_figures(controller.pid)
        server1 = server()
        loads.append(load())
        requests = audit_count.count(world.audit_logs(), USER, since=since)
        return Run(controller.label, jobs, total, life.milestones(), end.cpu - cpu0, end.peak_rss_mb, idle.rss_mb,
                   requests, None if server0 is None else server1 - server0, loads, *job_events(client, namespace),
                   distinct_events(client, namespace, jobs, pods_per_job))
    finally:
        life.stop()
        controller.stop()
        client.close()
        if spy is not None:
            spy.wait(timeout=60)  # it writes its file once the controller is gone


def _ratio_rows(ours: Run, base: Run, tag: str) -> list[report.Row]:
    """ours / base for every figure, `tag` naming the baseline and the size."""
    R = report.Row
    mo, mb = ours.milestones, base.milestones
    per_k = 1000 / ours.pods
    rows = [
        R(f"apply -> all {ours.pods:,} pods created (s; {tag})", mo.pods_created, mb.pods_created, "s"),
        R(f"apply -> all {ours.jobs:,} jobs Running (s; {tag})", mo.jobs_running, mb.jobs_running, "s"),
        R(f"apply -> all {ours.jobs:,} jobs Succeeded (s; {tag})", mo.jobs_succeeded, mb.jobs_succeeded, "s"),
        R(f"API requests per job, audit log (all verbs; {tag})", ours.requests_per_job, base.requests_per_job, "",
          "<= 1.0x"),
        R(f"... of which writes per job ({tag})", ours.writes_per_job, base.writes_per_job, ""),
        R(f"... of which Event writes per job ({tag})", ours.event_writes_per_job, base.event_writes_per_job, ""),
        R(f"API requests per job other than Events ({tag})", ours.requests_per_job - ours.event_writes_per_job,
          base.requests_per_job - base.event_writes_per_job, ""),
        R(f"... of which job status writes per job ({tag})", ours.status_writes_per_job, base.status_writes_per_job, ""),
        R(f"share of jobs seen Running before Succeeded ({tag})", ours.shown_running_share,
          base.shown_running_share, ""),
        R(f"Master pod Succeeded -> job Succeeded, median of the jobs (s; {tag})", ours.report_lag(0.5),
          base.report_lag(0.5), "s"),
        R(f"Master pod Succeeded -> job Succeeded, 90th percentile (s; {tag})", ours.report_lag(0.9),
          base.report_lag(0.9), "s"),
        R(f"distinct Events recorded per job, of {ours.expected_per_job:g} expected (pod/Service creates, "
          f"Succeeded; {tag})", ours.distinct_per_job, base.distinct_per_job, "", f"= {ours.expected_per_job:g}"),
        R(f"controller CPU per 1,000 pods (s; {tag})", ours.cpu * per_k, base.cpu * 1000 / base.pods, "s",
          "<= 1.0x"),
        R(f"controller peak RSS (MB; {tag})", ours.peak_rss_mb, base.peak_rss_mb, "MB",
          "<= 150 MB" if ours.jobs == 1000 and ours.pods == 8000 else ""),
    ]
    if ours.server_cpu is not None and base.server_cpu is not None:
        rows.append(R(f"kube-apiserver + etcd CPU per 1,000 pods (s; {tag})", ours.server_cpu * per_k,
                      base.server_cpu * 1000 / base.pods, "s"))
    return rows


def _alone_rows(run: Run) -> list[report.Row]:
    R = report.Row
    m = run.milestones
    rows = [
        R(f"{run.jobs:,} jobs: apply -> all {run.pods:,} pods created (s)", m.pods_created, None, "s"),
        R(f"{run.jobs:,} jobs: apply -> all jobs Running (s)", m.jobs_running, None, "s"),
        R(f"{run.jobs:,} jobs: apply -> all jobs Succeeded (s)", m.jobs_succeeded, None, "s"),
        R(f"{run.jobs:,} jobs: API requests per job (writes {run.writes_per_job:.1f})", run.requests_per_job, None, ""),
        R(f"{run.jobs:,} jobs: Event writes per job", run.event_writes_per_job, None, ""),
        R(f"{run.jobs:,} jobs: distinct Events recorded per job, of {run.expected_per_job:g} expected",
          run.distinct_per_job, None, "", f"= {run.expected_per_job:g}"),
        R(f"{run.jobs:,} jobs: controller CPU per 1,000 pods (s)", run.cpu * 1000 / run.pods, None, "s"),
        R(f"{run.jobs:,} jobs: controller peak RSS (MB)", run.peak_rss_mb, None, "MB"),
    ]
    if run.server_cpu is not None:
        rows.append(R(f"{run.jobs:,} jobs: kube-apiserver + etcd CPU per 1,000 pods (s)",
                      run.server_cpu * 1000 / run.pods, None, "s"))
    return rows


def _notes(runs: list[Run]) -> list[str]:
    notes = ["ratio = ours / baseline; each run in a fresh world, one after the other; times from the first "
             f"create; CPU and requests from the first create until the controller sent no request for {QUIET:.0f} s "
             "after the last job Succeeded"]
    for r in runs:
        loads = " -> ".join(f"{x:.1f}" for x in r.loads)
        top = ", ".join(f"{verb} {res} {n}" for (verb, res), n in r.requests.most_common(8))
        notes.append(f"{r.label}, {r.jobs:,} jobs: load average (1 min) at apply, each milestone, idle: {loads}; "
                     f"idle RSS {r.idle_rss_mb:.0f} MB; requests: {top}; Events on the jobs by reason (repeats "
                     f"counted): {dict(r.events.most_common())}; Event objects (POSTs) by reason: "
                     f"{dict(r.event_objects.most_common())}")
    return notes


class ScaleWorld:
    """A `testworld.World` for the run: kube-scheduler (not with `scheduler=False`, for pods bound by
    their template), kwok with `nodes` nodes, an audit log of
    USER's requests only. The scheduler's and kwok's clients are made quiet and fast, the same
    for both controllers: kube-scheduler's default client limit (50 requests/s) would bind
    8,000 pods in 160 s whatever the controller did, and kwok's node leases (renewed every 10 s
    by default) would be 50 writes/s on the server with 500 nodes; nothing here reads them."""

    def __init__(self, nodes: int, *, scheduler: bool = True) -> None:
        from testworld.controlplane import ControlPlane
        from testworld.kwok import Kwok, NodePool
        from testworld.scheduler import Scheduler
        from testworld.world import World

        class QuickScheduler(Scheduler):
            def argv(self, world: Any) -> list[str]:  # flags of kube-scheduler, honoured without --config
                return super().argv(world) + ["--kube-api-qps=5000", "--kube-api-burst=10000"]

        class QuietKwok(Kwok):
            def argv(self, world: Any) -> list[str]:
                return super().argv(world) + ["--node-lease-duration-seconds=0"]  # no leases at all

        self.policy_dir = Path(tempfile.mkdtemp(prefix="trainforge-scale-"))
        policy = self.policy_dir / "audit-policy.yaml"
        policy.write_text(audit_count.policy(USER))
        # the later --audit-policy-file wins over the plane's own; 200 MB per file, as the plane's
        plane = ControlPlane(use_existing=False, extra_apiserver_args=[f"--audit-policy-file={policy}"])
        pool = NodePool(NODE_PREFIX, nodes, cpu="32", memory="256Gi", pods="250")
        # without a scheduler (pods bound by their template) the world is cheaper by one more watch of every pod
        parts = [QuickScheduler()] if scheduler else []
        # no testworld.kubelet (no pull failures, lookups or logs): kwok starts each pod as it sees it
        self.world = World([*parts, QuietKwok(nodes=(pool,), bad_images=None, config_refs=False, logs=False)],
                           plane=plane)
        self.cpu: Optional[server_cost.ServerCPU] = None

    def __enter__(self) -> ScaleWorld:
        self.world.start()
        self.cpu = server_cost.ServerCPU.of(self.world.plane)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.world.stop()
        finally:
            shutil.rmtree(self.policy_dir, ignore_errors=True)

    @property
    def plane(self) -> Any:
        return self.world.plane

    @property
    def kubeconfig(self) -> Path:
        return self.world.kubeconfig

    def server_cpu(self) -> Optional[float]:
        return self.cpu.seconds() if self.cpu else None

    def pids(self) -> list[int]:
        """The world's processes: kube-apiserver, etcd, kube-scheduler, kwok."""
        parts = [getattr(part, "proc", None) for part in self.world.parts.values()]
        return [*(self.cpu.pids if self.cpu else []), *(p.pid for p in parts if p is not None and p.pid)]

    def audit_logs(self) -> list[Path]:
        return sorted(self.world.dir.glob("audit*.log"))  # the log and what it rotated into


def run_in_world(args: argparse.Namespace, make: Callable[[Any, Path, str], Controller], jobs: int, *,
                 bind: bool = False, after: Optional[Callable[[ScaleWorld, Run], None]] = None,
                 tag: str = "") -> Run:
    """`make`'s controller at `jobs` jobs in a world of its own (`bind`: pods bound by their template,
    `measure`); `after(world, run)` reads the world before it stops."""
    started = time.monotonic()
    with ScaleWorld(args.nodes, scheduler=not bind) as world:
        say(f"world with {args.nodes} nodes ready in {time.monotonic() - started:.0f} s")
        timeout = args.timeout or 300 + jobs * args.pods_per_job / 20
        spy_dir = getattr(args, "py_spy", None)  # only make bench-scale has --py-spy
        profile = spy_dir / f"train-controller{tag}-{jobs}-jobs.txt" if spy_dir else None
        run = measure(world, make, jobs=jobs, pods_per_job=args.pods_per_job, run_seconds=args.run_seconds,
                      timeout=timeout, profile=profile, bind=args.nodes if bind else 0)
        if after is not None:
            after(world, run)
    say(f"{run.summary()}")
    return run


def ours(repo: Optional[Path] = None, label: str = "") -> Callable[[Any, Path, str], Controller]:
    """train-controller from this checkout, or from `repo` (another commit's checkout)."""
    if repo is None:
        return lambda world, kubeconfig, namespace: Ours(kubeconfig, namespace)
    return lambda world, kubeconfig, namespace: Ours(kubeconfig, namespace, repo=repo, label=label)


GUARDED = (  # (key, what the row's figure says, lower is better): the ratios `bench.baseline` keeps
    ("pods-created", "pods created", True),
    ("jobs-running", "jobs Running", True),
    ("jobs-succeeded", "jobs Succeeded", True),
    ("requests", "API requests per job, audit log", True),
    ("requests-not-events", "API requests per job other than Events", True),
    ("distinct-events", "distinct Events recorded per job", False),
    ("cpu-per-pod", "controller CPU per 1,000 pods", True),
    ("peak-rss", "controller peak RSS", True),
    ("server-cpu-per-pod", "kube-apiserver + etcd CPU per 1,000 pods", True),
)


def guarded(run: Run, rows: list[report.Row]) -> list[baseline.Guarded]:
    """The ratios of one pair's rows that the record keeps, keyed by the run's size."""
    out = []
    for key, says, lower in GUARDED:
        row = next((r for r in rows if says in r.figure and r.ratio is not None), None)
        if row is not None and row.ratio is not None:
            out.append(baseline.Guarded(f"{run.jobs}x{run.pods // run.jobs}:{key}", row.figure.split(" (")[0],
                                        row.ratio, lower))
    return out


def upstream(qps: Optional[int]) -> Callable[[Any, Path, str], Controller]:
    return lambda world, kubeconfig, namespace: Upstream(world, kubeconfig, namespace, qps=qps)


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.scale_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="PyTorchJobs applied at once (default 1,000)")
    parser.add_argument("--pods-per-job", type=int, default=8, help="Master 1 + Worker n-1 (default 8)")
    parser.add_argument("--nodes", type=int, default=500, help="kwok nodes (default 500)")
    parser.add_argument("--run-seconds", type=float, default=25.0, help="how long every pod runs (default 25)")
    parser.add_argument("--upstream", choices=("build", "no"), default="build",
                        help="the upstream operator v1.9.4 as the baseline: build = go install it first if needed "
                        "(~1-5 min once), no = ours alone")
    parser.add_argument("--upstream-qps", type=int, default=5000,
                        help="--kube-api-qps for the raised-limit run (burst twice that; default 5,000)")
    parser.add_argument("--default-limit-jobs", type=int, default=100,
                        help="jobs for the pair at upstream's default 20 qps (ours too, same size; 0: skip; "
                        "1,000 jobs would take it ~30 min)")
    parser.add_argument("--timeout", type=float, default=0.0,
                        help="seconds to wait for each milestone (default 300 + 0.05 per pod)")
    parser.add_argument("--py-spy", type=Path, default=None, metavar="DIR",
                        help="record train-controller with py-spy (collapsed stacks) into DIR; py-spy from PyPI")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table as markdown here")
    parser.add_argument("--also", type=Path, default=None, metavar="CHECKOUT",
                        help="also run train-controller from this checkout (e.g. `git worktree add` of the commit "
                        "before a change), against the same upstream run: a before/after pair in one run")
    parser.add_argument("--record", action="store_true",
                        help="write this run's ratios as the project's recorded figures (bench/recorded/scale.json)")
    args = parser.parse_args(argv)

    began = time.time()
    binary = upstream_binary() if args.upstream == "build" else None
    machine = report.machine([f"{args.nodes} kwok nodes", f"{args.jobs:,} PyTorchJobs x {args.pods_per_job} pods",
                              f"pods run {args.run_seconds:g} s", f"{WORKERS} workers / --controller-threads"])
    runs: list[Run] = []
    rows: list[report.Row] = []
    mine = run_in_world(args, ours(), args.jobs)
    runs.append(mine)
    also = None
    if args.also is not None:
        label = f"train-controller at {baseline.commit(args.also)}"
        also = run_in_world(args, ours(args.also.resolve(), label), args.jobs, tag="-also")
        runs.append(also)
    guard: list[baseline.Guarded] = []
    if binary is not None:
        raised = run_in_world(args, upstream(args.upstream_qps), args.jobs)
        runs.append(raised)
        mine_rows = _ratio_rows(mine, raised, f"baseline: upstream {raised.label.split(' ', 1)[1]}")
        rows += mine_rows
        guard = guarded(mine, mine_rows)
        if also is not None:
            rows += _ratio_rows(also, raised, f"{also.label}; baseline: the same upstream run")
    if also is not None:  # the change's before and after, a pair in one run
        rows += _ratio_rows(mine, also, f"this checkout; baseline: {also.label}")
    if binary is not None:
        if args.default_limit_jobs:
            small = run_in_world(args, ours(), args.default_limit_jobs)
            limited = run_in_world(args, upstream(None), args.default_limit_jobs)
            runs += [small, limited]
            rows += _ratio_rows(small, limited, f"{args.default_limit_jobs:,} jobs; baseline: upstream at its "
                                "default 20 qps, which these wall-clock ratios measure")
    else:
        rows += _alone_rows(mine)
    report.emit("trainforge scale benchmark: a real pod lifecycle", rows, machine_line=machine, notes=_notes(runs),
                markdown=args.markdown)
    if guard:  # the ratios against the project's last recorded ones (bench.baseline)
        for line in baseline.report_against("scale", guard, machine=machine, write=args.record):
            print(line)
    if args.py_spy is not None:  # each profile written by this run: its top entries (bench.stacks)
        for path in sorted(p for p in args.py_spy.glob("train-controller*.txt") if p.stat().st_mtime >= began):
            print("\n".join(stacks.lines_of(stacks.read(path.read_text().splitlines()), path.name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
