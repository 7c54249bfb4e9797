"""The `kubeflow-v1` target: the Training Operator's `kubeflow.org/v1` kinds (the default).

Lowering is `compiler/targets/lowering.py`; every framework runs here and everything the spec
says is expressible but a few things: whole-job restarts under the Training Operator and the
TTL's re-run (`kubeflow_v1_rules`), and a Kueue queue on a kind Kueue does not manage (the
adapter's `kueue_unmanaged`: MPIJob, MXJob). Kueue ignores the queue label on such a
job, which then runs at once, outside the queue's quota, so `check` refuses the queue
and names what does work (a target whose job Kueue manages, or no queue). Pod templates
sit under `spec.<x>ReplicaSpecs.<ReplicaType>.template`, one per replica type, and the
operator makes each pod from its template whole, so the late-refusal rules, upstream's
admission rules and the operator's own init containers all apply to them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from foundation.frameworks import BY_KIND, adapter, by_kind
from compiler.targets import kubeflow_v1_rules, roles
from compiler.targets.base import PlanFacts, TargetApi, gpus_in
from compiler.targets.lowering import lower

if TYPE_CHECKING:
    from compiler.diagnostics import Diagnostic
    from compiler.reading.resolve import Target
    from schemas.bundle import Bundle
    from schemas.trainjob import Resources, Role


def _lower(target: "Target") -> "Bundle":
    return lower(target, API)


def _check(target: "Target") -> Iterator["Diagnostic"]:
    yield from kubeflow_v1_rules.check(target)
    yield from _queue(target)


def _queue(target: "Target") -> Iterator["Diagnostic"]:
    queue = target.spec.scheduling.queue
    unmanaged = adapter(target.spec.framework).facts.kueue_unmanaged
    if queue is None or unmanaged is None:
        return
    from compiler.targets import TARGETS, supporting  # the table imports this module

    framework, loc = target.spec.framework, ("scheduling", "queue")
    kind = adapter(framework).facts.kind
    written = target.view.written(loc)
    where = "" if written else f" (the default of environment '{target.env_name}' in trainforge.yaml)"
    unqueued = ("remove scheduling.queue" if written else
                f"write scheduling.queue: null for environment '{target.env_name}' to run it unqueued")
    # the other targets that run the framework and whose jobs Kueue manages (asked by the v1 kind:
    # their own jobs of it are another kind, which the table cannot name before lowering)
    others = [name for name in supporting(framework) if name != API.name and TARGETS[name].plan.kueue_manages(kind)]
    instead = (f"set environments.{target.env_name}.target: {' or '.join(others)} in trainforge.yaml (Kueue manages"
               f" {'its' if len(others) == 1 else 'their'} jobs), or " if others else "")
    yield target.view.error(
        loc,
        f"queue '{queue}'{where} would be ignored: {unmanaged}, so this kubeflow.org/v1 {kind} gets no"
        " Workload and runs at once, outside the queue's quota",
        f"{instead}{unqueued}",
    )


def pod_templates(bundle: "Bundle") -> list[tuple[str, str]]:
    specs = bundle.adapter.facts.replica_specs
    return [(rtype, f"/spec/{specs}/{rtype}/template/spec") for rtype in bundle.job["spec"][specs]]


def role_resources(bundle: "Bundle") -> dict[str, Optional["Resources"]]:
    spec = bundle.target.spec
    return {plan.replica_type: roles.resources(spec, plan) for plan in bundle.adapter.plan(spec)}


def role_entries(bundle: "Bundle") -> dict[str, Optional["Role"]]:
    """Each replica type's `roles` entry (its placement replaces the job's: overlays/scheduling.py)."""
    spec = bundle.target.spec
    return {plan.replica_type: roles.entry(spec, plan) for plan in bundle.adapter.plan(spec)}


def pod_names(target: "Target") -> list[str]:
    """The operator's pod and service names, `{job}-{replica}-{index}` (the last index), and
    a launcher's own (MPI: `{job}-launcher`, `{job}-config`); elastic nodes at maxNodes."""
    job, spec = target.name, target.spec
    fw = adapter(spec.framework)
    launcher = fw.launcher
    names = []
    for plan in fw.plan(spec):
        count = spec.elastic.maxNodes if spec.elastic and plan.accelerated else plan.replicas
        if launcher is not None and plan.replica_type == launcher.replica_type:
            names += [f"{job}-{suffix}" for suffix in launcher.names]
        elif count > 0:
            names.append(f"{job}-{plan.replica_type.lower()}-{count - 1}")
    return names


def operator_init_containers(kind: str, replica_type: str, replica_types: set[str]) -> list[str]:
    """The init containers the Training Operator adds to these pods (the kind's adapter says)."""
    init = by_kind(kind).operator_init
    return init.containers(replica_type, replica_types) if init is not None else []


def pods(bundle: "Bundle") -> list[tuple[str, int, int]]:
    # the lowered job, not the rendered one: no overlay touches a replica count or a container's
    # resources, and rendering every job (a copy and its patches) would cost a build that prints
    # its jobs table for nothing (bench/README.md)
    replicas = bundle.job["spec"][bundle.adapter.facts.replica_specs]
    return [
        (rtype, int(r.get("replicas", 1)), sum(gpus_in(c.get("resources")) for c in r["template"]["spec"]["containers"]))
        for rtype, r in replicas.items()
    ]


API = TargetApi(
    name="kubeflow-v1",
    supports=lambda framework: True,
    check=_check,
    lower=_lower,
    pod_templates=pod_templates,
    program_container=lambda bundle: bundle.adapter.facts.container,
    role_resources=role_resources,
    role_entries=role_entries,
    pod_names=pod_names,
    pods=pods,
    whole_pod_templates=True,
    plan=PlanFacts(
        reader="replica-specs",
        suspend=("spec", "runPolicy", "suspend"),
        ttl=("spec", "runPolicy", "ttlSecondsAfterFinished"),
        plural=lambda kind: BY_KIND[kind].facts.plural if kind in BY_KIND else None,
        kueue_manages=lambda kind: by_kind(kind).facts.kueue_unmanaged is None,
    ),
    upstream_admission=True,
    operator_init_containers=operator_init_containers,
)
