"""`make bench-progress`: what progress reports cost train-controller, against the same run without them.

One world (etcd + kube-apiserver with the project's CRDs, no scheduler or kubelet: the pods
stay Pending, which is all a token needs), train-controller as its own process with the
progress endpoint on (`--progress-interval`, 30 s by default), `--jobs` PyTorchJobs of
`--pods-per-job` pods each. Once every pod exists and the controller is idle, a pod-bound
token is minted for each pod (TokenRequest), and then, in one run:

1. `--seconds` without reports: the controller's CPU (/proc) and its API writes (its own
   `/metrics`: creates, updates, patches, deletes);
2. `--seconds` with every pod reporting every `--every` seconds (random phase), each over a
   kept-alive HTTPS connection of its own, as the client library does: the same figures,
   plus the reports answered by code.

Printed: API writes per job per minute in each phase, the controller's CPU per report and
the extra CPU against phase 1 (the goal of issue 49: at most 2 writes per job per minute,
under 10% more CPU). The reporters run in this process, so their CPU is not the
controller's; on a 2-core machine they compete with it for the cores, so the achieved report
rate is printed beside the asked one.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
import ssl
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

REPO = Path(__file__).resolve().parents[1]
NS, OWN = "bench", "trainforge-system"


def say(text: str) -> None:
    print(f"progress bench: {text}", file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def scrape(port: int) -> dict[str, float]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r'trainforge_api_requests_total\{code="(\d+)",resource="([^"]*)",verb="(\w+)"\} (\S+)', line)
        if m and m.group(2) == "authentication.k8s.io/tokenreviews":  # a question, nothing stored
            out["reviews"] = out.get("reviews", 0.0) + float(m.group(4))
        elif m and m.group(3) in ("create", "update", "patch", "delete"):
            out["writes"] = out.get("writes", 0.0) + float(m.group(4))
        m = re.match(r'trainforge_progress_writes_total\{result="ok"\} (\S+)', line)
        if m:
            out["progress_writes"] = float(m.group(1))
    return out


class Reporters:
    """Every pod's reporter: its own kept-alive connection, a report every `every` s."""

    def __init__(self, port: int, ca: bytes, targets: list[tuple[str, str]], every: float, threads: int) -> None:
        self.port, self.every = port, every
        self.context = ssl.create_default_context(cadata=ca.decode())
        self.targets = targets  # (path, token) per pod
        self.threads, self.codes, self.lock = threads, {}, threading.Lock()
        self.stop = threading.Event()

    def run(self, seconds: float) -> None:
        shards = [self.targets[i::self.threads] for i in range(self.threads)]
        workers = [threading.Thread(target=self._shard, args=(s, seconds), daemon=True) for s in shards]
        for w in workers:
            w.start()
        for w in workers:
            w.join(seconds + 60)

    def _shard(self, pods: list[tuple[str, str]], seconds: float) -> None:
        rng = random.Random()
        start = time.monotonic()
        due = [start + rng.uniform(0, self.every) for _ in pods]
        conns: list[Optional[http.client.HTTPSConnection]] = [None] * len(pods)
        step = 0
        while time.monotonic() - start < seconds:
            i = min(range(len(pods)), key=due.__getitem__)
            wait = due[i] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if time.monotonic() - start >= seconds:
                break
            step += 1
            path, token = pods[i]
            body = json.dumps({"trainerStatus": {"progressPercentage": step % 101, "estimatedRemainingSeconds": 600,
                                                 "metrics": [{"name": "loss", "value": f"{1 / step:.4f}"}],
                                                 "lastUpdatedTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}})
            code = self._post(conns, i, path, token, body)
            with self.lock:
                self.codes[code] = self.codes.get(code, 0) + 1
            due[i] += self.every
        for conn in conns:
            if conn is not None:
                conn.close()

    def _post(self, conns: list, i: int, path: str, token: str, body: str) -> int:
        for _ in range(2):
            try:
                if conns[i] is None:
                    conns[i] = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
                conns[i].request("POST", path, body=body, headers={"Authorization": f"Bearer {token}",
                                                                     "Content-Type": "application/json"})
                resp = conns[i].getresponse()
                resp.read()
                return resp.status
            except (OSError, http.client.HTTPException):
                if conns[i] is not None:
                    conns[i].close()
                conns[i] = None
        return 0


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.progress_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--pods-per-job", type=int, default=8)
    parser.add_argument("--every", type=float, default=10.0, help="seconds between one pod's reports")
    parser.add_argument("--seconds", type=float, default=600.0, help="length of each phase")
    parser.add_argument("--interval", default="30s", help="train-controller's --progress-interval")
    parser.add_argument("--threads", type=int, default=32, help="reporter threads in this process")
    args = parser.parse_args(argv)

    from bench.scale_lifecycle import pytorch_job
    from controller.jobs.kinds import KINDS, job_resource
    from foundation.cluster.kube import PODS, Client, Resource
    from foundation.progress.endpoint import path as report_path
    from testworld.controlplane import ControlPlane, ManagedProcess, free_port
    from testworld.world import World

    work = Path(tempfile.mkdtemp(prefix="trainforge-progress-bench-"))
    world = World([], upstream_crds=False, crds=[REPO / "controller" / "install" / "crds"],
                  plane=ControlPlane(use_existing=False))
    world.start()
    proc = None
    try:
        for ns in (NS, OWN):
            world.kubectl("create", "namespace", ns)
        client = Client.connect(str(world.kubeconfig), pool_size=32)
        sa = Resource("", "v1", "serviceaccounts", "ServiceAccount")
        client.create(sa, NS, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        port, metrics = free_port(), free_port()
        proc = ManagedProcess("train-controller", [
            sys.executable, "-m", "controller", f"--kubeconfig={world.kubeconfig}", f"--namespace={NS}",
            "--frameworks=pytorch", f"--progress-bind-address=127.0.0.1:{port}", f"--progress-interval={args.interval}",
            f"--leader-election-namespace={OWN}", f"--metrics-bind-address=127.0.0.1:{metrics}"],
            work / "controller.log", REPO)
        proc.start()
        while b"train-controller started" not in proc.log_path.read_bytes():
            time.sleep(0.2)
        pt = job_resource(KINDS["PyTorchJob"])
        started = time.monotonic()
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda i: client.create(pt, NS, _job(pytorch_job(f"j{i}", args.pods_per_job, None))),
                          range(args.jobs)))
        want = args.jobs * args.pods_per_job
        while len(pods := client.list(PODS, namespace=NS)["items"]) < want:
            time.sleep(1)
        say(f"{args.jobs} jobs, {want} pods created in {time.monotonic() - started:.0f} s")
        token_body = lambda p: {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",  # noqa: E731
                                "spec": {"audiences": ["train-controller.trainforge.dev"], "expirationSeconds": 7200,
                                         "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                                            "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]}}}
        with ThreadPoolExecutor(16) as pool:
            tokens = list(pool.map(lambda p: client.call("POST", sa, verb="create", namespace=NS, name="default",
                                                         sub="token", body=token_body(p))["status"]["token"], pods))
        targets = [(report_path(NS, "pytorchjobs", p["metadata"]["labels"]["training.kubeflow.org/job-name"]), t)
                   for p, t in zip(pods, tokens)]
        import base64
        from controller.progress.certs import SECRET, SECRETS
        ca = base64.b64decode(client.get(SECRETS, OWN, SECRET)["data"]["ca.crt"])
        time.sleep(10)  # the controller idle: the jobs' first passes are done
        figures = []
        for phase in ("without reports", "with reports"):
            m0, c0, t0 = scrape(metrics), cpu_seconds(proc.pid), time.monotonic()
            reporters = None
            if phase == "with reports":
                reporters = Reporters(port, ca, targets, args.every, args.threads)
                reporters.run(args.seconds)
            else:
                time.sleep(args.seconds)
            m1, c1, t1 = scrape(metrics), cpu_seconds(proc.pid), time.monotonic()
            minutes = (t1 - t0) / 60
            writes = m1.get("writes", 0) - m0.get("writes", 0)
            figures.append({"phase": phase, "seconds": t1 - t0, "cpu": c1 - c0, "writes": writes,
                            "writes_per_job_minute": writes / args.jobs / minutes,
                            "progress_writes": m1.get("progress_writes", 0) - m0.get("progress_writes", 0),
                            "reviews": m1.get("reviews", 0) - m0.get("reviews", 0),
                            "codes": reporters.codes if reporters else {}})
            say(json.dumps(figures[-1]))
        base, loaded = figures
        reports = sum(loaded["codes"].values())
        print(f"\nprogress bench: {args.jobs} jobs x {args.pods_per_job} pods, a report every {args.every:g} s each,"
              f" --progress-interval {args.interval}, {args.seconds:g} s per phase")
        print(f"  reports answered: {reports} ({reports / loaded['seconds']:.0f}/s of {want / args.every:.0f}/s asked),"
              f" by code {dict(sorted(loaded['codes'].items()))}")
        print(f"  API writes per job per minute: {base['writes_per_job_minute']:.2f} without, "
              f"{loaded['writes_per_job_minute']:.2f} with reports (progress writes {loaded['progress_writes']:.0f});"
              f" TokenReviews {loaded['reviews']:.0f} (one per token, then cached)")
        extra = loaded["cpu"] - base["cpu"]
        print(f"  controller CPU: {base['cpu']:.1f} s without, {loaded['cpu']:.1f} s with reports"
              f" (+{extra:.1f} s, {1e6 * extra / max(reports, 1):.0f} us per report,"
              f" {100 * extra / max(base['cpu'], 1e-9):.0f}% more)")
        return 0
    finally:
        if proc is not None:
            proc.stop(30)
        world.stop()
        shutil.rmtree(work, ignore_errors=True)


def _job(body: dict[str, Any]) -> dict[str, Any]:
    body["metadata"]["namespace"] = NS
    for spec in body["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["serviceAccountName"] = "default"
    return body


if __name__ == "__main__":
    sys.exit(main())
