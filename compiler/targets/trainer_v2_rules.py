"""What a Kubeflow Trainer v2 TrainJob cannot express, as positioned diagnostics.

A TrainJob overrides only part of its runtime: the trainer (image, command, args, env,
nodes, processes and resources per node), suspend, the active deadline, and pod fields
through `runtimePatches` (labels, annotations, volumes and mounts, service account,
node selector, tolerations, affinity, pull secrets, security contexts, scheduling gates,
grace period). Everything else the spec can say belongs to the runtime in v2: per-pod
restart and backoff, TTL and pod cleanup, the working directory, a PriorityClass, gang
scheduling (`podGroupPolicy`), extra roles. Silently dropping one of those would deploy a
different job than the file says, so each is an error at its field with the way out:
remove it for this environment, or move it into a runtime of your own (`spec.runtime`).
Whole-job restarts (`restartScope: job`) are the one policy the compiler moves into a
runtime itself (`trainer_v2_restarts`); what they cannot be is an error here too.

Stock runtimes are facts of the Trainer v2.3.0 release, kept with the adapters that name
them (`foundation.frameworks.stock_runtimes`): which mlPolicy they carry, which containers
their jobs have and that none has a `podGroupPolicy`. A runtime of the team's own is not visible at
compile time: gang scheduling there is the runtime's business, reported as a notice.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from compiler import strategic
from compiler.diagnostics import Diagnostic
from foundation.frameworks import adapter as adapter_for
from foundation.frameworks.stock_runtimes import NODE, STOCK_RUNTIMES
from compiler.reading.resolve import Target
from compiler.reading.runtimes import RuntimeFacts
from compiler.targets import trainer_v2_sources as sources
from compiler.targets.diagnose import error as _error
from compiler.targets.diagnose import unset as _unset
from compiler.targets.trainer_v2_sources import runtime_ref
from schemas.loader import Loc
from schemas.trainjob import Gang

CONTAINER = NODE  # the Trainer's name for the program container (and its job) in every runtime


NAME = "trainer-v2"
OWN_RUNTIME = "or move it into a runtime of your own and name it with spec.runtime"



# podTemplate keys a runtimePatches pod template may carry (v2.3 PodTemplatePatch); None: any value
_CONTAINER_KEYS = {"name": None, "env": None, "securityContext": None, "volumeMounts": None}
PATCHABLE: dict[str, Any] = {
    "metadata": {"labels": None, "annotations": None},
    "spec": {
        "affinity": None, "imagePullSecrets": None, "nodeSelector": None, "schedulingGates": None,
        "securityContext": None, "serviceAccountName": None, "terminationGracePeriodSeconds": None,
        "tolerations": None, "volumes": None,
        "containers": [_CONTAINER_KEYS], "initContainers": [_CONTAINER_KEYS],
    },
}


def _runtime_of(target: Target) -> tuple[dict[str, str], Optional[RuntimeFacts]]:
    """The job's runtimeRef, and its facts when the compiler sees it (a stock one, or the sources')."""
    return sources.known(target)


def _named(ref: dict[str, str]) -> str:
    return f"the stock runtime {ref['name']}" if sources.stock(ref) else f"{ref['kind']} {ref['name']}"


def _where(target: Target) -> str:
    return f"environment '{target.env_name}' targets {NAME}"


def _framework(target: Target) -> Iterator[Diagnostic]:
    from compiler.targets import supporting  # the table imports this module's target

    framework = target.spec.framework
    yield _error(
        target, ("framework",),
        f"{framework} has no Kubeflow Trainer v2 runtime, and {_where(target)}",
        f"{framework} compiles for target {', '.join(supporting(framework))}: set"
        f" environments.{target.env_name}.target to it in trainforge.yaml",
    )


def _runtime(target: Target) -> Iterator[Diagnostic]:
    ref, stock = _runtime_of(target)
    wanted = adapter_for(target.spec.framework).trainer_v2
    if stock is not None and wanted is not None and stock.ml_policy != wanted.ml_policy:
        fitting = sorted(n for n, r in STOCK_RUNTIMES.items() if r.ml_policy == wanted.ml_policy)
        yield _error(
            target, ("runtime",),
            f"{_named(ref)} runs mlPolicy {stock.ml_policy}, not"
            f" {target.spec.framework} ({wanted.ml_policy})",
            f"use {' or '.join(fitting)}, or remove runtime for the default {wanted.runtime}",
        )


_POLICY = {
    "ttlAfterFinished": "TTL is the runtime's JobSet ttlSecondsAfterFinished",
    "cleanPods": "pod cleanup follows the runtime's JobSet",
}
WHOLE_JOB = "set restartScope: job with a backoffLimit (the whole job restarts, up to backoffLimit times)"


def _policy(target: Target) -> Iterator[Diagnostic]:
    policy = target.spec.policy
    if policy.activeDeadline == 0:  # the TrainJob CRD's minimum is 1 (v1 took 0)
        yield _error(
            target, ("policy", "activeDeadline"),
            "a Trainer v2 TrainJob's activeDeadlineSeconds must be at least 1",
            f"give a positive duration such as 24h, or {_unset(target, ('policy', 'activeDeadline'))}",
        )
    for field, why in _POLICY.items():
        if getattr(policy, field) is not None:
            yield _error(
                target, ("policy", field),
                f"a Trainer v2 TrainJob cannot set {field}: {why}",
                f"{_unset(target, ('policy', field))}, {OWN_RUNTIME}",
            )
    yield from (_whole_job if policy.restartScope == "job" else _per_pod)(target)


def _per_pod(target: Target) -> Iterator[Diagnostic]:
    """restart and backoffLimit act on one pod in v1; a v2.3 TrainJob reaches neither the pods'
    restartPolicy nor the Jobs' backoffLimit (runtimePatches carry pod fields only)."""
    policy = target.spec.policy
    for field, what in (("restart", "choose how a pod restarts"), ("backoffLimit", "limit the restarts of a pod")):
        if getattr(policy, field) is not None:
            yield _error(
                target, ("policy", field),
                f"a Trainer v2.3 TrainJob cannot {what}: runtimePatches set neither the pods' restartPolicy nor"
                " the Jobs' backoffLimit",
                f"{_unset(target, ('policy', field))}, or {WHOLE_JOB}",
            )


def _whole_job(target: Target) -> Iterator[Diagnostic]:
    """restartScope: job is a copy of the stock runtime with a JobSet failurePolicy
    (trainer_v2_restarts): it needs the stock runtime, a limit, and a restart policy that retries."""
    policy, ref = target.spec.policy, runtime_ref(target)
    if not sources.stock(ref):
        yield _error(
            target, ("policy", "restartScope"),
            f"whole-job restarts are the JobSet failurePolicy of the runtime, and the compiler copies only a stock"
            f" runtime; {ref['kind']} {ref['name']} is not one",
            f"give {ref['name']} failurePolicy {{maxRestarts: N, restartStrategy: BlockingRecreate}} and its Jobs"
            " backoffLimit: 0, and remove restartScope and backoffLimit; or remove runtime (the job then runs on a"
            " copy of its framework's stock runtime)",
        )
    elif policy.backoffLimit is None:
        yield _error(
            target, ("policy", "restartScope"),
            "Trainer v2 counts whole-job restarts against the JobSet's failurePolicy.maxRestarts, which needs a limit",
            "add backoffLimit: N, the restarts before the job fails",
        )
    if policy.restart in ("Never", "Always"):
        why = ("retries no exit, so the job would never restart" if policy.restart == "Never" else
               "restarts a pod that exited 0, and a node of a Trainer v2 job is a Job's pod, which cannot")
        yield _error(
            target, ("policy", "restart"),
            f"restart: {policy.restart} {why}",
            "remove restart (any failure restarts the whole job), or write OnFailure, or ExitCode (exit codes"
            " 1-127 fail the job, 128-255 restart it)",
        )


def _reserved_env(target: Target) -> Iterator[Diagnostic]:
    capability = adapter_for(target.spec.framework).trainer_v2
    reserved = capability.reserved_env if capability is not None else ()
    for name in target.spec.env:
        if name in reserved:
            yield _error(
                target, ("env", name),
                f"the {target.spec.framework} runtime sets {name} itself and the Trainer refuses it in trainer.env",
                "remove it from env and read the value the runtime sets",
            )


def _fixed_nodes(target: Target) -> Iterator[Diagnostic]:
    spec = target.spec
    if spec.elastic is not None:
        yield _error(
            target, ("elastic",),
            "Trainer v2.3 cannot express elastic training (TrainJob numNodes is fixed and the"
            " torch mlPolicy has no elastic policy)",
            f"{_unset(target, ('elastic',))} and give nodes the size to run at",
        )
    yield from _roles(target)
    if spec.workingDir is not None:
        yield _error(
            target, ("workingDir",),
            "a Trainer v2 TrainJob cannot set the working directory",
            f"{_unset(target, ('workingDir',))} (cd in your command or set WORKDIR in the image)",
        )


# what a v1 role entry sets that a TrainJob cannot set for one role's pods
_ROLE_FIELDS = {
    "image": "an image", "container": "a container name", "command": "a command", "args": "arguments",
    "env": "environment variables",
    "restart": "a restart policy (runtimePatches set no restartPolicy)", "resources": "resources",
    "scheduling": "placement", "podTemplate": "pod template fields",
}


def _roles(target: Target) -> Iterator[Diagnostic]:
    """A TrainJob's nodes are one replicated job with one trainer: a main role's settings (v1's
    Master or Worker only) have nowhere to go, nor has an extra role."""
    main = adapter_for(target.spec.framework).facts.main_roles
    for role, entry in target.spec.roles.items():
        written = [field for field in _ROLE_FIELDS if field in entry.model_fields_set]
        if role not in main or not written:
            yield _error(
                target, ("roles", role),
                f"a Trainer v2 TrainJob has no extra roles; every pod is a node with"
                f" resourcesPerNode (an MPI launcher runs as one of the nodes)",
                f"{_unset(target, ('roles',))} (the kubeflow-v1 environments keep them), {OWN_RUNTIME}",
            )
            continue
        for field in written:
            yield _error(
                target, ("roles", role, field),
                f"a Trainer v2 TrainJob cannot give {_ROLE_FIELDS[field]} to its {role} pods alone: every node"
                " runs one trainer from one replicated job",
                f"set it for every node in spec (or {_unset(target, ('roles', role))}), {OWN_RUNTIME}",
            )


def _scheduling(target: Target) -> Iterator[Diagnostic]:
    scheduling = target.spec.scheduling
    if scheduling.priority and not target.environment.scheduling.kueuePriority:
        yield _error(
            target, ("scheduling", "priority"),
            "a Trainer v2 TrainJob cannot set a PriorityClass (runtimePatches have no priorityClassName)",
            f"set scheduling.kueuePriority: true for environment '{target.env_name}' in trainforge.yaml"
            f" (a Kueue WorkloadPriorityClass label), {OWN_RUNTIME}",
        )
    gang = scheduling.gang
    if not gang:
        return
    ref, stock = _runtime_of(target)
    if isinstance(gang, Gang) and gang.timeoutSeconds is not None:
        yield _error(
            target, ("scheduling", "gang", "timeoutSeconds"),
            "in Trainer v2 the gang timeout is the runtime's podGroupPolicy.coscheduling.scheduleTimeoutSeconds",
            f"{_unset(target, ('scheduling', 'gang', 'timeoutSeconds'))}, and set it in the runtime",
        )
    if stock is not None and not stock.pod_group_policy:
        yield _error(
            target, ("scheduling", "gang"),
            f"gang scheduling in Trainer v2 is the runtime's podGroupPolicy, and {_named(ref)} has none",
            "name a runtime with podGroupPolicy (volcano or coscheduling) in spec.runtime, or turn"
            f" it off for this environment with environments.{target.env_name}.scheduling.gang: false",
        )
    elif stock is None:
        yield _error(
            target, ("scheduling", "gang"),
            f"gang scheduling comes from the podGroupPolicy of runtime {ref['name']}, which the"
            " compiler cannot see; nothing is written for it",
            f"make sure {ref['kind']} {ref['name']} sets podGroupPolicy",
            severity="notice",
        )


def _pod_template(target: Target) -> Iterator[Diagnostic]:
    ref, known = _runtime_of(target)
    stock = known if sources.stock(ref) else None  # a runtime of one's own may have more containers
    for at in strategic.directives(target.spec.podTemplate):
        yield _error(
            target, ("podTemplate",) + at,
            "runtimePatches reach Trainer as plain fields (its CRD has no place for a strategic-merge"
            " directive), so a directive would change only what trainforge writes, never the runtime's pod template",
            f"set the fields the pods should have instead, {OWN_RUNTIME}",
        )
    program = {CONTAINER, adapter_for(target.spec.framework).facts.container}
    yield from _walk(target, ("podTemplate",), target.spec.podTemplate, PATCHABLE, stock, program)


def _walk(target: Target, loc: Loc, value: Any, allowed: Any, stock: Optional[RuntimeFacts],
          program: set[str]) -> Iterator[Diagnostic]:
    if allowed is None:
        return
    if isinstance(allowed, list):  # a list of containers, merged by name
        for i, item in enumerate(value if isinstance(value, list) else ()):
            name = item.get("name") if isinstance(item, dict) else None
            at = loc + (i,)
            if stock is not None and (loc[-1] == "initContainers" or name not in program):
                yield _error(
                    target, at + ("name",) if name else at,
                    f"runtimePatches can only patch containers the runtime has, and the stock runtime's"
                    f" jobs have one container, {CONTAINER}",
                    f"patch the program container (name: {CONTAINER}), {OWN_RUNTIME}",
                )
            elif name in program and isinstance(item, dict) and "env" in item:
                yield _error(
                    target, at + ("env",),
                    "Trainer v2 takes the program container's environment from trainer.env only",
                    "move these variables to spec.env",
                )
            else:
                yield from _walk(target, at, item, allowed[0], stock, program)
        return
    for key, item in (value.items() if isinstance(value, dict) else ()):
        if str(key).startswith("$"):
            continue  # a directive: refused above
        if key not in allowed:
            yield _error(
                target, loc + (key,),
                f"runtimePatches cannot set {'.'.join(map(str, loc[1:] + (key,)))} in a Trainer v2 pod"
                f" (patchable here: {', '.join(sorted(allowed))})",
                f"remove it (keep it under the job's kubeflow-v1 environments), {OWN_RUNTIME}",
            )
        else:
            yield from _walk(target, loc + (key,), item, allowed[key], stock, program)


def _mpi_image(target: Target) -> Iterator[Diagnostic]:
    ref = runtime_ref(target)
    stock = STOCK_RUNTIMES.get(ref["name"]) if sources.stock(ref) else None
    if stock is not None and stock.ml_policy == "mpi" and target.spec.image not in (None, stock.node_image):
        yield _error(
            target, ("image",),
            f"in {ref['name']} trainer.image reaches the launcher only; the other nodes run the"
            f" runtime's image {stock.node_image}",
            f"build your image from {stock.node_image}, {OWN_RUNTIME}",
            severity="warning",
        )


def check(target: Target) -> Iterator[Diagnostic]:
    if adapter_for(target.spec.framework).trainer_v2 is None:
        yield from _framework(target)
        return
    for rule in (_runtime, _policy, _reserved_env, _fixed_nodes, _scheduling, _pod_template, _mpi_image,
                 sources.check):
        yield from rule(target)
