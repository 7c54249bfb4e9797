"""MPIJob: Worker x nodes plus one Launcher that runs the program through mpirun.

The launcher gets the user's command and no GPUs (unless `roles.launcher.resources`
asks); workers get the GPUs and no command, because the upstream operator starts them
with `sleep 365d` and the launcher execs into them. `slotsPerWorker` follows
`processesPerNode` (auto = GPUs per node, else 1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foundation.frameworks.base import (
    Adapter,
    Facts,
    Launcher,
    OperatorInit,
    ReplicaPlan,
    TrainerV2,
    env_var,
    template_part,
)
from foundation.frameworks.operator import (
    INT32,
    STRING,
    Operator,
    StatusRule,
    container_list,
    only,
    replica_map,
)
from foundation.frameworks.stock_runtimes import LAUNCHER, NODE

if TYPE_CHECKING:
    from schemas.trainjob import TrainJobSpec

FACTS = Facts(
    name="mpi",
    kind="MPIJob",
    plural="mpijobs",
    replica_specs="mpiReplicaSpecs",
    replica_types=("Launcher", "Worker"),
    container="mpi",
    port_name=None,
    port=None,
    default_restart="Never",
    operator_name="mpijob-controller",
    container_by_name=False,  # both MPI operators exec into and read the first container
    fixed_roles=("launcher",),
    processes_per_node=True,
    # seen with real Kueue v0.17.0 (tests/e2e/test_kueue_e2e.py): a queued v1 MPIJob gets no Workload;
    # its kubeflow.org/mpijob integration is the mpi-operator's v2beta1 MPIJob (v0.19.2 too)
    kueue_unmanaged="Kueue manages only the mpi-operator's kubeflow.org/v2beta1 MPIJob",
)


def plan(spec: TrainJobSpec) -> list[ReplicaPlan]:
    if spec.mpi is not None and spec.mpi.runLauncherAsWorker:
        # the mpi-operator's runLauncherAsWorker (target mpi-operator only): the launcher runs MPI
        # processes too, so it is one of the nodes (their resources, the program) beside nodes-1 workers
        workers = [ReplicaPlan("Worker", spec.nodes - 1, inherit_command=False)] if spec.nodes > 1 else []
        return [ReplicaPlan("Launcher", 1), *workers]
    launcher = spec.roles.get("launcher")
    return [
        ReplicaPlan(
            "Launcher",
            1,
            accelerated=False,
            resources=launcher.resources if launcher else None,
        ),
        ReplicaPlan("Worker", spec.nodes, inherit_command=False),
    ]


def slots_per_worker(spec: TrainJobSpec) -> int:
    if isinstance(spec.processesPerNode, int):
        return spec.processesPerNode
    worker = spec.roles.get("worker")  # the workers' own resources replace the job's
    resources = worker.resources if worker is not None and worker.resources is not None else spec.resources
    return resources.gpu or 1


def job_fields(spec: TrainJobSpec) -> dict[str, Any]:
    return {"slotsPerWorker": slots_per_worker(spec)}


# --- controller half: the launcher's Open MPI / Intel MPI wiring (semantics §7). Workers
# get no rendezvous variables; the launcher reaches them through kubexec.sh.

CONFIG_MOUNT = "/etc/mpi"  # the ConfigMap of kubexec.sh and the hostfile, on every pod (controller.jobs.mpi)


def is_gpu_launcher(job: dict[str, Any]) -> bool:
    """Any launcher container limit whose key ends in `.com/gpu` or mentions `gpu`."""
    launcher = job["spec"][FACTS.replica_specs].get("Launcher") or {}
    for container in template_part(launcher, "spec").get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        if any(key.endswith(".com/gpu") or "gpu" in key for key in limits):
            return True
    return False


def rendezvous_env(job: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    """Env appended to the launcher's first container; nothing for workers."""
    if replica_type != "Launcher":
        return []
    env = [
        env_var("OMPI_MCA_plm_rsh_agent", f"{CONFIG_MOUNT}/kubexec.sh"),
        env_var("OMPI_MCA_orte_default_hostfile", f"{CONFIG_MOUNT}/hostfile"),
    ]
    if not is_gpu_launcher(job):
        env += [env_var("NVIDIA_VISIBLE_DEVICES", ""), env_var("NVIDIA_DRIVER_CAPABILITIES", "")]
    launcher = job["spec"][FACTS.replica_specs]["Launcher"]
    containers = template_part(launcher, "spec").get("containers") or [{}]
    present = {item.get("name") for item in (containers[0].get("env") or []) + env}
    if "I_MPI_HYDRA_BOOTSTRAP" not in present:
        env.append(env_var("I_MPI_HYDRA_BOOTSTRAP", "rsh"))
    if "I_MPI_HYDRA_BOOTSTRAP_EXEC" not in present:
        env.append(env_var("I_MPI_HYDRA_BOOTSTRAP_EXEC", f"{CONFIG_MOUNT}/kubexec.sh"))
    return env


# Trainer v2: the stock MPI runtime is deepspeed-distributed (OpenMPI, runLauncherAsNode:
# the launcher is one of the nodes); numProcPerNode is the hostfile's slots, as v1's
# slotsPerWorker.
TRAINER_V2 = TrainerV2(
    runtime="deepspeed-distributed",
    program_jobs=(LAUNCHER, NODE),
    reserved_env=(
        "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_plm_rsh_args", "OMPI_MCA_orte_keep_fqdn_hostnames",
        "OMPI_MCA_orte_set_default_slots",
    ),
    processes=slots_per_worker,
)


def _defaults(facts: Facts, spec: dict[str, Any], replicas: dict[str, Any], run_policy: dict[str, Any]) -> None:
    """The operator's own for MPIJob: the legacy top-level cleanPodPolicy kept in step with
    runPolicy's (runPolicy wins if set), Launcher 1 and Worker 0 replicas, restart Never."""
    if spec.get("cleanPodPolicy") is None and run_policy.get("cleanPodPolicy") is None:
        spec["cleanPodPolicy"] = run_policy["cleanPodPolicy"] = "None"
    if run_policy.get("cleanPodPolicy") is not None:
        spec["cleanPodPolicy"] = run_policy["cleanPodPolicy"]
    else:
        run_policy["cleanPodPolicy"] = spec["cleanPodPolicy"]
    for name, default_count in (("Launcher", 1), ("Worker", 0)):
        replica = replicas.get(name)
        if isinstance(replica, dict):
            if replica.get("replicas") is None:
                replica["replicas"] = default_count
            if not replica.get("restartPolicy"):
                replica["restartPolicy"] = "Never"


def _reconciler_check(job: dict[str, Any] | Any) -> list[str]:
    """Upstream's ValidateV1MpiJobSpec; it stops at the first error (its map order is random, ours sorted)."""
    specs = replica_map(job, FACTS.replica_specs)
    if specs is None:
        return ["MPIReplicaSpecs is not valid"]
    for rtype in sorted(specs):
        replica = specs[rtype]
        containers = container_list(replica)
        if not containers:
            return [f"MPIReplicaSpecs is not valid: containers definition expected in {rtype}"]
        if rtype not in FACTS.replica_types:
            return [f"MPIReplicaType is {rtype} but must be one of [{' '.join(FACTS.replica_types)}]"]
        for container in containers:
            if not (isinstance(container, dict) and container.get("image")):
                return [f"MPIReplicaSpec is not valid: Image is undefined in the container of {rtype}"]
            if not container.get("name"):
                return [f"MPIReplicaSpec is not valid: ImageName is undefined in the container of {rtype}"]
        if rtype == "Launcher" and replica.get("replicas") is not None and replica["replicas"] != 1:
            return ["MPIReplicaSpec is not valid: There must be only 1 launcher replica"]
    if "Launcher" not in specs:
        return ["MPIReplicaSpec is not valid: Master ReplicaSpec must be present"]
    return []


ADAPTER = Adapter(
    facts=FACTS, plan=plan, job_fields=job_fields, rendezvous_env=rendezvous_env, trainer_v2=TRAINER_V2,
    # the operator names the launcher pod {job}-launcher (its ServiceAccount and exec Role too)
    # and its hostfile ConfigMap {job}-config
    launcher=Launcher("launcher", "Launcher", "the MPI launcher", ("launcher", "config"), workers="Worker"),
    # kubectl-delivery copies kubectl into the launcher pod before mpirun starts
    operator_init=OperatorInit(
        "kubectl-delivery", "Launcher",
        refusal_fix="run MPI jobs in an environment whose policy.podSecurity is baseline",
    ),
    # the launcher decides; upstream's MPIJob failure reason carries the kind twice: MPIJobMPIJobFailed
    operator=Operator(StatusRule(deciders=("Launcher",), restart="exit-code", failed_reason=f"{FACTS.kind}Failed"),
                      only("Launcher"), defaults=_defaults, reconciler_check=_reconciler_check,
                      spec_fields={"cleanPodPolicy": STRING, "mainContainer": STRING, "slotsPerWorker": INT32},
                      implicit=((("slotsPerWorker",), 1),)),  # the hostfile's `slots` when unset
)
