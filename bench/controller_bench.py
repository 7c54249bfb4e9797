"""`make bench-controller`: the controller on a real API server against a bare client.

One run starts its own control plane (etcd + kube-apiserver, `testworld`),
installs our CRDs and then, per repeat, interleaved:

- controller round: `bench.controller_child` (the `train-controller` Manager, its own
  process) watches a fresh namespace; N PyTorchJobs of M pods plus one 64-node job are
  created in parallel; we time apply -> every pod created (seen on a watch), then play
  the kubelet (pods/status -> Running) and time -> every job Running; then a resync of
  every settled job, which must write nothing. Writes are counted at the controller's
  client and from the API server's `apiserver_request_total` (minus our own job
  creates and status patches); CPU per reconcile comes from the child's clock. Once as
  shipped (--pods-first), once in upstream's order (--no-pods-first).
- bare round (the baseline, the API server's own limit here): the same pods, as the
  controller made them, POSTed into a fresh namespace by a thread pool, timed by the
  same pod watch; the controller's connections are open before its clock starts, as
  this client's are.

`--rss` instead runs one controller round of 1,000 jobs and reports the controller's
RSS. Nothing here fails on timing; the table is printed (and written with --markdown).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from bench import kube_tools as kt
from bench import report, restart_bench, server_cost
from foundation.cluster.kube import EVENTS, PODS, SERVICES, Client
from testworld import upstream
from testworld.settle import Unsettled, until_quiet

REPO = Path(__file__).resolve().parents[1]


class Child:
    """The controller process and its one-line JSON protocol."""

    def __init__(self, kubeconfig: Path, namespace: str, workers: int, experiments: str = "",
                 pods_first: bool = True) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.controller_child", str(kubeconfig), namespace, str(workers),
             *([] if pods_first else ["upstream-order"])],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
            env={**os.environ, "TRAINFORGE_BENCH_EXPERIMENTS": experiments},
        )
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError(f"controller process exited ({self.proc.poll()})")
        return json.loads(line)

    def ask(self, command: str) -> dict[str, Any]:
        self.proc.stdin.write(command + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self._read()

    def settle(self, *, quiet: float = 1.0, timeout: float = 120.0, after: int = 0) -> dict[str, Any]:
        """Stats once `after` reconciles are done and nothing was queued, running, reconciled
        or written for `quiet` s."""
        try:
            return until_quiet(lambda: self.ask("stats"), quiet=quiet, timeout=timeout, poll=0.1,
                               ready=lambda s: s["queued"] == 0 and s["busy"] == 0 and s["reconciles"] >= after,
                               same=lambda a, b: (a["reconciles"], a["writes"]) == (b["reconciles"], b["writes"]),
                               what="the controller")
        except Unsettled as exc:
            raise TimeoutError(f"controller did not settle in {timeout:.0f}s: {exc.last}") from None

    def quit(self) -> None:
        try:
            self.proc.stdin.write("quit\n")  # type: ignore[union-attr]
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


@dataclass
class Bare:
    seconds: float  # until the pod watch has seen every pod, as the controller round is timed
    server_cpu: Optional[float]  # kube-apiserver + etcd CPU seconds over `seconds`
    posts: float  # until the last POST was answered


@dataclass
class CtlRound:
    jobs: int
    pods: int
    to_pods: float  # apply -> every pod created
    to_running: float  # first status patch -> every job Running
    after_last_patch: float  # last status patch -> every job Running
    client_writes: int
    server_writes: int  # controller's share of apiserver_request_total writes
    settled_writes: int  # during a resync of every settled job
    settled_server_writes: int
    reconciles: int
    cpu: float
    reconcile_cpu: float
    rss_mb: float
    peak_rss_mb: float
    idle_rss_mb: float
    events_dropped: int = 0  # Events the controller dropped because its queue was full
    server_cpu: Optional[float] = None  # kube-apiserver + etcd CPU s, apply -> every pod created
    window_writes: dict[str, int] = field(default_factory=dict)  # requests sent in that window
    requests: dict[str, int] = field(default_factory=dict)
    pod_bodies: list[dict[str, Any]] = field(default_factory=list)
    service_bodies: list[dict[str, Any]] = field(default_factory=list)  # listed once the round settled
    event_bodies: list[dict[str, Any]] = field(default_factory=list)  # as the services
    job_bodies: list[dict[str, Any]] = field(default_factory=list)  # as the services

    def summary(self) -> str:
        skip = {"pod_bodies", "service_bodies", "event_bodies", "job_bodies", "requests", "window_writes"}
        return json.dumps({k: round(v, 4) if isinstance(v, float) else v
                           for k, v in self.__dict__.items() if k not in skip})


class Bench:
    def __init__(self, plane: Any, *, threads: int, workers: int, timeout: float, experiments: str = "") -> None:
        self.plane, self.threads, self.workers, self.timeout = plane, threads, workers, timeout
        self.experiments = experiments
        self.client = Client.connect(str(plane.kubeconfig), pool_size=threads + 8)
        self.cpu = server_cost.ServerCPU.of(plane)  # None on an existing cluster

    def _namespace(self, prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:6]}"
        kt.create_namespace(self.client, name)
        return name

    def _server_writes(self) -> Counter[tuple[str, str]]:
        status, body = self.plane.raw_get("/metrics", timeout=30)
        if status != 200:
            raise RuntimeError(f"GET /metrics answered {status}")
        return kt.server_writes(body)

    def controller_round(self, jobs: int, pods_per_job: int, big: int, *, pods_first: bool = True) -> CtlRound:
        ns = self._namespace("ctl")
        child = Child(self.plane.kubeconfig, ns, self.workers, self.experiments, pods_first=pods_first)
        try:
            return self._drive(child, ns, jobs, pods_per_job, big)
        finally:
            child.quit()

    def _server_seconds(self) -> Optional[float]:
        return self.cpu.seconds() if self.cpu else None

    def _server_since(self, start: Optional[float]) -> Optional[float]:
        """Server CPU seconds since `start` (a `_server_seconds()`), None without process ids."""
        return None if start is None or self.cpu is None else self.cpu.seconds() - start

    def _timeline(self, ns: str, jobs: int, pods_per_job: int, big: int, timeout: Optional[float] = None,
                  at_pods: Any = None) -> dict[str, Any]:
        """Apply the jobs, wait for every pod, run them all, wait for every job Running.

        `at_pods()` is called once every pod exists (the controller's request counts then)."""
        timeout = timeout or self.timeout
        bodies = [kt.pytorch_job(f"job-{i:04d}", pods_per_job) for i in range(jobs)]
        if big:
            bodies.append(kt.pytorch_job("big", big))
        total = jobs * pods_per_job + big
        names = [b["metadata"]["name"] for b in bodies]
        pods = kt.Follow(self.client, PODS, ns)
        jobs_seen = None  # followed from the end of the pod burst on: the burst is timed by the pods alone
        try:
            cpu0, t0 = self._server_seconds(), time.perf_counter()
            kt.parallel(lambda body: self.client.create(kt.PYTORCHJOBS, ns, body, answer=False), bodies,
                        threads=self.threads)
            t_pods = pods.wait(lambda objs: len(objs) >= total, timeout=timeout, what=f"{total} pods")
            server_cpu = self._server_since(cpu0)
            counts = at_pods() if at_pods else None
            created = list(pods.objects.values())
            jobs_seen = kt.Follow(self.client, kt.PYTORCHJOBS, ns)
            t1 = time.perf_counter()
            kt.parallel(lambda pod: kt.run_pod(self.client, pod), created, threads=self.threads)
            t2 = time.perf_counter()
            t_run = jobs_seen.wait(lambda objs: all(n in objs and kt.job_running(objs[n]) for n in names),
                                   timeout=timeout, what="every job Running")
        finally:
            pods.stop()
            if jobs_seen is not None:
                jobs_seen.stop()
        return {"jobs": len(bodies), "pods": total, "to_pods": t_pods - t0, "to_running": t_run - t1,
                "after_last_patch": t_run - t2, "ours": len(bodies) + len(created), "created": created,
                "server_cpu": server_cpu, "at_pods": counts}

    def _drive(self, child: Child, ns: str, jobs: int, pods_per_job: int, big: int) -> CtlRound:
        s0, m0 = child.settle(quiet=0.2), self._server_writes()
        t = self._timeline(ns, jobs, pods_per_job, big, at_pods=lambda: child.ask("stats"))
        s1 = child.settle()
        m1 = self._server_writes()
        s2 = child.settle(quiet=0.2)
        m2 = self._server_writes()
        child.ask("resync")
        s3 = child.settle(after=s2["reconciles"] + t["jobs"])
        m3 = self._server_writes()
        return CtlRound(
            jobs=t["jobs"], pods=t["pods"], to_pods=t["to_pods"], to_running=t["to_running"],
            after_last_patch=t["after_last_patch"], client_writes=s1["writes"] - s0["writes"],
            server_writes=sum((m1 - m0).values()) - t["ours"],  # less our job creates and status patches
            settled_writes=s3["writes"] - s2["writes"], settled_server_writes=sum((m3 - m2).values()),
            reconciles=s1["reconciles"] - s0["reconciles"], cpu=s1["cpu"] - s0["cpu"],
            reconcile_cpu=s1["reconcile_cpu"] - s0["reconcile_cpu"], rss_mb=s3["rss_mb"],
            peak_rss_mb=s3["peak_rss_mb"], idle_rss_mb=child.ready["rss_mb"],
            events_dropped=s3.get("events_dropped", 0) - s0.get("events_dropped", 0),
            requests={k: v - s0["requests"].get(k, 0) for k, v in s1["requests"].items()}, pod_bodies=t["created"],
            service_bodies=self.client.list(SERVICES, namespace=ns)["items"],
            event_bodies=self.client.list(EVENTS, namespace=ns)["items"],
            job_bodies=self.client.list(kt.PYTORCHJOBS, namespace=ns)["items"],
            server_cpu=t["server_cpu"],
            window_writes=server_cost.window_writes(s0["requests"], t["at_pods"]["requests"], job_creates=t["jobs"]),
        )

    def upstream_round(self, binary: Path, jobs: int, pods_per_job: int, big: int) -> dict[str, Any]:
        """The same workload under the upstream Go operator (figures from the server and /proc)."""
        ns = self._namespace("up")
        host = upstream.Host(self.plane.kubeconfig, Path(tempfile.mkdtemp(prefix=f"trainforge-bench-{ns}-")))
        op = upstream.Operator(ns, schemes=("pytorchjob",), threads=self.workers).start(host)
        try:
            (cpu0, _), m0 = op.stats(), self._server_writes()
            t = self._timeline(ns, jobs, pods_per_job, big, timeout=max(self.timeout, 60 + jobs * pods_per_job / 5))
            time.sleep(2.0)  # let it finish its status writes, as settle() does for ours
            (cpu1, rss), m1 = op.stats(), self._server_writes()
            time.sleep(3.0)  # a quiet window: a settled job should cost nothing
            m2 = self._server_writes()
        finally:
            op.stop()
        return {**t, "server_writes": sum((m1 - m0).values()) - t["ours"], "quiet_writes": sum((m2 - m1).values()),
                "cpu": cpu1 - cpu0, "rss_mb": rss, "idle_rss_mb": op.idle_rss_mb}

    def bare_round(self, pods: list[dict[str, Any]], services: list[dict[str, Any]] = ()) -> Bare:
        """A thread pool of plain POSTs creating `pods` (and `services`, the headless Services the
        controller made: each right after its pod, the two writes per pod upstream's contract
        requires), timed as the controller round is: until the same pod watch has seen them all.

        That watch is the benchmark's own observer: the controller round needs it (the pods are
        not the benchmark's to count), and here it puts the same load on the server and on this
        process. `posts` is the time to the last POST's answer, without that symmetry."""
        ns = self._namespace("bare")
        service_of = {s["metadata"]["name"]: s for s in services}
        bodies: list[tuple[Any, dict[str, Any]]] = []
        for pod in pods:
            bodies.append((PODS, kt.bare_copy(pod, ns, "Pod")))
            if pod["metadata"]["name"] in service_of:
                bodies.append((SERVICES, kt.bare_copy(service_of[pod["metadata"]["name"]], ns, "Service")))
        seen = kt.Follow(self.client, PODS, ns)
        try:
            cpu0, t0 = self._server_seconds(), time.perf_counter()
            kt.parallel(lambda item: self.client.create(item[0], ns, item[1], answer=False), bodies,
                        threads=self.threads)
            t_posts = time.perf_counter()
            t_seen = seen.wait(lambda objs: len(objs) >= len(pods), timeout=self.timeout, what=f"{len(pods)} pods")
            return Bare(t_seen - t0, self._server_since(cpu0), t_posts - t0)
        finally:
            seen.stop()

    def request_costs(self, r: CtlRound) -> server_cost.Costs:
        """Server CPU per request type, from copies of what round `r` made (server_cost)."""
        assert self.cpu is not None
        return server_cost.measure(self.client, self.cpu, self._namespace("cost"), pods=r.pod_bodies,
                                   services=r.service_bodies, events=r.event_bodies, jobs=r.job_bodies,
                                   threads=self.threads)


def _nonzero(requests: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in sorted(requests.items()) if v}


def _median(values: list[float]) -> float:
    return statistics.median(values)


def scale_rows(rounds: list[CtlRound], bares: list[Bare], pairs: list[Bare], *, pods_per_job: int,
               big: int) -> list[report.Row]:
    R = report.Row
    r = rounds[-1]
    n_jobs = r.jobs
    to_pods = _median([x.to_pods for x in rounds])
    bare = _median([b.seconds for b in bares])
    label = f"{n_jobs - (1 if big else 0)} jobs x {pods_per_job} pods" + (f" + 1 x {big}" if big else "")
    rec = sum(x.reconciles for x in rounds)
    return [
        R(f"pods created per second, {label} (higher is better; baseline: bare parallel POSTs)",
          r.pods / to_pods, r.pods / bare, "/s", ">= 0.70x"),
        R(f"apply -> all {r.pods} pods created (s)", to_pods, bare, "s"),
        R("... baseline timed to its last POST's answer instead of by the pod watch both rounds run",
          r.pods / to_pods, r.pods / _median([b.posts for b in bares]), "/s"),
        R("pods created per second (baseline: bare parallel POSTs of each pod and its headless Service)",
          r.pods / to_pods, r.pods / _median([p.seconds for p in pairs]), "/s"),
        R("write requests per pod created (baseline: the bare client's one POST)",
          _median([x.client_writes / x.pods for x in rounds]), 1.0, ""),
        R("pods Running -> all jobs Running (s, from the first status patch)",
          _median([x.to_running for x in rounds]), None, "s"),
        R("... from the last status patch (s)", _median([x.after_last_patch for x in rounds]), None, "s"),
        R("apply -> all jobs Running (s)", _median([x.to_pods + x.to_running for x in rounds]), None, "s"),
        R("write requests per job, counted at the controller's client",
          _median([x.client_writes / x.jobs for x in rounds]), None, ""),
        R("write requests per job, from apiserver_request_total",
          _median([x.server_writes / x.jobs for x in rounds]), None, ""),
        R("writes for a settled reconcile (resync of every Running job, client)",
          _median([x.settled_writes / x.jobs for x in rounds]), None, "", "0"),
        R("... the same, from apiserver_request_total",
          _median([x.settled_server_writes / x.jobs for x in rounds]), None, "", "0"),
        R("reconciles per job (apply -> all Running)", _median([x.reconciles / x.jobs for x in rounds]), None, ""),
        R("controller CPU, apply -> all Running (s; baseline: that wall time)", _median([x.cpu for x in rounds]),
          _median([x.to_pods + x.to_running for x in rounds]), "s"),
        R("controller CPU per reconcile, all threads (ms)",
          1000 * sum(x.cpu for x in rounds) / rec if rec else None, None, "ms"),
        R("CPU inside reconcile() per reconcile (ms)",
          1000 * sum(x.reconcile_cpu for x in rounds) / rec if rec else None, None, "ms"),
        R(f"controller RSS after the round (MB; baseline: idle controller)", r.rss_mb, r.idle_rss_mb, "MB"),
    ]


UPSTREAM_ORDER = "--no-pods-first (upstream's order)"


def upstream_order_rows(rounds: list[CtlRound], bares: list[Bare], pairs: list[Bare]) -> list[report.Row]:
    """The same round under `train-controller --no-pods-first`: each pass's Services, status
    write and Events beside its pods, as the upstream operator sends them."""
    R = report.Row
    r = rounds[-1]
    to_pods = _median([x.to_pods for x in rounds])
    rows = [
        R(f"{UPSTREAM_ORDER}: pods created per second (baseline: bare parallel POSTs)", r.pods / to_pods,
          r.pods / _median([b.seconds for b in bares]), "/s"),
        R(f"{UPSTREAM_ORDER}: ... baseline: bare POSTs of each pod and its headless Service", r.pods / to_pods,
          r.pods / _median([p.seconds for p in pairs]), "/s"),
        R(f"{UPSTREAM_ORDER}: pods Running -> all jobs Running (s, from the first status patch)",
          _median([x.to_running for x in rounds]), None, "s"),
        R(f"{UPSTREAM_ORDER}: apply -> all jobs Running (s)", _median([x.to_pods + x.to_running for x in rounds]),
          None, "s"),
        R(f"{UPSTREAM_ORDER}: write requests per job, from apiserver_request_total",
          _median([x.server_writes / x.jobs for x in rounds]), None, ""),
        R(f"{UPSTREAM_ORDER}: writes for a settled reconcile (client; server)",
          _median([x.settled_writes / x.jobs for x in rounds]) + _median([x.settled_server_writes / x.jobs
                                                                           for x in rounds]), None, "", "0"),
        R(f"{UPSTREAM_ORDER}: reconciles per job (apply -> all Running)",
          _median([x.reconciles / x.jobs for x in rounds]), None, ""),
    ]
    if all(x.server_cpu is not None for x in rounds):
        rows.append(R(f"{UPSTREAM_ORDER}: API server + etcd CPU per pod, apply -> all pods created (ms)",
                      _median([1000 * x.server_cpu / x.pods for x in rounds]), None, "ms"))  # type: ignore[operator]
    return rows


def upstream_rows(rounds: list[CtlRound], ups: list[dict[str, Any]]) -> list[report.Row]:
    R = report.Row
    up = f"baseline: upstream Go operator {upstream.PRIMARY}"
    r, u = rounds[-1], ups[-1]
    return [
        R(f"pods created per second (higher is better; {up})", r.pods / _median([x.to_pods for x in rounds]),
          u["pods"] / _median([x["to_pods"] for x in ups]), "/s"),
        R(f"pods Running -> all jobs Running (s; {up})", _median([x.to_running for x in rounds]),
          _median([x["to_running"] for x in ups]), "s"),
        R(f"write requests per job, apiserver_request_total ({up})",
          _median([x.server_writes / x.jobs for x in rounds]),
          _median([x["server_writes"] / x["jobs"] for x in ups]), ""),
        R(f"writes in a quiet window after settling, per job ({up}; ours: the resync)",
          _median([x.settled_server_writes / x.jobs for x in rounds]),
          _median([x["quiet_writes"] / x["jobs"] for x in ups]), "", "0"),
        R(f"controller CPU, apply -> all Running (s; {up})", _median([x.cpu for x in rounds]),
          _median([x["cpu"] for x in ups]), "s"),
        R(f"controller RSS after the round (MB; {up})", r.rss_mb, u["rss_mb"], "MB"),
        R(f"controller RSS idle (MB; {up})", r.idle_rss_mb, u["idle_rss_mb"], "MB"),
    ]


def rss_rows(r: CtlRound, up: Optional[dict[str, Any]]) -> list[report.Row]:
    R = report.Row
    rows = []
    if up is not None:
        rows.append(R(f"controller RSS with {r.jobs} jobs, {r.pods} pods Running (MB; baseline: upstream Go "
                      f"operator {upstream.PRIMARY})", r.rss_mb, up["rss_mb"], "MB", "<= 120 MB"))
    return rows + [
        R(f"controller RSS with {r.jobs} jobs, {r.pods} pods Running (MB; baseline: idle controller)",
          r.rss_mb, r.idle_rss_mb, "MB", "<= 120 MB"),
        R("controller peak RSS (MB)", r.peak_rss_mb, None, "MB", "<= 120 MB"),
        R(f"apply -> all {r.pods} pods created (s)", r.to_pods, None, "s"),
        R("write requests per job, counted at the controller's client", r.client_writes / r.jobs, None, ""),
        R("writes for a settled reconcile (resync of every Running job)", r.settled_writes / r.jobs, None, "", "0"),
        R("reconciles per job (apply -> all Running)", r.reconciles / r.jobs, None, ""),
        R("controller CPU, apply -> all Running (s; baseline: that wall time)", r.cpu, r.to_pods + r.to_running, "s"),
        R("controller CPU per reconcile, all threads (ms)", 1000 * r.cpu / r.reconciles if r.reconciles else None,
          None, "ms"),
    ]


def restart_rows(bench: Bench, args: argparse.Namespace) -> tuple[list[report.Row], list[str]]:
    """The whole-job restart rounds (bench.restart_bench), interleaved with the bare client's."""
    def child_of(ns: str) -> Child:
        return Child(bench.plane.kubeconfig, ns, bench.workers, bench.experiments)

    print("controller bench: whole-job restart rounds ...", file=sys.stderr, flush=True)
    ours, bare = restart_bench.main_rounds(bench, child_of, repeat=args.restart_repeat)
    return restart_bench.rows(ours, bare, nodes=64), [restart_bench.requests_note(ours)]


def start_plane() -> Any:
    from testworld.assets import find_assets
    from testworld.controlplane import ControlPlane

    plane = ControlPlane(assets=find_assets(build=True))
    plane.start()
    try:
        plane.install_crds([REPO / "controller" / "install" / "crds"])
    except BaseException:
        plane.stop()
        raise
    return plane


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.controller_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100, help="jobs per round (default 100; the issue goes to 200)")
    parser.add_argument("--pods", type=int, default=4, help="pods per job (default 4)")
    parser.add_argument("--big", type=int, default=64, help="pods of the one big job (0: none)")
    parser.add_argument("--repeat", type=int, default=3, help="controller/bare round pairs, interleaved")
    parser.add_argument("--warmup", type=int, default=1,
                        help="rounds run and not counted first: the first round on a fresh control plane took "
                        "~3x as long as the next, and it was always a controller round (default 1)")
    parser.add_argument("--threads", type=int, default=16, help="client threads for creates, patches and the baseline")
    parser.add_argument("--workers", type=int, default=4,
                        help="controller reconcile workers (train-controller's default)")
    parser.add_argument("--rss", action="store_true", help="RSS mode: one round of --rss-jobs jobs, no baseline")
    parser.add_argument("--rss-jobs", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for pods or Running")
    parser.add_argument("--experiment", default="", help="what-if ceilings patched into the controller process: "
                        "no-events, no-services (comma-separated; they drop work the controller must do, to "
                        "measure its cost; default: the controller as shipped)")
    parser.add_argument("--upstream", choices=("auto", "build", "no"), default="auto",
                        help="the upstream Go operator as a second baseline: auto = when already built "
                        f"(python -m testworld build training-operator; not in --rss mode), build = go install it first if needed "
                        "(minutes), no = skip")
    parser.add_argument("--upstream-order", action=argparse.BooleanOptionalAction, default=True,
                        help="also run each round under train-controller --no-pods-first, upstream's order "
                        "(default: yes)")
    parser.add_argument("--restart-repeat", type=int, default=3,
                        help="whole-job restart rounds of a 64-pod job, each against the bare client (0: none)")
    parser.add_argument("--only-restart", action="store_true", help="only the whole-job restart rounds")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table as markdown here")
    args = parser.parse_args(argv)
    binary = None
    if args.upstream == "build" or (args.upstream == "auto" and upstream.find() is not None):
        binary = upstream.build()

    plane = start_plane()
    try:
        bench = Bench(plane, threads=args.threads, workers=args.workers, timeout=args.timeout,
                      experiments=args.experiment)
        server = plane.assets.directory.name if plane.assets else "existing cluster"
        machine = report.machine([f"kube-apiserver {server}",
                                  f"{args.threads} client threads, {args.workers} controller workers",
                                  f"experiments: {args.experiment}" if args.experiment else "controller as shipped (--pods-first)"])
        if args.rss:
            print(f"controller bench: RSS round, {args.rss_jobs} jobs ...", file=sys.stderr, flush=True)
            r = bench.controller_round(args.rss_jobs, args.pods, 0)
            print(f"controller bench: {r.summary()}", file=sys.stderr, flush=True)
            up = None
            if binary is not None and args.upstream == "build":  # its client-side rate limit makes this ~10 min
                print("controller bench: RSS round, upstream operator ...", file=sys.stderr, flush=True)
                up = bench.upstream_round(binary, args.rss_jobs, args.pods, 0)
            report.emit("trainforge controller benchmark: RSS", rss_rows(r, up), machine_line=machine,
                        notes=[f"{r.reconciles} reconciles, requests: {_nonzero(r.requests)}",
                               f"Events dropped by a full queue: {r.events_dropped}"],
                        markdown=args.markdown)
            return 0
        if args.restart_repeat and args.only_restart:
            rows, notes = restart_rows(bench, args)
            report.emit("trainforge controller benchmark: whole-job restart", rows, machine_line=machine,
                        notes=notes, markdown=args.markdown)
            return 0
        rounds, bares, pairs, ups, in_order = [], [], [], [], []
        for _ in range(args.warmup):  # a fresh control plane's first round runs ~3x slower, whoever sends it
            print("controller bench: warm-up round (not counted) ...", file=sys.stderr, flush=True)
            warm = bench.controller_round(args.jobs, args.pods, args.big)
            print(f"controller bench: warm-up {warm.summary()}", file=sys.stderr, flush=True)
        for i in range(args.repeat):
            print(f"controller bench: round {i + 1}/{args.repeat}: controller ...", file=sys.stderr, flush=True)
            rounds.append(bench.controller_round(args.jobs, args.pods, args.big))
            print(f"controller bench: {rounds[-1].summary()}", file=sys.stderr, flush=True)
            if args.upstream_order:
                print(f"controller bench: round {i + 1}/{args.repeat}: controller --no-pods-first ...",
                      file=sys.stderr, flush=True)
                in_order.append(bench.controller_round(args.jobs, args.pods, args.big, pods_first=False))
                print(f"controller bench: {in_order[-1].summary()}", file=sys.stderr, flush=True)
            print(f"controller bench: round {i + 1}/{args.repeat}: bare client ...", file=sys.stderr, flush=True)
            bares.append(bench.bare_round(rounds[0].pod_bodies))
            print(f"controller bench: bare client {bares[-1].seconds:.3f} s (last answer {bares[-1].posts:.3f} s)",
                  file=sys.stderr, flush=True)
            pairs.append(bench.bare_round(rounds[0].pod_bodies, rounds[0].service_bodies))
            print(f"controller bench: bare client, pods and services {pairs[-1].seconds:.3f} s", file=sys.stderr,
                  flush=True)
            if binary is not None:
                print(f"controller bench: round {i + 1}/{args.repeat}: upstream operator ...", file=sys.stderr,
                      flush=True)
                ups.append(bench.upstream_round(binary, args.jobs, args.pods, args.big))
                summary = {k: round(v, 3) if isinstance(v, float) else v for k, v in ups[-1].items() if k != "created"}
                print(f"controller bench: upstream {summary}", file=sys.stderr, flush=True)
        last = rounds[-1]
        notes = [
            "ratio = ours / baseline; times are medians of the rounds; the controller also creates one Service per pod",
            f"controller requests in the last round: {_nonzero(last.requests)}",
            f"Events dropped by a full queue: {sum(x.events_dropped for x in rounds)} in all rounds",
        ]
        rows = scale_rows(rounds, bares, pairs, pods_per_job=args.pods, big=args.big)
        if bench.cpu is not None:
            print("controller bench: server CPU per request type ...", file=sys.stderr, flush=True)
            costs = bench.request_costs(rounds[0])
            rows += server_cost.rows(costs, [(x.window_writes, x.server_cpu) for x in rounds], pods=last.pods,
                                     bare_cpu=_median([b.server_cpu for b in bares]),
                                     pair_cpu=_median([p.server_cpu for p in pairs]))
            notes.append(f"requests sent before the last pod existed, last round: {last.window_writes}")
        if in_order:
            rows += upstream_order_rows(in_order, bares, pairs)
            notes.append(f"{UPSTREAM_ORDER}, requests sent before the last pod existed, last round: "
                         f"{in_order[-1].window_writes}")
        if ups:
            rows += upstream_rows(rounds, ups)
        else:
            notes.append("no upstream operator baseline (--upstream build adds it)")
        if args.restart_repeat:
            more_rows, more_notes = restart_rows(bench, args)
            rows, notes = rows + more_rows, notes + more_notes
        report.emit("trainforge controller benchmark", rows, machine_line=machine, notes=notes, markdown=args.markdown)
    finally:
        plane.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
