"""Kueue's side of the Kueue end-to-end scenarios: one round per Kueue release, the platform
team's queue objects and a log of every Workload state.

Where it sits: `test_kueue_e2e.py` runs its scenarios once per release (v0.17.0, v0.19.2) in
the one session GitOps world; a `Round` keys everything a round makes (namespaces, the
repository folder and so the Flux Kustomization and Argo CD Application, ClusterQueues) by
its release, so nothing one round leaves (jobs, Workloads, a queue's usage) is seen by the
next. The v0.19 round enables the integrations train-compile's Kueue notice names
(`notice_frameworks`): the notice's advice is what makes its jobs queued at all.
The module asserts on what Kueue did (quota held, admissions, evictions) from the log
rather than from one read at the end, so a moment when Kueue reserved more than the quota
cannot slip between two reads. A watch runs for the round from a listed resourceVersion
and keeps, per Workload, every state seen and, per ClusterQueue, the most GPUs reserved at once.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from e2e_kit import JOBS

from compiler.emit import kueue_note
from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource
from testworld import gitops
from testworld.kueue import FRAMEWORKS, V0_19, VERSION, Kueue

ENGINES = gitops.ENGINES
KUEUE_JOBS = JOBS / "kueue"  # the job files' namespace (`kueue`) is replaced by the round's
# release -> the round's name: its namespaces' stem (<engine>-<name>), repository folder
# and engine objects' prefix (the Kustomization and Application <name>-default)
ROUNDS = {VERSION: "kueue", V0_19: "kueue19"}
QUOTA_GPUS = 4
QUOTA_FILES = ["q-pytorch.yaml", "q-tf.yaml", "q-xgb.yaml", "q-jax.yaml"]  # 2 GPUs each: 8 asked, 4 in the quota
GPU = "nvidia.com/gpu"
A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}  # the a100 kwok pool's label
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
# Flux's health wait per reconciliation. The Kustomization waits for every job it applied
# (wait: true) and applies nothing newer meanwhile: with the default 5m a running job would
# hold the next commit back until it ends, and the preemptor would never meet its victim.
FLUX_TIMEOUT = "10s"


class Round:
    """One release's round of the scenarios: its names and its Kueue part (set by the fixture,
    confined to the round's namespaces)."""

    part: Kueue

    def __init__(self, version: str) -> None:
        self.version, self.name = version, ROUNDS[version]
        self.prefix = self.name
        self.app = self.kustomization = f"{self.name}-default"
        self.namespaces = [self.ns(engine) for engine in ENGINES]

    def ns(self, engine: str) -> str:
        return f"{engine}-{self.name}"

    def cluster_queue(self, engine: str) -> str:
        return f"{self.ns(engine)}-gpus"

    def sources(self, files: Iterable[Path], engine: str, out: Path) -> None:
        """Copy job files into `out`, each job in this round's namespace for `engine`."""
        for src in files:
            gitops.edit_spec(src, lambda d: d["metadata"].__setitem__("namespace", self.ns(engine)), out / src.name)


NOTICE = re.compile(r"^  Kueue: .* need (?P<names>.*) in its integrations\.frameworks:", re.M)


def notice_frameworks(out: Path) -> list[str]:
    """The integrations `train-compile build` of the scenario jobs tells a Kueue v0.19 user to
    add (the line under its jobs table, compiler/emit/kueue_note.py), read from what it prints."""
    exe = Path(sys.executable).with_name("train-compile")
    done = subprocess.run([str(exe), "build", str(KUEUE_JOBS), "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    found = NOTICE.search(done.stderr)
    assert found, f"no Kueue notice in:\n{done.stderr}"
    return re.findall(r'"([^"]+)"', found["names"])


def frameworks(version: str, out: Path) -> tuple[str, ...]:
    """The integrations the round's Kueue enables: the part's default on v0.17 (its shipped
    list has the v1 kinds); on v0.19 what its shipped configuration keeps of the kinds
    trainforge writes plus exactly what the notice names."""
    if version == VERSION:
        return FRAMEWORKS
    return (*notice_frameworks(out), *sorted(kueue_note.V019_DEFAULTS))


KUEUE_API = "kueue.x-k8s.io/v1beta2"


def cluster_queue_object(name: str, namespace_selector: dict[str, Any], gpu_quota: int) -> dict[str, Any]:
    """A ClusterQueue over the a100 flavor covering what the compiled pods ask for (Kueue
    admits no workload asking for a resource its ClusterQueue does not cover)."""
    quota = {"cpu": "64", "memory": "256Gi", GPU: str(gpu_quota)}
    if not gpu_quota:
        quota = dict.fromkeys(quota, "0")
    return {"apiVersion": KUEUE_API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": {
        "namespaceSelector": namespace_selector, "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [{"coveredResources": list(quota), "flavors": [
            {"name": "a100", "resources": [{"name": r, "nominalQuota": q} for r, q in quota.items()]}]}]}}


def local_queue_object(name: str, namespace: str, cluster_queue: str) -> dict[str, Any]:
    return {"apiVersion": KUEUE_API, "kind": "LocalQueue", "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue}}


def queue_objects(rnd: Round, engine: str) -> list[dict[str, Any]]:
    """What a platform team sets up once per team: a flavor, a ClusterQueue with a GPU
    quota that preempts lower priorities, the team's LocalQueue, two priorities (the
    flavor and the priorities are the same objects in every round)."""
    ns = rnd.ns(engine)
    return [
        {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "a100"}, "spec": {"nodeLabels": A100}},
        cluster_queue_object(rnd.cluster_queue(engine), {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                             QUOTA_GPUS),
        local_queue_object("gpu-queue", ns, rnd.cluster_queue(engine)),
        {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "low"}, "value": 100},
        {"apiVersion": KUEUE_API, "kind": "WorkloadPriorityClass", "metadata": {"name": "high"}, "value": 1000},
    ]


def apply(world, obj: dict[str, Any], manager: str = "platform-team") -> None:
    world.kubectl("apply", "--server-side", f"--field-manager={manager}", "-f", "-", input=json.dumps(obj))


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return gitops.condition(obj, ctype)


def reserving(workload: dict[str, Any]) -> bool:
    """The workload holds quota now: QuotaReserved and not Finished."""
    return condition(workload, "QuotaReserved").get("status") == "True" \
        and condition(workload, "Finished").get("status") != "True"


def gpus(workload: dict[str, Any]) -> int:
    admission = (workload.get("status") or {}).get("admission") or {}
    return sum(int((a.get("resourceUsage") or {}).get(GPU, 0)) for a in admission.get("podSetAssignments") or [])


class WorkloadLog:
    """Every state of every Workload in the round's namespaces, from a watch running for
    the whole round: what Kueue reserved at each moment, not only at the end."""

    def __init__(self, kubeconfig: Path, namespaces: list[str]) -> None:
        self.namespaces = set(namespaces)
        self.client = Client.connect(str(kubeconfig), pool_size=2)
        self.current: dict[tuple[str, str], dict[str, Any]] = {}
        self.history: list[dict[str, Any]] = []  # each ADDED/MODIFIED workload as seen
        self.peak: dict[str, int] = {}  # ClusterQueue -> most GPUs reserved at once
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="workload-log", daemon=True)
        self.thread.start()

    def _seen(self, obj: dict[str, Any], deleted: bool = False) -> None:
        meta = obj["metadata"]
        if meta.get("namespace") not in self.namespaces:
            return
        with self.lock:
            key = (meta["namespace"], meta["name"])
            if deleted:
                self.current.pop(key, None)
            else:
                self.current[key] = obj
                self.history.append(obj)
            usage: dict[str, int] = {}
            for wl in self.current.values():
                if reserving(wl):
                    queue = wl["status"]["admission"]["clusterQueue"]
                    usage[queue] = usage.get(queue, 0) + gpus(wl)
            for queue, used in usage.items():
                self.peak[queue] = max(self.peak.get(queue, 0), used)

    def _run(self) -> None:
        while not self.stopped.is_set():
            try:
                listed = self.client.list(WORKLOADS)
                for obj in listed.get("items") or []:
                    self._seen(obj)
                version = listed["metadata"]["resourceVersion"]
                for event in self.client.watch(WORKLOADS, resource_version=version, timeout_seconds=5):
                    if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                        self._seen(event["object"], deleted=event["type"] == "DELETED")
                    elif event.get("type") == "ERROR":
                        break
                    if self.stopped.is_set():
                        return
            except (errors.ApiError, errors.Retryable, OSError):
                time.sleep(0.5)

    def of_job(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Every state seen of the workload(s) owned by the job `namespace/name`."""
        with self.lock:
            return [w for w in self.history if w["metadata"]["namespace"] == namespace
                    and any(o.get("name") == name for o in w["metadata"].get("ownerReferences") or [])]

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=10)
        self.client.close()
