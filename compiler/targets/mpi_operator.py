"""The `mpi-operator` target: the mpi-operator's MPIJob (`kubeflow.org/v2beta1`), for framework mpi.

The job has the v1 MPIJob's shape (Launcher x1 running the program through mpirun, Worker x
nodes, or the launcher as one of the nodes with `mpi.runLauncherAsWorker`), built by the same
lowering helpers, with the v2beta1 fields `spec.mpi` sets (`foundation.frameworks.mpi_operator`)
and `slotsPerWorker` from `processesPerNode`; `cleanPodPolicy` is Running unless
`policy.cleanPods` says otherwise (the operator's own default, None, leaves the sshd workers
running after the job). The workers get no command unless `roles.worker.command` gives one, so
the mpi-operator starts them with `sshd -De` and the launcher's mpirun reaches them over SSH
with the keys it mounts at `sshAuthMountPath`; per-role settings (`roles.launcher`,
`roles.worker`) apply as under kubeflow-v1. Pod templates sit where v1's do and the operator makes each pod from
its template whole, adding no init container, so the pod rules and the pod security review
judge them as written. The Training Operator's admission rules do not apply (the
mpi-operator validates the job itself; what it refuses is in `mpi_operator_rules`).

Kueue manages this MPIJob (its `kubeflow.org/mpijob` integration, in the default
configuration of v0.17 and v0.19), so a queue is written as on any managed kind. Gang
scheduling is the operator's: started with `--gang-scheduling`, it makes the job's PodGroup
and decorates the pods itself, and it refuses to run a job whose PodGroup it does not own,
so only `runPolicy.schedulingPolicy` is written (`pod_group_in_git`).
"""

from __future__ import annotations

from typing import Any, Iterator

from compiler.diagnostics import Diagnostic
from compiler.reading.resolve import Target
from compiler.targets import kubeflow_v1, mpi_operator_rules
from compiler.targets.base import PlanFacts, TargetApi
from compiler.targets.lowering import job_metadata, replica_specs, run_policy
from foundation.frameworks import adapter as adapter_for
from foundation.frameworks import mpi
from foundation.frameworks import mpi_operator as facts
from schemas.bundle import Bundle

NAME = mpi_operator_rules.NAME


def lower(target: Target) -> Bundle:
    spec = target.spec
    fw = adapter_for(spec.framework)
    job_spec: dict[str, Any] = {**fw.job_fields(spec), **facts.job_fields(spec.mpi)}
    job_spec["runPolicy"] = {"cleanPodPolicy": facts.CLEAN_PODS_DEFAULT, **run_policy(spec.policy)}
    # a Worker of 0 replicas (runLauncherAsWorker on one node) is refused: leave it out
    job_spec[facts.REPLICA_SPECS] = replica_specs(target, omit_empty=True)
    job = {"apiVersion": facts.API_VERSION, "kind": facts.KIND, "metadata": job_metadata(target), "spec": job_spec}
    return Bundle(target=target, adapter=fw, job=job, api=API)


def pod_names(target: Target) -> list[str]:
    """The launcher Job's name (its pod's hostname) and the last worker's: the operator itself
    refuses a job whose `{job}-worker-{n-1}` is not a DNS label."""
    workers = [p.replicas for p in adapter_for(target.spec.framework).plan(target.spec) if p.replica_type == facts.WORKER]
    last = facts.worker_name(target.name, max(workers[0] - 1, 0) if workers else 0)
    return [facts.launcher_name(target.name), last]


def _check(target: Target) -> Iterator[Diagnostic]:
    return mpi_operator_rules.check(target)


API = TargetApi(
    name=NAME,
    supports=lambda framework: framework == facts.FRAMEWORK,
    check=_check,
    lower=lower,
    pod_templates=kubeflow_v1.pod_templates,
    added_volumes=lambda replica_type: facts.ADDED_VOLUMES.get(replica_type, ()),
    program_container=lambda bundle: facts.CONTAINER,
    role_resources=kubeflow_v1.role_resources,
    role_entries=kubeflow_v1.role_entries,
    pod_names=pod_names,
    pods=kubeflow_v1.pods,
    whole_pod_templates=True,
    plan=PlanFacts(
        # its replica specs as written: the Training Operator's defaulting and train-controller's run
        # spec are not the mpi-operator's
        reader="replica-specs-as-written",
        suspend=("spec", "runPolicy", "suspend"),
        ttl=("spec", "runPolicy", "ttlSecondsAfterFinished"),  # the launcher Job's (compiler.plan.hazards)
        plural=lambda kind: mpi.FACTS.plural if kind == facts.KIND else None,
        kueue_manages=lambda kind: True,  # Kueue's kubeflow.org/mpijob integration is this MPIJob
        pod_maker=facts.OPERATOR_NAME,  # whatever the environment's controller
    ),
    upstream_admission=False,  # the Training Operator's; the mpi-operator's own checks are the rules'
    operator_init_containers=lambda kind, replica_type, replica_types: [],  # it adds none
    maker_title=facts.OPERATOR_TITLE,
    pod_group_in_git=False,
    own_fields=("mpi",),
)
