"""What the scale benchmark times: a namespace's jobs from apply to every one Succeeded.

Two watches (pods, PyTorchJobs) of the namespace under test, started before the apply,
each keeping a few bytes per object instead of the object (8,000 pods of ~40 KB parsed
JSON would cost this process more than the controller under test). Times are taken on
the watch thread as events arrive, so the three milestones (every pod created, every job
Running, every job Succeeded) are when the API server said so, for either controller
alike. A job counts as Running from the first event that shows `Running` or `Succeeded`
True: a job whose pods finish between two of the controller's passes may go from
Created to Succeeded, and it was running all the same.

What a user saw of each run, beside when it ended: how many jobs ever showed `Running` (True)
before `Succeeded`, and how long after its Master pod was first seen `Succeeded` the job
said so (a controller that writes fewer statuses under load may skip `Running` and report
the end late; its request count alone would call that a win).

`pytorch_job` is the workload: Master x1 + Worker x(n-1) with small requests (500 kwok
nodes hold 8,000 of them many times over) and the test world's kwok annotations, so
every pod runs for `run_seconds` and exits 0 (None: runs until deleted, so a run times every
pod created and every job Running, not Succeeded).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Optional

from bench import kube_tools as kt
from foundation.cluster.kube import PODS, Client
from schemas.upstream import JOB_NAME_LABEL, TYPE_LABEL
from testworld.stages import EXIT_CODE, RUN_SECONDS


def pytorch_job(name: str, pods: int, run_seconds: Optional[float], node: Optional[str] = None) -> dict[str, Any]:
    """A PyTorchJob of `pods` pods whose containers run `run_seconds` and exit 0 under kwok (None: they
    run until deleted); with `node`, its pods are bound to that node by their template (`nodeName`: no
    scheduler involved)."""
    runs = "forever" if run_seconds is None else f"{run_seconds:g}"
    def replica(count: int) -> dict[str, Any]:
        container = {"name": "pytorch", "image": "ghcr.io/acme/bert:1.4.2", "command": ["python", "train.py"],
                     "ports": [{"name": "pytorchjob-port", "containerPort": 23456}],
                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                   "limits": {"cpu": "100m", "memory": "128Mi"}}}
        template = {"metadata": {"annotations": {RUN_SECONDS: runs, EXIT_CODE: "0"}},
                    "spec": {"containers": [container], **({"nodeName": node} if node else {})}}
        return {"replicas": count, "restartPolicy": "OnFailure", "template": template}

    specs = {"Master": replica(1)}
    if pods > 1:
        specs["Worker"] = replica(pods - 1)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name},
            "spec": {"pytorchReplicaSpecs": specs}}


def _condition(job: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


@dataclass
class Milestones:
    """Seconds from the apply's start; None when not reached."""

    pods_created: Optional[float]
    jobs_running: Optional[float]
    jobs_succeeded: Optional[float]
    failed_jobs: int
    shown_running: int = 0  # jobs seen with Running True before Succeeded
    report_lags: tuple[float, ...] = ()  # per job: its Master pod seen Succeeded -> the job seen Succeeded (s)


class Lifecycle:
    """Follows one namespace's pods and PyTorchJobs; `wait_*` block until a milestone."""

    def __init__(self, client: Client, namespace: str, *, jobs: int, pods: int) -> None:
        self.jobs, self.pods = jobs, pods
        self.running_at: dict[str, float] = {}
        self.succeeded_at: dict[str, float] = {}
        self.failed: set[str] = set()
        self.shown_running: set[str] = set()
        self.master_done_at: dict[str, float] = {}  # job -> when its Master pod was first seen Succeeded
        self.t0 = time.perf_counter()
        self._pods = kt.Follow(client, PODS, namespace, keep=self._pod_state)
        try:
            self._jobs = kt.Follow(client, kt.PYTORCHJOBS, namespace, keep=self._job_state)
        except BaseException:
            self._pods.stop()
            raise

    def _pod_state(self, pod: dict[str, Any]) -> None:
        """What the pod watch keeps per pod: nothing; a Master pod's first Succeeded is noted per job."""
        labels = pod["metadata"].get("labels") or {}
        if labels.get(TYPE_LABEL) == "master" and (pod.get("status") or {}).get("phase") == "Succeeded":
            self.master_done_at.setdefault(str(labels.get(JOB_NAME_LABEL)), time.perf_counter())

    def _job_state(self, job: dict[str, Any]) -> str:
        """What the job watch keeps per job (runs under its lock): the milestone times."""
        name, now = job["metadata"]["name"], time.perf_counter()
        if _condition(job, "Succeeded"):
            self.succeeded_at.setdefault(name, now)
            self.running_at.setdefault(name, now)
            return "Succeeded"
        if _condition(job, "Failed"):
            self.failed.add(name)
            return "Failed"
        if _condition(job, "Running"):
            self.running_at.setdefault(name, now)
            self.shown_running.add(name)
            return "Running"
        return "Created"

    def start_clock(self) -> None:
        self.t0 = time.perf_counter()

    def wait_pods(self, timeout: float) -> float:
        """Seconds from the clock's start to the event that showed the last pod."""
        self._pods.wait(lambda objs: len(self._pods.first_seen) >= self.pods, timeout=timeout,
                        what=f"{self.pods} pods")
        return max(self._pods.first_seen.values()) - self.t0

    def wait_running(self, timeout: float) -> float:
        self._jobs.wait(lambda objs: len(self.running_at) >= self.jobs or bool(self.failed), timeout=timeout,
                        what=f"{self.jobs} jobs Running")
        if self.failed:
            raise RuntimeError(f"{len(self.failed)} jobs Failed, e.g. {sorted(self.failed)[:3]}")
        return max(self.running_at.values()) - self.t0

    def wait_succeeded(self, timeout: float) -> float:
        self._jobs.wait(lambda objs: len(self.succeeded_at) + len(self.failed) >= self.jobs, timeout=timeout,
                        what=f"{self.jobs} jobs Succeeded")
        if self.failed:
            raise RuntimeError(f"{len(self.failed)} jobs Failed, e.g. {sorted(self.failed)[:3]}")
        return max(self.succeeded_at.values()) - self.t0

    def milestones(self) -> Milestones:
        """What was reached so far (after a timeout, the partial picture)."""
        seen = sorted(self._pods.first_seen.values())
        return Milestones(
            pods_created=seen[self.pods - 1] - self.t0 if len(seen) >= self.pods else None,
            jobs_running=max(self.running_at.values()) - self.t0 if len(self.running_at) >= self.jobs else None,
            jobs_succeeded=max(self.succeeded_at.values()) - self.t0 if len(self.succeeded_at) >= self.jobs else None,
            failed_jobs=len(self.failed),
            shown_running=len(self.shown_running),
            report_lags=tuple(at - self.master_done_at[job] for job, at in self.succeeded_at.items()
                              if job in self.master_done_at),
        )

    def counts(self) -> dict[str, int]:
        return {"pods": len(self._pods.first_seen), "running": len(self.running_at),
                "succeeded": len(self.succeeded_at), "failed": len(self.failed)}

    def stop(self) -> None:
        self._pods.stop()
        self._jobs.stop()
