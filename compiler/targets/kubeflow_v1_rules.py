"""Run-policy rules of the `kubeflow-v1` target, as positioned diagnostics.

Both are about who acts on the compiled job in the cluster, which only the environment
knows. `policy.restartScope: job` is ours, carried to train-controller by an annotation
(`compiler/targets/lowering.py`); the Training Operator would ignore it and restart one
pod at a time, so under `controller: training-operator` it is an error that names the
controller that does it. `policy.ttlAfterFinished` is upstream's: the operator deletes
the finished job after the TTL, and the GitOps engine that keeps syncing the compiled tree
(Argo CD, Flux) then creates it again from git, so it runs again, after every TTL. That
is a warning wherever it is set, with the way out; the project policy (or `--strict`)
makes it an error. Trainer v2 TrainJobs refuse a TTL at all (`trainer_v2_rules`).
"""

from __future__ import annotations

from typing import Iterator

from compiler.diagnostics import Diagnostic
from compiler.reading.resolve import Target
from compiler.targets import roles
from foundation.frameworks import adapter
from schemas.project import DEFAULT_TTL_SEVERITY

WHOLE_JOB_CONTROLLER = "train-controller"  # the controller that reads schemas.marks.RESTART_SCOPE

TTL_MESSAGE = (
    "the finished job is deleted after its TTL and the GitOps engine creates it again from git, so it"
    " runs again: Flux at its next reconciliation (every interval), Argo CD at the next commit (within"
    " seconds with self-heal)"
)
TTL_FIX = (
    "remove ttlAfterFinished (cleanPods: All frees the pods and keeps the finished job; removing the spec"
    " from git deletes the job)"
)


def _restart_scope(target: Target) -> Iterator[Diagnostic]:
    if target.spec.policy.restartScope != "job" or target.controller == WHOLE_JOB_CONTROLLER:
        return
    env = target.env_name
    yield target.view.error(
        ("policy", "restartScope"),
        f"the Training Operator (controller: {target.controller} in environment '{env}') restarts only the"
        " failed pod and ignores restartScope: job, so the other pods wait for it in the rendezvous",
        f"set controller: {WHOLE_JOB_CONTROLLER} (defaults or environments.{env} in trainforge.yaml),"
        " which restarts the whole job, or remove restartScope",
        prefer_key=True,
    )


def _ttl(target: Target) -> Iterator[Diagnostic]:
    if target.spec.policy.ttlAfterFinished is None:
        return
    severity = target.policy.ttlAfterFinished or DEFAULT_TTL_SEVERITY
    d = target.view.error(("policy", "ttlAfterFinished"), TTL_MESSAGE, TTL_FIX, prefer_key=True)
    yield d if severity == "error" else Diagnostic(d.file, d.line, d.col, d.path, d.message, d.fix, "warning")


def _image(target: Target) -> Iterator[Diagnostic]:
    """Every replica type runs the image the job names (a role's own, else spec.image): only a
    Trainer v2 runtime brings one of its own."""
    spec = target.spec
    if spec.image is not None:
        return
    missing = [plan.role for plan in adapter(spec.framework).plan(spec) if roles.image(spec, plan) is None]
    if missing:
        yield target.view.error(
            ("image",), f"is required: the {', '.join(missing)} pods of a kubeflow.org/v1 job run the image"
            " the spec names (only a Trainer v2 runtime brings its own)",
            "add 'image'" + (f" (or roles.{missing[0]}.image)" if len(missing) < len(adapter(spec.framework).plan(spec))
                             else ""),
            prefer_key=True,
        )


def _initializer(target: Target) -> Iterator[Diagnostic]:
    if target.spec.initializer is not None:
        env = target.env_name
        yield target.view.error(
            ("initializer",), f"a kubeflow.org/v1 job has no initializer step (environment '{env}' targets"
            " kubeflow-v1); only a Trainer v2 runtime's dataset and model initializers read it",
            f"download in an init container (podTemplate.spec.initContainers) and unset initializer for this"
            f" environment with environments.{env}.initializer: null, or set environments.{env}.target: trainer-v2",
            prefer_key=True,
        )


def check(target: Target) -> Iterator[Diagnostic]:
    for rule in (_image, _initializer, _restart_scope, _ttl):
        yield from rule(target)
