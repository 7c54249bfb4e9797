"""Flux objects for a trainforge repository: one Kustomization per environment.

Each points at the committed kustomize tree `OUT/<env>` (render in CI with
`train-compile build`, keep it honest with `train-compile check`), waits for what it
applied, and teaches Flux the health of the seven kubeflow.org kinds through
`healthCheckExprs` (the CEL of `compiler.gitops.health`).

Kueue rewrites a job while it runs (`runPolicy.suspend`, the pod templates' node
selectors, tolerations, labels: `compiler.gitops.kueue`); re-applying git over that would
suspend a running job or strip its flavor. kustomize-controller >= 1.9 takes those fields
as `.spec.ignore` (JSON pointers per kind, on jobs with a queue label only, since Kueue
manages no other job): they are left out of drift detection, and a drifted one is
applied with the cluster's value, so the rest of a job, and all of an unqueued one
(`policy.suspend` included), still follows git as it does under Argo CD. `--create-only` instead annotates jobs
`kustomize.toolkit.fluxcd.io/ssa: IfNotPresent` (a patch in the Kustomization, not in
the compiled tree): Flux creates a job and never touches it again. Either way a job is a
run: an edit reaches the object, never the pods of a run in progress or done; a new run
needs a new name. `wait: true` keeps the Kustomization not Ready while a run is in
progress and Failed when a job fails; its `timeout` bounds how long one reconciliation
waits. `prune: true` deletes a job removed from git with background propagation (what
kustomize-controller always uses), so no controller sees the job linger while the
garbage collector deletes its pods (see `compiler.gitops.argocd`).

An environment whose target lets a job bring its own runtime (trainer-v2: `restartScope:
job`) gets a second Kustomization, `<prefix>-<env>-prerequisites`, over the tree's
`_prerequisites` folder (the environment's Namespaces and job-owned TrainingRuntimes:
`compiler.emit.prerequisites` says why); the environment's Kustomization `dependsOn` it and
deletes those kinds from its own output with `$patch: delete` patches, so each object has one
owner and no TrainJob is dry-run before its runtime exists. Its objects are Current once
applied, so the dependency costs one requeue of the environment's Kustomization per revision
(kustomize-controller's `--requeue-dependency`, 30s stock).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from compiler.emit.prerequisites import FOLDER as PREREQUISITES
from compiler.gitops import health, kueue
from compiler.targets import api
from compiler.targets.base import JobRuntime

if TYPE_CHECKING:
    from schemas.project import Project

API_VERSION = "kustomize.toolkit.fluxcd.io/v1"
SSA_ANNOTATION = "kustomize.toolkit.fluxcd.io/ssa"


@dataclass(frozen=True)
class Target:
    path: str  # repo-relative path of the build output, e.g. ./deploy
    source_kind: str = "GitRepository"
    source_name: str = "flux-system"
    namespace: str = "flux-system"
    prefix: str = "trainforge"
    interval: str = "10m"
    timeout: str = "5m"
    create_only: bool = False  # ssa: IfNotPresent on jobs instead of ignoring Kueue's fields


def health_check_exprs() -> list[dict[str, str]]:
    return [health.cel_expressions(kind) for _, kind in health.kinds()]  # one per GroupKind: Flux refuses more


def job_patches() -> list[dict[str, Any]]:
    """One strategic-merge patch per job kind (Trainer v2's TrainJob too) that marks its jobs create-only."""
    return [_patch({"apiVersion": api_version, "kind": kind,
                    "metadata": {"name": "any", "annotations": {SSA_ANNOTATION: "IfNotPresent"}}})
            for api_version, kind in health.api_versions()]


def ignore_rules() -> list[dict[str, Any]]:
    """`.spec.ignore`: the Kueue-managed fields of each kind's queued jobs, for drift and apply."""
    versions = [(api_version.rpartition("/")[2], kind) for api_version, kind in health.api_versions()
                if api_version.startswith(f"{health.GROUP}/")]
    return [{"paths": kueue.json_pointers(kind), "target": kueue.queued_target(kind, version)}
            for version, kind in versions] + [
        {"paths": list(kueue.TRAINJOB_POINTERS), "target": dict(kueue.TRAINJOB_QUEUED)}]


def handed_over(runtime: JobRuntime) -> list[dict[str, Any]]:
    """Patches deleting what the prerequisites' Kustomization owns from an environment's output."""
    return [_patch({"$patch": "delete", "apiVersion": api_version, "kind": kind, "metadata": {"name": "any"}})
            for api_version, kind in (("v1", "Namespace"), *((runtime.api_version, k) for k in runtime.kinds))]


def _patch(body: dict[str, Any]) -> dict[str, Any]:
    """A Kustomization patch of `body`, aimed at every object of its apiVersion and kind."""
    from compiler.emit import serialize

    group, _, version = body["apiVersion"].rpartition("/")
    return {"target": {**({"group": group} if group else {}), "version": version, "kind": body["kind"]},
            "patch": serialize.dump(body)}


def job_runtimes(project: "Project", envs: list[str]) -> dict[str, JobRuntime]:
    """The environments whose target lets jobs bring a runtime of their own, and that runtime."""
    found = {env: api(project.target_for(env)).job_runtime for env in envs}
    return {env: runtime for env, runtime in found.items() if runtime is not None}


def _path(target: Target, env: str) -> str:
    base = target.path.rstrip("/") or "."
    if not base.startswith("./") and base != ".":
        base = "./" + base
    return f"{base}/{env}"


def _metadata(target: Target, env: str, name: str) -> dict[str, Any]:
    return {"name": name, "namespace": target.namespace,
            "labels": {"app.kubernetes.io/part-of": target.prefix, "trainforge.dev/environment": env}}


def prerequisites(target: Target, env: str) -> dict[str, Any]:
    """The Kustomization of an environment's `_prerequisites` folder."""
    spec = {"interval": target.interval, "path": f"{_path(target, env)}/{PREREQUISITES}", "prune": True,
            "sourceRef": {"kind": target.source_kind, "name": target.source_name}, "wait": True,
            "timeout": target.timeout}
    return {"apiVersion": API_VERSION, "kind": "Kustomization",
            "metadata": _metadata(target, env, f"{target.prefix}-{env}-prerequisites"), "spec": spec}


def kustomization(target: Target, env: str, runtime: Optional[JobRuntime] = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": target.interval,
        "path": _path(target, env),
        "prune": True,
        "sourceRef": {"kind": target.source_kind, "name": target.source_name},
        "wait": True,
        "timeout": target.timeout,
        "healthCheckExprs": health_check_exprs(),
    }
    patches = job_patches() if target.create_only else []
    if not target.create_only:
        spec["ignore"] = ignore_rules()
    if runtime is not None:
        spec["dependsOn"] = [{"name": prerequisites(target, env)["metadata"]["name"]}]
        patches += handed_over(runtime)
    if patches:
        spec["patches"] = patches
    return {"apiVersion": API_VERSION, "kind": "Kustomization", "metadata": _metadata(target, env, f"{target.prefix}-{env}"),
            "spec": spec}


def files(target: Target, envs: list[str], *, runtimes: Optional[Mapping[str, JobRuntime]] = None) -> dict[str, str]:
    """`<env>.yaml` per environment (with its prerequisites' Kustomization when `runtimes` names
    it) and a kustomization.yaml listing them."""
    from compiler.emit import serialize
    from compiler.emit.tree import KUSTOMIZE_API

    runtimes = runtimes or {}
    out = {}
    for env in envs:
        docs = [kustomization(target, env, runtimes.get(env))]
        if env in runtimes:
            docs.insert(0, prerequisites(target, env))
        out[f"{env}.yaml"] = serialize.dump_all(docs)
    out["kustomization.yaml"] = serialize.dump(
        {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "resources": sorted(out)})
    return dict(sorted(out.items()))
