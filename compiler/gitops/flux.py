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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.frameworks import BY_KIND
from compiler.gitops import health, kueue

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
    return [health.cel_expressions(kind) for _, kind in health.kinds()]


def job_patches() -> list[dict[str, Any]]:
    """One strategic-merge patch per kind that marks its jobs create-only."""
    from compiler.emit import serialize

    out = []
    for kind, adapter in BY_KIND.items():
        body = {"apiVersion": adapter.facts.api_version, "kind": kind,
                "metadata": {"name": "any", "annotations": {SSA_ANNOTATION: "IfNotPresent"}}}
        out.append({"target": {"group": health.GROUP, "version": "v1", "kind": kind},
                    "patch": serialize.dump(body)})
    return out


def ignore_rules() -> list[dict[str, Any]]:
    """`.spec.ignore`: the Kueue-managed fields of each kind's queued jobs, for drift and apply."""
    return [{"paths": kueue.json_pointers(kind), "target": kueue.queued_target(kind)} for kind in BY_KIND] + [
        {"paths": list(kueue.TRAINJOB_POINTERS), "target": dict(kueue.TRAINJOB_QUEUED)}]


def _path(target: Target, env: str) -> str:
    base = target.path.rstrip("/") or "."
    if not base.startswith("./") and base != ".":
        base = "./" + base
    return f"{base}/{env}"


def kustomization(target: Target, env: str) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": target.interval,
        "path": _path(target, env),
        "prune": True,
        "sourceRef": {"kind": target.source_kind, "name": target.source_name},
        "wait": True,
        "timeout": target.timeout,
        "healthCheckExprs": health_check_exprs(),
    }
    if target.create_only:
        spec["patches"] = job_patches()
    else:
        spec["ignore"] = ignore_rules()
    return {
        "apiVersion": API_VERSION,
        "kind": "Kustomization",
        "metadata": {
            "name": f"{target.prefix}-{env}",
            "namespace": target.namespace,
            "labels": {"app.kubernetes.io/part-of": target.prefix, "trainforge.dev/environment": env},
        },
        "spec": spec,
    }


def files(target: Target, envs: list[str]) -> dict[str, str]:
    from compiler.emit import serialize
    from compiler.emit.tree import KUSTOMIZE_API

    out = {f"{env}.yaml": serialize.dump(kustomization(target, env)) for env in envs}
    out["kustomization.yaml"] = serialize.dump(
        {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "resources": sorted(out)})
    return dict(sorted(out.items()))
