"""kwok v0.8.0 as the world's kubelet: fake nodes with real capacity, pods that run and exit.

Why it is shaped so: no container runtime runs here, yet the controllers under test must
see pods go Running, exit with a code, restart with a growing ``restartCount`` and vanish
on delete, as a kubelet reports them, with pods placed by the real kube-scheduler. kwok
does exactly that from stages; ours are in ``testworld.stages`` (the pod annotations
that choose run time and exit codes are documented there). It manages only nodes
annotated ``kwok.x-k8s.io/node=fake`` (the ones ``add_nodes`` creates), so it never
touches anything else, serves its health endpoint on a free loopback port, and hands out
pod IPs from ``cidr``.

The rest of the kubelet: beside kwok runs ``testworld.kubelet`` (a Python process of this
part, its log ``kubelet.log``), which kwok's start stage waits for: it fails the pull of an
image ``bad_images`` matches (``ErrImagePull``, then ``ImagePullBackOff``), keeps a pod whose
Secret or ConfigMap does not exist waiting (``CreateContainerConfigError``, or
``ContainerCreating`` with a ``FailedMount`` Event for a volume) until it is created, writes
the kubelet's Events for both, and gives every container a log.

Logs: kwok is also the nodes' kubelet API, so ``pods/log`` through the API server returns the
file a ``Logs`` object names for the pod: by default the one ``testworld.kubelet`` writes
(the container's command line, its exit), or a test's own (``testworld.podlogs``: ``serve``,
``write``).

Nodes: the API server taints every new node ``node.kubernetes.io/not-ready:NoSchedule``
and, with no node-lifecycle controller, nobody lifts it; ``add_nodes`` waits until kwok
reports each node Ready and removes that taint itself.

API:
  ``Kwok(nodes=POD_WORLD_NODES, run_seconds=1.0, exit_code=0, restart_delay=1.0,
  bad_images=DEFAULT_BAD_IMAGES, config_refs=True, logs=True, pull_backoff=10.0)`` is a
  ``Part`` named ``kwok``; the node pools are created once it is ready. The first three
  values are the defaults for pods without the annotations; ``run_seconds=None`` lets such
  pods run until deleted (a world where only annotated pods end). ``bad_images``: a regular
  expression (Python's ``re``, searched in the image reference; None: every pull succeeds);
  by default an image with the word ``does-not-exist`` or ``typo`` in it, e.g.
  ``ghcr.io/acme/train:does-not-exist``. ``config_refs=False``: Secrets and ConfigMaps are
  not looked up (a world running examples whose objects nobody made). ``logs=False``: no
  log unless a test serves one. ``pull_backoff``: the first image pull back-off (the
  kubelet's is 10 s, doubling to 300 s). With all three off no ``testworld.kubelet`` runs
  and pods start as soon as kwok sees them (the scale benchmarks' world).
  ``NodePool(prefix, count, cpu=, memory=, pods=, gpus=, gpu_resource=, labels=, taints=)``
  ``add_nodes(client, pool) -> list[str]``: create a pool's nodes (Ready, untainted) on a
  running world, e.g. ``add_nodes(world.client, NodePool("big", 3, gpus=8))``.
  ``stages.RUN_SECONDS`` / ``EXIT_CODE`` / ``EXIT_REASON`` / ``RESTART_DELAY``: annotation keys.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from . import podlogs, stages
from .controlplane import ManagedProcess
from .kubelet_rules import DEFAULT_BAD_IMAGES
from .part import LOOPBACK, PartError, ProcessPart, free_port, http_ok
from .paths import REPO_ROOT

if TYPE_CHECKING:
    from foundation.cluster.kube import Client

    from .world import World

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


@dataclass(frozen=True)
class NodePool:
    """``count`` identical nodes named ``{prefix}-{i}``."""

    prefix: str
    count: int = 1
    cpu: str = "96"
    memory: str = "1Ti"
    pods: str = "110"
    gpus: int = 0
    gpu_resource: str = "nvidia.com/gpu"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Mapping[str, str]] = ()

    def node(self, index: int) -> dict[str, Any]:
        name = f"{self.prefix}-{index}"
        capacity = {"cpu": self.cpu, "memory": self.memory, "pods": self.pods, "ephemeral-storage": "2Ti"}
        if self.gpus:
            capacity[self.gpu_resource] = str(self.gpus)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                  "type": "kwok", "testworld.trainforge.dev/pool": self.prefix, **self.labels}
        return {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {stages.NODE_ANNOTATION[0]: stages.NODE_ANNOTATION[1]}},
            "spec": {"taints": [dict(t) for t in self.taints]},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }


# GPU placement as the examples ask for it: examples/project's dev environment selects on
# NVIDIA GPU feature discovery's product label, prod on GKE's accelerator label with the
# nvidia.com/gpu taint, kitchen-sink on the p5.48xlarge instance type.
POD_WORLD_NODES: tuple[NodePool, ...] = (
    NodePool("cpu", 2, cpu="64", memory="512Gi"),
    NodePool("a100", 4, gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "8"}),
    NodePool("h100", 4, gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
                                        "node.kubernetes.io/instance-type": "p5.48xlarge"}),
    NodePool("gke-a100", 2, gpus=8, labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}, taints=(GPU_TAINT,)),
    NodePool("gke-h100", 2, gpus=8, labels={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}, taints=(GPU_TAINT,)),
)


def _nodes_resource() -> Any:
    from foundation.cluster.kube import (
        Resource,  # lazy: the part table imports without the controller
    )

    return Resource("", "v1", "nodes", "Node", namespaced=False)


def add_nodes(client: Client, pool: NodePool, *, timeout: float = 60.0) -> list[str]:
    """Create the pool's nodes; return their names once kwok made each Ready and the
    not-ready taint is gone (so the scheduler may place pods there)."""
    nodes = _nodes_resource()
    names = []
    for i in range(pool.count):
        body = pool.node(i)
        client.create(nodes, None, body, answer=False)
        names.append(body["metadata"]["name"])
    pending = set(names)
    deadline = time.monotonic() + timeout
    while pending:
        # one list per poll (not a GET per node): pools of hundreds of nodes stay cheap
        listed = client.list(nodes, label_selector=f"testworld.trainforge.dev/pool={pool.prefix}")["items"]
        for node in listed:
            name = node["metadata"]["name"]
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (node.get("status") or {}).get("conditions") or [])
            if name not in pending or not ready:
                continue
            taints = (node.get("spec") or {}).get("taints") or []
            kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
            if kept != taints:
                client.patch(nodes, None, name, {"spec": {"taints": kept or None}})
            pending.discard(name)
        if pending:
            if time.monotonic() > deadline:
                raise PartError(f"kwok: nodes {sorted(pending)[:5]} ({len(pending)} in all) not Ready within "
                                f"{timeout:.0f}s; see kwok.log")
            time.sleep(0.1)
    return names


class Kwok(ProcessPart):
    name = "kwok"
    builds = ("kwok",)

    def __init__(self, *, nodes: Sequence[NodePool] = POD_WORLD_NODES, run_seconds: float | None = 1.0,
                 exit_code: int = 0, restart_delay: float = 1.0, cidr: str = "10.244.0.0/16",
                 bad_images: str | None = DEFAULT_BAD_IMAGES, config_refs: bool = True, logs: bool = True,
                 pull_backoff: float = 10.0) -> None:
        super().__init__()
        self.pools = tuple(nodes)
        self.run_seconds, self.exit_code, self.restart_delay = run_seconds, exit_code, restart_delay
        self.cidr = cidr
        if bad_images:
            re.compile(bad_images)  # a bad pattern fails here, not in the child
        self.bad_images, self.config_refs, self.logs, self.pull_backoff = bad_images, config_refs, logs, pull_backoff
        self.port = 0
        self.node_names: list[str] = []
        self.kubelet: ManagedProcess | None = None

    @property
    def prepares(self) -> bool:
        """Does testworld.kubelet run (and kwok wait for it before starting a pod)?"""
        return bool(self.bad_images or self.config_refs or self.logs)

    def argv(self, world: World) -> list[str]:
        self.port = free_port()
        config = world.dir / "kwok-stages.yaml"
        config.write_text(stages.stages(run_seconds=self.run_seconds, exit_code=self.exit_code,
                                        restart_delay=self.restart_delay, prepared=self.prepares))
        return [
            self.binary("kwok"),
            f"--kubeconfig={world.kubeconfig}",
            f"--config={config}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={'='.join(stages.NODE_ANNOTATION)}",
            f"--server-address={LOOPBACK}:{self.port}",
            "--node-ip=10.128.0.1",
            # the kubelet API the API server dials for pods/log: the nodes report this port and
            # localhost as their Hostname address, which it prefers (as kwokctl sets kwok up)
            f"--node-port={self.port}",
            "--node-name=localhost",
            f"--enable-crds={','.join(podlogs.ENABLED)}",
            f"--cidr={self.cidr}",
        ]

    def before(self, world: World) -> None:
        world.install_crds(podlogs.crd_paths())

    def ready(self) -> bool:
        return http_ok(f"http://{LOOPBACK}:{self.port}/healthz")

    def after(self, world: World) -> None:
        if self.prepares:
            self.start_kubelet(world)
        for pool in self.pools:
            self.node_names += add_nodes(world.client, pool)

    def kubelet_argv(self, world: World) -> list[str]:
        argv = [sys.executable, "-m", "testworld.kubelet", f"--kubeconfig={world.kubeconfig}",
                f"--pull-backoff={self.pull_backoff}"]
        if self.logs:
            argv.append(f"--logs-dir={world.dir / 'pod-logs'}")
        if self.bad_images:
            argv.append(f"--bad-images={self.bad_images}")
        if not self.config_refs:
            argv.append("--no-config-refs")
        return argv

    def start_kubelet(self, world: World) -> None:
        log = world.dir / "kubelet.log"
        self.kubelet = ManagedProcess("kubelet", self.kubelet_argv(world), log, world.dir,
                                      env={"PYTHONPATH": str(REPO_ROOT)})
        self.kubelet.start()
        kubelet = self.kubelet

        def ready() -> bool:
            if (code := kubelet.exited()) is not None:
                raise PartError(f"testworld.kubelet exited with code {code}; last log lines:\n{kubelet.tail()}\n"
                                f"see {log}")
            return log.exists() and " ready\n" in log.read_text(errors="replace")
        self.wait(ready, "testworld.kubelet ready")

    def dead(self) -> str | None:
        if self.kubelet is not None and (code := self.kubelet.exited()) is not None:
            return f"testworld.kubelet exited unexpectedly with code {code}; see {self.kubelet.log_path}"
        return super().dead()

    def stop(self) -> None:
        try:
            if self.kubelet is not None:
                self.kubelet.stop(self.stop_timeout)
        finally:
            super().stop()
