"""The fault harness: controller replicas as real processes, a pretend kubelet, the audit log.

A fault run is a stream of PyTorchJob lifecycles with a known plan each (succeed, fail
with exit code 1, exit 137 once and be restarted, lose a pod behind the controller's
back), driven by `Kubelet` through the pods/status subresource, while something goes
wrong: controller replicas SIGKILLed (`Replicas` restarts them, as a Deployment would),
kube-apiserver restarted, watches expired, status writes raced. Afterwards `verify`
judges the run from the API server alone: each job's terminal condition, the pods and
services left (per cleanPodPolicy), owners of every child, and, from the audit log,
exactly how many times each pod and service was created, and which (verb, resource)
pairs the controller's identity used. `Figures` is what the run reports.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from controller.jobs.kinds import KINDS, job_resource
from controller.jobs.run_record import CONTROLLERREVISIONS
from foundation.cluster import errors
from foundation.cluster.kube import PODS, SERVICES, Client
from controller.runtime.leader import LEASES
from testworld.controlplane import ControlPlane, free_port

REPO = Path(__file__).resolve().parents[2]
ROLE_FILE = REPO / "controller" / "install" / "clusterrole.yaml"
LEASE_ROLE_FILE = REPO / "controller" / "install" / "role.yaml"  # the Lease, in the controller's namespace only
PT = job_resource(KINDS["PyTorchJob"])
FAST_LEASE = ("2s", "1.5s", "0.3s")  # lease duration, renew deadline, retry period
LEASE_ID = "train-controller-fault"


# ---------------------------------------------------------------------------- the identity
def controller_identity(plane: ControlPlane, namespace: str) -> tuple[str, Path]:
    """A user bound to nothing but the install's ClusterRole and, in `namespace` (where it
    elects), its Lease Role; returns (name, kubeconfig)."""
    user = f"train-controller-{namespace}"[:60]
    plane.kubectl("apply", "-f", str(ROLE_FILE))
    plane.kubectl("create", "clusterrolebinding", user, "--clusterrole=train-controller", f"--user={user}")
    plane.kubectl("apply", "-n", namespace, "-f", str(LEASE_ROLE_FILE))
    plane.kubectl("create", "rolebinding", "-n", namespace, "lease", "--role=train-controller-leader-election",
                  f"--user={user}")
    return user, plane.add_user(user)


def granted_pairs() -> set[tuple[str, str]]:
    rules = [rule for path in (ROLE_FILE, LEASE_ROLE_FILE) for rule in yaml.safe_load(path.read_text())["rules"]]
    return {(verb, f"{group}/{res}") for rule in rules for group in rule["apiGroups"]
            for res in rule["resources"] for verb in rule["verbs"]}


# ---------------------------------------------------------------------------- controller processes
class ControllerProcess:
    """One `python -m controller --leader-elect` replica with its own log and ports."""

    def __init__(self, name: str, *, kubeconfig: Path, namespace: str, log_dir: Path,
                 lease: tuple[str, str, str] = FAST_LEASE, workers: int = 4, watch_timeout: int = 60,
                 log_level: str = "INFO") -> None:
        self.name, self.log_path = name, log_dir / f"{name}.log"
        self.health_port, self.metrics_port = free_port(), free_port()
        self.argv = [
            sys.executable, "-m", "controller", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
            "--frameworks", "pytorch", "--workers", str(workers), "--watch-timeout", str(watch_timeout),
            "--leader-elect", "--leader-election-namespace", namespace, "--leader-election-id", LEASE_ID,
            "--leader-elect-lease-duration", lease[0], "--leader-elect-renew-deadline", lease[1],
            "--leader-elect-retry-period", lease[2],
            "--health-probe-bind-address", f"127.0.0.1:{self.health_port}",
            "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}", "--log-level", log_level,
            *(["--no-pods-first"] if os.environ.get("TRAINFORGE_TEST_UPSTREAM_ORDER") == "1" else []),  # as tests/controller
        ]
        self.popen: subprocess.Popen[bytes] | None = None
        self.killed_at: float | None = None

    def start(self) -> ControllerProcess:
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          env={**os.environ, "POD_NAME": self.name}, cwd=REPO)
        return self

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def owns(self, holder: str) -> bool:
        return holder.startswith(f"{self.name}_")

    def kill(self) -> None:
        if self.popen is not None and self.alive:
            self.killed_at = time.monotonic()
            self.popen.send_signal(signal.SIGKILL)
            self.popen.wait(10)

    def terminate(self, timeout: float = 20.0) -> int | None:
        if self.popen is None:
            return None
        if self.alive:
            self.popen.send_signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait(10)
            return None

    def wait_serving(self, timeout: float = 60.0) -> None:
        """Until /healthz answers, which the controller serves only after its SIGTERM handler is
        installed. A replica restarted moments ago may still be importing (seconds on a loaded
        machine), and a SIGTERM then ends it with -15 as it would a starting container."""
        deadline = time.monotonic() + timeout
        while self.alive and time.monotonic() < deadline and self.get("/healthz")[0] == 0:
            time.sleep(0.05)

    def signal(self, sig: int) -> None:
        if self.popen is not None and self.alive:
            self.popen.send_signal(sig)

    def get(self, path: str, *, port: int | None = None) -> tuple[int, str]:
        url = f"http://127.0.0.1:{port or self.health_port}{path}"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(url, timeout=5) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()
        except OSError as err:
            return 0, str(err)

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Samples of /metrics: (name, sorted labels) -> value; {} if not serving."""
        code, text = self.get("/metrics", port=self.metrics_port)
        if code != 200:
            return {}
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for family in text_string_to_metric_families(text) for s in family.samples}

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def metric(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


class Replicas:
    """A Deployment stand-in: keeps `count` controller processes alive, restarting any that exits."""

    def __init__(self, count: int, make: Callable[[str], ControllerProcess]) -> None:
        self.count, self.make = count, make
        self.procs: list[ControllerProcess] = []
        self.exits: list[tuple[str, int | None, bool]] = []  # (name, exit code, killed by us)
        self._reaped: set[str] = set()
        self._serial = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="replicas", daemon=True)

    def start(self, *, stagger: float = 0.0) -> Replicas:
        for _ in range(self.count):
            self._spawn()
            time.sleep(stagger)
        self._thread.start()
        return self

    def _spawn(self) -> ControllerProcess:
        with self._lock:
            self._serial += 1
            proc = self.make(f"ctl-{self._serial}").start()
            self.procs.append(proc)
            return proc

    def live(self) -> list[ControllerProcess]:
        with self._lock:
            return [p for p in self.procs if p.alive]

    def holder(self, holder: str) -> ControllerProcess | None:
        with self._lock:
            return next((p for p in self.procs if p.owns(holder)), None)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with self._lock:
                dead = [p for p in self.procs if not p.alive and p.popen is not None and p.name not in self._reaped]
            for proc in dead:
                self._reaped.add(proc.name)
                self.exits.append((proc.name, proc.popen.returncode if proc.popen else None, proc.killed_at is not None))
            for _ in range(max(0, self.count - len(self.live()))):
                self._spawn()

    def stop(self) -> list[int | None]:
        self._stop.set()
        self._thread.join(5)
        live = self.live()
        for proc in live:  # the graceful stop checked is that of running replicas
            proc.wait_serving()
        return [p.terminate() for p in live]

    def unexpected_exits(self) -> list[tuple[str, int | None]]:
        """Exits we did not cause (lost lease = 1, crash = anything else)."""
        return [(name, code) for name, code, killed in self.exits if not killed]


def lease_holder(client: Client, namespace: str) -> tuple[str, int]:
    """(holderIdentity, leaseTransitions) of the fault Lease; ("", -1) if none yet."""
    try:
        spec = client.get(LEASES, namespace, LEASE_ID).get("spec") or {}
    except errors.ApiError:
        return "", -1
    return spec.get("holderIdentity") or "", int(spec.get("leaseTransitions") or 0)


# ---------------------------------------------------------------------------- plans and the kubelet
# whole: restart scope job (trainforge.dev/restart-scope), worker-0 exits 137 once and every pod
# of the job is created again as one attempt (controller.jobs.restarts)
OUTCOMES = ("succeed", "fail", "restart", "delete", "whole")
ATTEMPT = "train-controller.trainforge.dev/attempt"


@dataclass
class Plan:
    """One job's lifecycle as the pretend kubelet will play it."""

    name: str
    outcome: str  # succeed | fail (worker-0 exits 1) | restart (worker-0 exits 137 once) | delete (worker-0 deleted once)
    #               | whole (restart scope job: worker-0 exits 137 once, every pod comes again)
    workers: int
    clean: str  # cleanPodPolicy: None | All | Running
    dwell: float  # seconds all pods run before the plan's next step
    disrupted_uid: str | None = None
    running_since: float | None = None
    finishing: bool = False  # the terminal phases are being written
    done: bool = False

    @property
    def pods(self) -> list[str]:
        return [f"{self.name}-master-0", *(f"{self.name}-worker-{i}" for i in range(self.workers))]

    @property
    def condition(self) -> str:
        return "Failed" if self.outcome == "fail" else "Succeeded"

    def expected_creates(self) -> dict[str, int]:
        if self.outcome == "whole":
            return {name: 2 for name in self.pods}
        extra = 1 if self.outcome in ("restart", "delete") else 0
        return {name: 1 + (extra if name.endswith("-worker-0") else 0) for name in self.pods}

    def final_phase(self, pod: str) -> str:
        if self.outcome != "fail":
            return "Succeeded"
        return "Failed" if pod.endswith("-worker-0") else "Running"

    def left_after_cleanup(self) -> set[str]:
        """Pods (and their same-named services) that cleanPodPolicy keeps."""
        if self.clean == "All":
            return set()
        if self.clean == "Running":
            return {p for p in self.pods if self.final_phase(p) != "Running"}
        return set(self.pods)

    def body(self) -> dict[str, Any]:
        def replica(count: int) -> dict[str, Any]:
            return {"replicas": count, "restartPolicy": "ExitCode",
                    "template": {"spec": {"containers": [{"name": "pytorch", "image": "example.com/train:1"}]}}}

        meta: dict[str, Any] = {"name": self.name}
        if self.outcome == "whole":
            meta["annotations"] = {"trainforge.dev/restart-scope": "job"}
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta,
                "spec": {"runPolicy": {"cleanPodPolicy": self.clean},
                         "pytorchReplicaSpecs": {"Master": replica(1), "Worker": replica(self.workers)}}}


def make_plans(count: int, rng: random.Random, *, prefix: str = "j", dwell: tuple[float, float] = (0.2, 1.5)) -> list[Plan]:
    """`count` plans cycling through every outcome and cleanPodPolicy, shuffled."""
    plans = [Plan(f"{prefix}{i:03d}", OUTCOMES[i % len(OUTCOMES)], workers=1 + i % 2,
                  clean=("None", "All", "Running")[(i // len(OUTCOMES)) % 3], dwell=rng.uniform(*dwell))
             for i in range(count)]
    rng.shuffle(plans)
    return plans


class Kubelet:
    """Plays the node for every planned job: Pending pods start Running, and once all of a
    job's pods have run for its dwell time the plan's next step is written. Requests that
    fail (API server restarting, pod just deleted) are simply retried on the next tick."""

    def __init__(self, client: Client, namespace: str, plans: list[Plan], *, tick: float = 0.1) -> None:
        self.client, self.namespace, self.tick = client, namespace, tick
        self.plans = {p.name: p for p in plans}
        self.active: set[str] = set()
        self.uids: dict[tuple[str, str], set[str]] = {}  # (pods|services, name) -> every uid seen
        self.deleted_behind_back = 0
        self.force_deleted = 0  # terminating pods podgc would have removed
        self.mixed_samples: list[str] = []  # a whole-restart job seen with pods of two attempts at once
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="kubelet", daemon=True)

    def start(self) -> Kubelet:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def submit(self, plan: Plan) -> None:
        with self._lock:
            self.active.add(plan.name)

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            try:
                pods = self.client.list(PODS, namespace=self.namespace)["items"]
                services = self.client.list(SERVICES, namespace=self.namespace)["items"]
            except errors.ApiError:
                continue
            for res, objs in (("pods", pods), ("services", services)):
                for obj in objs:
                    self.uids.setdefault((res, obj["metadata"]["name"]), set()).add(obj["metadata"]["uid"])
            self._collect_garbage(pods)
            by_job: dict[str, dict[str, dict[str, Any]]] = {}
            for pod in pods:
                meta = pod["metadata"]
                job = (meta.get("labels") or {}).get("training.kubeflow.org/job-name", "")
                by_job.setdefault(job, {})[meta["name"]] = pod
            with self._lock:
                active = [self.plans[n] for n in self.active if not self.plans[n].done]
            for plan in active:
                if plan.outcome == "whole":
                    attempts = {(p["metadata"].get("annotations") or {}).get(ATTEMPT)
                                for p in by_job.get(plan.name, {}).values()}
                    if len(attempts) > 1:
                        self.mixed_samples.append(f"{plan.name}: pods of attempts {sorted(map(str, attempts))} at once")
                try:
                    self._step(plan, by_job.get(plan.name, {}))
                except errors.ApiError:
                    pass  # retried next tick

    def _collect_garbage(self, pods: list[dict[str, Any]]) -> None:
        """Play kube-controller-manager's pod GC: a delete cut short (its client killed between
        the API server marking the pod and removing it) leaves an unscheduled pod terminating
        for good; podgc force-deletes those, so a cluster never keeps them."""
        for pod in pods:
            meta = pod["metadata"]
            if meta.get("deletionTimestamp") and not (pod.get("spec") or {}).get("nodeName"):
                body = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                        "preconditions": {"uid": meta["uid"]}}
                try:
                    self.client.call("DELETE", PODS, verb="delete", namespace=self.namespace, name=meta["name"], body=body)
                    self.force_deleted += 1
                except errors.ApiError:
                    pass  # gone already, or the API server is away: next tick

    def _step(self, plan: Plan, pods: dict[str, dict[str, Any]]) -> None:
        """One tick of one job. Every write may fail (API server away): each step is
        idempotent and judged again from what the server shows on the next tick."""
        for pod in pods.values():
            if (pod.get("status") or {}).get("phase", "Pending") == "Pending" and not pod["metadata"].get("deletionTimestamp"):
                self.set_phase(pod, "Running")
                pod.setdefault("status", {})["phase"] = "Running"
        if plan.finishing:
            self._finish(plan, pods)
            return
        running = set(plan.pods) <= set(pods) and all(pods[n]["status"].get("phase") == "Running" for n in plan.pods)
        worker0 = pods.get(f"{plan.name}-worker-0")
        if plan.disrupted_uid and worker0 and worker0["metadata"]["uid"] == plan.disrupted_uid:
            plan.running_since = None
            if running:  # our exit 137 or delete did not land: again
                self._disrupt(plan, worker0)
            return
        if not running:
            plan.running_since = None
            return
        now = time.monotonic()
        if plan.running_since is None:
            plan.running_since = now
        if now - plan.running_since < plan.dwell:
            return
        assert worker0 is not None
        if plan.outcome in ("restart", "delete", "whole") and plan.disrupted_uid is None:
            plan.disrupted_uid = worker0["metadata"]["uid"]
            if plan.outcome == "delete":
                self.deleted_behind_back += 1
            plan.running_since = None
            self._disrupt(plan, worker0)
            return
        plan.finishing = True
        self._finish(plan, pods)

    def _disrupt(self, plan: Plan, worker0: dict[str, Any]) -> None:
        if plan.outcome in ("restart", "whole"):
            self.set_phase(worker0, "Failed", exit_code=137)
        else:
            try:
                self.client.delete(PODS, self.namespace, worker0["metadata"]["name"], uid=worker0["metadata"]["uid"])
            except (errors.NotFound, errors.Conflict):
                pass  # gone already

    def _finish(self, plan: Plan, pods: dict[str, dict[str, Any]]) -> None:
        """Write the plan's terminal phases that are not there yet (workers first, then the master)."""
        for name in sorted(plan.pods, key=lambda n: "-master-" in n):
            phase = plan.final_phase(name)
            pod = pods.get(name)
            if pod is not None and phase != "Running" and pod["status"].get("phase") != phase:
                self.set_phase(pod, phase, exit_code=1 if phase == "Failed" else None)
        plan.done = True

    def set_phase(self, pod: dict[str, Any], phase: str, *, exit_code: int | None = None) -> None:
        statuses = []
        for c in pod["spec"]["containers"]:
            if phase == "Running":
                state: dict[str, Any] = {"running": {"startedAt": "2024-01-01T00:00:00Z"}}
            else:
                code = exit_code if exit_code is not None else (0 if phase == "Succeeded" else 1)
                state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                                        "startedAt": "2024-01-01T00:00:00Z", "finishedAt": "2024-01-01T00:00:01Z"}}
            statuses.append({"name": c["name"], "image": c["image"], "imageID": "", "ready": phase == "Running",
                             "restartCount": 0, "state": state})
        patch = {"metadata": {"uid": pod["metadata"]["uid"]}, "status": {"phase": phase, "containerStatuses": statuses}}
        try:
            self.client.patch(PODS, self.namespace, pod["metadata"]["name"], patch, sub="status")
        except (errors.NotFound, errors.Conflict, errors.Invalid):
            pass  # deleted or replaced meanwhile: the next tick sees the new pod


# ---------------------------------------------------------------------------- running lifecycles
def terminal(job: dict[str, Any]) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or []:
        if c["type"] in ("Succeeded", "Failed") and c["status"] == "True":
            return str(c["type"])
    return None


def run_lifecycles(client: Client, namespace: str, plans: list[Plan], kubelet: Kubelet, *, concurrency: int,
                   timeout: float, during: Callable[[int], None] | None = None) -> None:
    """Submit the plans `concurrency` at a time until every job is terminal. `during(n)` is
    called on each pass with the number of finished jobs (to inject faults mid-run)."""
    pending, active, finished = list(plans), {}, 0
    deadline = time.monotonic() + timeout
    while pending or active:
        while pending and len(active) < concurrency:
            plan = pending[-1]
            try:
                client.create(PT, namespace, plan.body())
            except errors.Retryable:
                break  # API server away: try again next pass
            pending.pop()
            kubelet.submit(plan)
            active[plan.name] = plan
        try:
            jobs = {j["metadata"]["name"]: j for j in client.list(PT, namespace=namespace)["items"]}
        except errors.ApiError:
            jobs = {}
        for name in [n for n in active if n in jobs and terminal(jobs[n])]:
            del active[name]
            finished += 1
        if during is not None:
            during(finished)
        if time.monotonic() > deadline:
            stuck = {n: (terminal(jobs.get(n, {})), [c["type"] for c in (jobs.get(n, {}).get("status") or {}).get("conditions") or []])
                     for n in active}
            raise AssertionError(f"{len(active)} jobs not terminal after {timeout}s: {stuck}")
        time.sleep(0.2)


def settle(client: Client, namespace: str, plans: list[Plan], *, timeout: float = 30.0) -> None:
    """Wait until cleanPodPolicy has removed what it removes (a kill may delay it)."""
    want = set().union(*(p.left_after_cleanup() for p in plans))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = {p["metadata"]["name"] for p in client.list(PODS, namespace=namespace)["items"]}
        services = {s["metadata"]["name"] for s in client.list(SERVICES, namespace=namespace)["items"]}
        if pods == want and services == want:
            return
        time.sleep(0.2)


class Killer:
    """SIGKILLs the leader (now and then the standby) at random moments and times each takeover:
    from the kill until the Lease names another live replica."""

    def __init__(self, replicas: Replicas, client: Client, namespace: str, rng: random.Random, *,
                 pause: tuple[float, float] = (0.2, 4.0), standby_share: float = 0.15) -> None:
        self.replicas, self.client, self.namespace, self.rng = replicas, client, namespace, rng
        self.pause, self.standby_share = pause, standby_share
        self.kills = 0
        self.leader_kills = 0
        self.takeovers: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="killer", daemon=True)

    def start(self) -> Killer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(40)

    def _leader(self) -> ControllerProcess | None:
        holder, _ = lease_holder(self.client, self.namespace)
        proc = self.replicas.holder(holder) if holder else None
        return proc if proc is not None and proc.alive else None

    def _run(self) -> None:
        while not self._stop.is_set():
            leader = self._leader()
            if leader is None:
                self._stop.wait(0.02)
                continue
            if self._stop.wait(self.rng.uniform(*self.pause)):
                return
            if self._leader() is not leader:
                continue
            standbys = [p for p in self.replicas.live() if p is not leader]
            victim = self.rng.choice(standbys) if standbys and self.rng.random() < self.standby_share else leader
            victim.kill()
            self.kills += 1
            if victim is leader:
                self.leader_kills += 1
                self._time_takeover(leader)

    def _time_takeover(self, old: ControllerProcess) -> None:
        assert old.killed_at is not None
        deadline = old.killed_at + 60
        while time.monotonic() < deadline:
            holder, _ = lease_holder(self.client, self.namespace)
            if holder and not old.owns(holder):
                self.takeovers.append(time.monotonic() - old.killed_at)
                return
            time.sleep(0.02)


# ---------------------------------------------------------------------------- the audit log
class Audit:
    """The API server's audit events of one namespace, from the moment this was made."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        assert plane.audit_log is not None, "fault tests need a control plane with an audit log"
        self.path, self.namespace = plane.audit_log, namespace
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def events(self) -> list[dict[str, Any]]:
        size = self.path.stat().st_size
        assert size >= self.offset, "the audit log was rotated during the run; raise --audit-log-maxsize"
        needle = f'"namespace":"{self.namespace}"'.encode()
        out = []
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            for line in fh:
                if needle in line:
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:
                        continue
        return out


def audit_pair(event: dict[str, Any]) -> tuple[str, str]:
    ref = event.get("objectRef") or {}
    resource = f"{ref.get('apiGroup', '')}/{ref.get('resource', '')}" + (f"/{ref['subresource']}" if ref.get("subresource") else "")
    return event["verb"], resource


def succeeded(event: dict[str, Any]) -> bool:
    return 200 <= int((event.get("responseStatus") or {}).get("code", 0)) < 300


# ---------------------------------------------------------------------------- verdict and figures
@dataclass
class Figures:
    scenario: str
    lifecycles: int = 0
    kills: int = 0
    leader_kills: int = 0
    takeovers: list[float] = field(default_factory=list)
    duplicates: int = 0
    orphans: int = 0
    wrong_terminal: int = 0
    pods_created: int = 0
    recreated: int = 0  # planned second creates (exit 137 restarts, pods deleted behind the controller's back)
    already_exists: int = 0
    ambiguous_creates: int = 0  # the client died mid-request: the audit log says 5xx, the object may exist
    stale_services: int = 0  # services left without their pod (a failure, see verify)
    refused_while_starting: int = 0  # 403s from a kube-apiserver whose RBAC caches were still filling
    podgc_deletes: int = 0  # terminating pods left by a delete cut short, force-deleted as podgc would
    status_conflicts: int = 0
    whole_restarts: int = 0  # lifecycles that restart as a whole (restart scope job)
    mixed_attempts: int = 0  # a pod of a new attempt created before every pod of the old one was gone
    counted_twice: int = 0  # a whole-job restart counted more than once on the run's revision
    lost_pods: int = 0  # planned pod incarnations never created
    unaudited_restarts: int = 0  # whole restarts whose order the audit log lost (apiserver SIGKILLed mid-request)
    lease_transitions: int = 0
    lost_lease_exits: int = 0
    apiserver_restarts: int = 0
    apiserver_kills: int = 0
    relists: int = 0
    wall: float = 0.0

    def takeover_summary(self) -> str:
        if not self.takeovers:
            return "-"
        t = sorted(self.takeovers)
        return f"{t[0]:.2f}/{statistics.median(t):.2f}/{t[-1]:.2f}s"

    def line(self) -> str:
        return (f"{self.scenario}: lifecycles={self.lifecycles} kills={self.kills} (leader {self.leader_kills}) "
                f"takeover min/median/max={self.takeover_summary()} duplicates={self.duplicates} "
                f"orphans={self.orphans} wrong-terminal={self.wrong_terminal} pods-created={self.pods_created} "
                f"whole-restarts={self.whole_restarts} mixed-attempts={self.mixed_attempts} "
                f"counted-twice={self.counted_twice} lost-pods={self.lost_pods} "
                f"unaudited-restarts={self.unaudited_restarts} "
                f"planned-recreates={self.recreated} already-exists={self.already_exists} "
                f"ambiguous-creates={self.ambiguous_creates} stale-services={self.stale_services} "
                f"status-409s={self.status_conflicts} lease-transitions={self.lease_transitions} "
                f"lost-lease-exits={self.lost_lease_exits} apiserver-restarts={self.apiserver_restarts} "
                f"(killed {self.apiserver_kills}) "
                f"403s-while-starting={self.refused_while_starting} podgc-deletes={self.podgc_deletes} "
                f"relists={self.relists} wall={self.wall:.1f}s")


def verify(client: Client, namespace: str, plans: list[Plan], audit: Audit, *, user: str, figures: Figures,
           seen: dict[tuple[str, str], set[str]] | None = None, outages: list[tuple[str, str]] = ()) -> list[str]:
    """Judge a finished run; returns the problems (empty: all good) and fills `figures`.

    `outages` are (from, to) audit timestamps of kube-apiserver restarts: a server that has
    just started answers 403 until its RBAC caches fill, so refusals then are expected."""
    problems: list[str] = []
    jobs = {j["metadata"]["name"]: j for j in client.list(PT, namespace=namespace)["items"]}
    for plan in plans:
        got = terminal(jobs.get(plan.name, {}))
        if got != plan.condition:
            figures.wrong_terminal += 1
            problems.append(f"{plan.name} ({plan.outcome}) ended {got}, expected {plan.condition}")
    figures.lifecycles = len(plans)

    pods = {p["metadata"]["name"]: p for p in client.list(PODS, namespace=namespace)["items"]}
    services = {s["metadata"]["name"]: s for s in client.list(SERVICES, namespace=namespace)["items"]}
    want = set().union(*(p.left_after_cleanup() for p in plans))
    if set(pods) != want:
        problems.append(f"pods left: missing {sorted(want - set(pods))}, unexpected {sorted(set(pods) - want)}")
    # A cleanup cut short between a pod and its same-named service (leader killed) must be
    # finished by the next pass (policies.services_to_clean): a podless service is a leftover.
    figures.stale_services = len({name for name in set(services) - want if name not in pods})
    if set(services) != want:
        problems.append(f"services left: missing {sorted(want - set(services))}, "
                        f"unexpected {sorted(set(services) - want)}")
    plan_of = {pod: plan for plan in plans for pod in plan.pods}
    for name, pod in pods.items():
        if name in plan_of and pod["status"].get("phase") != plan_of[name].final_phase(name):
            problems.append(f"pod {name} is {pod['status'].get('phase')}, expected {plan_of[name].final_phase(name)}")
    uids = {j["metadata"]["uid"]: j["metadata"]["name"] for j in jobs.values()}
    for kind, objs in (("pod", pods), ("service", services)):
        for name, obj in objs.items():
            ref = next((r for r in obj["metadata"].get("ownerReferences") or [] if r.get("controller")), None)
            if ref is None or uids.get(ref["uid"]) != ref["name"]:
                figures.orphans += 1
                problems.append(f"orphan {kind} {name}: owner {ref}")

    events = audit.events()
    creates: Counter[tuple[str, str]] = Counter()
    ambiguous: Counter[tuple[str, str]] = Counter()
    for e in events:
        ref = e.get("objectRef") or {}
        if e["verb"] == "create" and ref.get("resource") in ("pods", "services") and not ref.get("subresource"):
            code = int((e.get("responseStatus") or {}).get("code", 0))
            if succeeded(e):
                creates[(ref["resource"], ref.get("name", ""))] += 1
            elif code >= 500 or code == 0:  # e.g. 504: the client was killed before the answer
                ambiguous[(ref["resource"], ref.get("name", ""))] += 1
            elif (e.get("responseStatus") or {}).get("reason") == "AlreadyExists":
                figures.already_exists += 1
    figures.ambiguous_creates = sum(ambiguous.values())
    # incarnations: a create answered 201, or a uid the kubelet saw (catches creates whose
    # answer never arrived); more than planned is a duplicate
    seen = seen or {}
    expected: Counter[tuple[str, str]] = Counter()
    for plan in plans:
        for pod, n in plan.expected_creates().items():
            expected[("pods", pod)] += n
            expected[("services", pod)] += 1
    incarnations: Counter[tuple[str, str]] = Counter()
    for key in sorted(set(creates) | set(expected) | set(seen)):
        incarnations[key] = max(creates[key], len(seen.get(key, ())))
        if incarnations[key] > expected[key]:
            figures.duplicates += incarnations[key] - expected[key]
            problems.append(f"{key[0]} {key[1]} created {incarnations[key]} times, planned {expected[key]}")
        elif creates[key] + ambiguous[key] < expected[key] and len(seen.get(key, ())) < expected[key]:
            figures.lost_pods += expected[key] - max(creates[key], len(seen.get(key, ()))) if key[0] == "pods" else 0
            problems.append(f"{key[0]} {key[1]} created {creates[key]} times, planned {expected[key]}")
    figures.pods_created = sum(n for (res, _), n in incarnations.items() if res == "pods")
    problems += whole_restarts(client, namespace, plans, events, figures)
    figures.recreated = sum(n - 1 for (res, _), n in expected.items() if res == "pods")

    mine = [e for e in events if (e.get("user") or {}).get("username") == user]
    refused = [e for e in mine if int((e.get("responseStatus") or {}).get("code", 0)) == 403]
    figures.refused_while_starting = sum(1 for e in refused if any(a <= e["requestReceivedTimestamp"] <= b for a, b in outages))
    forbidden = sorted({audit_pair(e) for e in refused
                        if not any(a <= e["requestReceivedTimestamp"] <= b for a, b in outages)})
    if forbidden:
        problems.append(f"the controller was refused (403): {forbidden}")
    used = {audit_pair(e) for e in mine}
    if not used <= granted_pairs():
        problems.append(f"the controller used what the ClusterRole does not grant: {sorted(used - granted_pairs())}")
    if problems:
        problems.extend(history(events, plans, pods, jobs, problems))
    figures.status_conflicts = sum(1 for e in mine if (e.get("objectRef") or {}).get("subresource") == "status"
                                   and int((e.get("responseStatus") or {}).get("code", 0)) == 409)
    _, figures.lease_transitions = lease_holder(client, namespace)
    return problems


def whole_restarts(client: Client, namespace: str, plans: list[Plan], events: list[dict[str, Any]],
                   figures: Figures) -> list[str]:
    """The whole-job restarts of the run: each counted once on its job's ControllerRevision
    (attempt 1), and, from the audit log, no pod of the second attempt created before every
    pod of the first was deleted (the API server's own order of the successful requests)."""
    problems = []
    whole = [p for p in plans if p.outcome == "whole"]
    figures.whole_restarts = len(whole)
    revisions = client.list(CONTROLLERREVISIONS, namespace=namespace)["items"]
    attempt = {r["metadata"]["labels"].get("training.kubeflow.org/job-name"): int(
        (r["metadata"].get("annotations") or {}).get(ATTEMPT, 0)) for r in revisions}
    for plan in whole:
        if attempt.get(plan.name) != 1:
            figures.counted_twice += attempt.get(plan.name, 0) > 1
            problems.append(f"{plan.name}: its revision counts {attempt.get(plan.name)} whole-job restarts, planned 1")
        names = set(plan.pods)
        done = sorted((e["stageTimestamp"], e["verb"], e["objectRef"]["name"]) for e in events
                      if succeeded(e) and (e.get("objectRef") or {}).get("resource") == "pods"
                      and not (e.get("objectRef") or {}).get("subresource") and e["verb"] in ("create", "delete")
                      and (e.get("objectRef") or {}).get("name") in names)
        first_gone: dict[str, str] = {}
        second: dict[str, str] = {}
        created: Counter[str] = Counter()
        for stamp, verb, name in done:
            if verb == "delete" and created[name] == 1:
                first_gone.setdefault(name, stamp)
            elif verb == "create":
                created[name] += 1
                if created[name] == 2:
                    second[name] = stamp
        if set(first_gone) != names or set(second) != names:
            # a kube-apiserver SIGKILLed after a request took effect and before its audit event
            # was written: the audit log cannot order this job's restart (the kubelet's samples still do)
            figures.unaudited_restarts += 1
        elif min(second.values()) < max(first_gone.values()):
            figures.mixed_attempts += 1
            problems.append(f"{plan.name}: a pod of attempt 1 created at {min(second.values())} before the last "
                            f"pod of attempt 0 was deleted at {max(first_gone.values())}")
    return problems


def history(events: list[dict[str, Any]], plans: list[Plan], pods: dict[str, Any], jobs: dict[str, Any],
             problems: list[str]) -> list[str]:
    """For each job named in a problem: its plan, conditions, and every write to its children."""
    out = []
    for plan in plans:
        if not any(plan.name in p for p in problems):
            continue
        job = jobs.get(plan.name, {})
        out.append(f"== {plan}")
        out.append(f"   conditions: {[(c['type'], c['status'], c.get('lastTransitionTime')) for c in (job.get('status') or {}).get('conditions') or []]}")
        for name in plan.pods:
            pod = pods.get(name)
            if pod is not None:
                out.append(f"   {name}: uid={pod['metadata']['uid'][:8]} phase={pod['status'].get('phase')} "
                           f"created={pod['metadata']['creationTimestamp']} "
                           f"deleting={pod['metadata'].get('deletionTimestamp')} finalizers={pod['metadata'].get('finalizers')}")
        for e in events:
            ref = e.get("objectRef") or {}
            if ref.get("name", "").startswith(plan.name + "-") or (ref.get("resource") == "pytorchjobs" and ref.get("name") == plan.name):
                if e["verb"] in ("create", "delete", "update", "patch"):
                    out.append(f"   {e.get('stageTimestamp')} {e['user']['username'][:24]:24} {e['verb']:6} "
                               f"{ref.get('resource')}/{ref.get('name')}{'/' + ref['subresource'] if ref.get('subresource') else ''} "
                               f"{(e.get('responseStatus') or {}).get('code')}")
    return out


def iter_logs(procs: list[ControllerProcess], problems: list[str], tail: int = 10) -> Iterator[str]:
    """Each replica's lines about the jobs in `problems` (or its last lines), to read a failure."""
    names = {word.split("-")[0] for p in problems for word in p.split() if "-" in word} | {
        p.split()[0] for p in problems if p.split()}
    for proc in procs:
        lines = proc.log_text().splitlines()
        about = [line for line in lines if any(f"/{n}" in line or f" {n}-" in line for n in names)]
        yield f"--- {proc.name} ({'alive' if proc.alive else 'exited'})\n" + "\n".join(about[-80:] or lines[-tail:])
