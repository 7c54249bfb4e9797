"""The Trainer v2 GitOps world and its readers: real Kubeflow Trainer v2.3.0 + JobSet v0.12.0.

The world is the GitOps one (`testworld.gitops`) with the Trainer instead of
train-controller: kube-controller-manager also runs the job controller (JobSet makes
batch/v1 Jobs) and the PersistentVolume binder (the example's claims are bound to volumes
a cluster admin made), kube-scheduler, kwok with the GPU node pools the example's
`prod` environment selects (GKE A100 nodes, tainted, in topology block b1), the git
server, Flux, Argo CD and the `trainer` part. Sources are projects (a `trainforge.yaml`
and its jobs) copied per engine with every namespace prefixed `<engine>-`, so the two
engines never touch each other's objects.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from e2e_kit import JOBS, REPO_ROOT

from foundation.cluster.kube import Resource
from testworld import gitops
from testworld.argocd import ArgoCD
from testworld.controller_manager import TRAINER_CONTROLLERS, ControllerManager
from testworld.flux import Flux
from testworld.gitserver import GitPart
from testworld.kwok import GPU_TAINT, Kwok, NodePool
from testworld.scheduler import Scheduler
from testworld.trainer import Trainer
from testworld.watching import Missing, wait_for
from testworld.world import World

PROJECT = REPO_ROOT / "examples" / "project-v2"
SOLO = JOBS / "trainer-v2"
TRAINJOBS = Resource("trainer.kubeflow.org", "v1alpha1", "trainjobs", "TrainJob")
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
RUNTIMES = Resource("trainer.kubeflow.org", "v1alpha1", "trainingruntimes", "TrainingRuntime")
PVS = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
PVCS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)

# project-v2's prod places GPU jobs with cloud.google.com/gke-accelerator=nvidia-tesla-a100
# plus the nvidia.com/gpu toleration; t5-jax also selects topology.acme.dev/block=b1.
# Both engines at once: llm-finetune 2 x 4 nodes, allreduce-mpi 2 x 2 half nodes,
# t5-jax 2 x 2 nodes; "gpu" holds the scenario job asking for one untainted GPU.
NODES = (
    NodePool("cpu", 2, cpu="64", memory="512Gi"),
    NodePool("gke-a100", 14, gpus=8, labels={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
                                             "topology.acme.dev/block": "b1"}, taints=(GPU_TAINT,)),
    NodePool("gpu", 2, gpus=8),
)


def make_world(*, run_seconds: float = 2.0) -> World:
    # config_refs=False: examples/project-v2's fraud-xgboost reads a ConfigMap (fraud-data) nobody makes here
    return World([ControllerManager(controllers=TRAINER_CONTROLLERS), Scheduler(),
                  Kwok(nodes=NODES, run_seconds=run_seconds, config_refs=False), GitPart(), Flux(), ArgoCD(), Trainer()])


def project_sources(src: Path, engine: str, out: Path) -> Path:
    """Copy a project (trainforge.yaml and its TrainJob files) into ``out`` with every
    namespace it names prefixed ``<engine>-``: defaults, environments, the allowed list."""
    out.mkdir(parents=True, exist_ok=True)

    def prefix(doc: Any) -> None:
        def named(ns: str) -> str:
            return ns if ns.startswith(f"{engine}-") else f"{engine}-{ns}"
        for holder in [doc.get("defaults") or {}, *(doc.get("environments") or {}).values()]:
            if holder and holder.get("namespace"):
                holder["namespace"] = named(holder["namespace"])
        policy = doc.get("policy") or {}
        if policy.get("allowedNamespaces"):
            policy["allowedNamespaces"] = [named(n) for n in policy["allowedNamespaces"]]
    for path in sorted(src.glob("*.yaml")):
        if path.name == "trainforge.yaml":
            gitops.edit_spec(path, prefix, out / path.name)
        else:
            (out / path.name).write_text(path.read_text())
    return out


def active(obj: dict[str, Any]) -> set[str]:
    return {c["type"] for c in (obj.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}


def condition(obj: dict[str, Any], ctype: str) -> dict[str, Any]:
    return gitops.condition(obj, ctype)


def wait_trainjobs(world: World, namespace: str, want: Callable[[dict[str, Any]], bool], names: set[str],
                   what: str, timeout: float = 240) -> dict[str, dict[str, Any]]:
    """Each named TrainJob in ``namespace`` exists and satisfies ``want``; name -> object."""
    def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        mine = {k[1]: o for k, o in objects.items() if k[1] in names}
        bad = [f"{n}: {sorted(active(o))} {[c.get('message') for c in o.get('status', {}).get('conditions', [])]}"
               for n, o in mine.items() if not want(o)]
        bad += [f"{n}: missing" for n in sorted(names - set(mine))]
        return Missing(", ".join(bad)) if bad else mine
    return wait_for(world.client, TRAINJOBS, check, namespace=namespace, timeout=timeout,
                    what=f"TrainJobs {sorted(names)} in {namespace} {what}")


def get(world: World, namespace: str, name: str) -> dict[str, Any]:
    return world.client.get(TRAINJOBS, namespace, name)


def pods_of(world: World, namespace: str, job: str) -> list[dict[str, Any]]:
    return world.client.list(gitops.RESOURCES["Pod"], namespace=namespace,
                             label_selector=f"jobset.sigs.k8s.io/jobset-name={job}")["items"]


def storage_for(world: World, namespace: str) -> None:
    """What project-v2 expects a cluster to have: the existing claims `pile` and
    `mpi-code` (each pre-bound to a volume), a volume for the claim the tree creates
    (`llm-finetune-ckpt`, standard-rwx, 1Ti, ReadWriteMany), and the ServiceAccount
    `fraud-reader`. The PersistentVolume binder binds them."""
    client = world.client
    client.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    for claim, size, klass in (("pile", "10Ti", ""), ("mpi-code", "1Gi", ""), ("llm-finetune-ckpt", "1Ti", "standard-rwx")):
        volume = f"{namespace}-{claim}"
        client.create(PVS, None, {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume},
                                  "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteMany"],
                                           "storageClassName": klass, "nfs": {"server": "10.0.0.2", "path": f"/{claim}"},
                                           "claimRef": {"namespace": namespace, "name": claim}}})
        if claim != "llm-finetune-ckpt":  # that one comes from the compiled tree
            client.create(PVCS, namespace, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
                                            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": klass,
                                                     "volumeName": volume, "resources": {"requests": {"storage": size}}}})
    client.create(SERVICE_ACCOUNTS, namespace, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                "metadata": {"name": "fraud-reader"}})


# --- whole-job restarts (test_trainer_v2_restarts_e2e.py): no GitOps engine, a few pods -------------

RESTARTS = JOBS / "trainer-v2-restarts"
PODS = gitops.RESOURCES["Pod"]
RESTART_ATTEMPT = "jobset.sigs.k8s.io/restart-attempt"


def make_restart_world() -> World:
    """Trainer + JobSet, the job controller and garbage collector, kube-scheduler and kwok: pods
    without a run-seconds annotation run until a test gives them one (``run_seconds=None``)."""
    return World([ControllerManager(controllers=TRAINER_CONTROLLERS), Scheduler(),
                  Kwok(nodes=(NodePool("cpu", 4, cpu="64", memory="512Gi"),), run_seconds=None), Trainer()])


def apply_in_waves(world: World, objects: list[dict[str, Any]]) -> None:
    """Apply compiled objects as Argo CD does, one sync wave after another (a TrainJob's own
    TrainingRuntime sits in wave -1: Trainer's webhook refuses a TrainJob whose runtime is missing)."""
    from compiler.emit.serialize import dump_all
    from overlays.waves import wave_of

    for wave in sorted({wave_of(o) for o in objects}):
        batch = [o for o in objects if wave_of(o) == wave]
        world.kubectl("apply", "--server-side", "--field-manager=trainforge-e2e", "-f", "-", input=dump_all(batch))
