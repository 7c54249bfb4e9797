"""Flux objects for a trainforge repository: one Kustomization per environment.

Each points at the committed kustomize tree `OUT/<env>` (render in CI with
`train-compile build`, keep it honest with `train-compile check`), waits for what it
applied, and teaches Flux the health of the seven kubeflow.org kinds through
`healthCheckExprs` (the CEL of `compiler.gitops.health`).

Jobs are applied with `kustomize.toolkit.fluxcd.io/ssa: IfNotPresent`, set by a patch in
the Kustomization rather than in the compiled tree: Flux creates a job and then leaves
it alone. Flux has no per-field ignore, and Kueue rewrites the job while it runs
(`runPolicy.suspend`, the pod templates' tolerations and node selectors); re-applying
git over that would suspend a running job or strip its flavor. A job is a run: change
it by giving the new run a new name. `wait: true` keeps the Kustomization not Ready
while a run is in progress and Failed when a job fails; its `timeout` bounds how long
one reconciliation waits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.frameworks import BY_KIND
from compiler.gitops import health

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
    create_only: bool = True  # ssa: IfNotPresent on jobs


def health_check_exprs() -> list[dict[str, str]]:
    return [health.cel_expressions(kind) for kind in BY_KIND]


def job_patches() -> list[dict[str, Any]]:
    """One strategic-merge patch per kind that marks its jobs create-only."""
    from compiler import serialize

    out = []
    for kind, adapter in BY_KIND.items():
        body = {"apiVersion": adapter.facts.api_version, "kind": kind,
                "metadata": {"name": "any", "annotations": {SSA_ANNOTATION: "IfNotPresent"}}}
        out.append({"target": {"group": health.GROUP, "version": "v1", "kind": kind},
                    "patch": serialize.dump(body)})
    return out


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
    from compiler import serialize
    from compiler.tree import KUSTOMIZE_API

    out = {f"{env}.yaml": serialize.dump(kustomization(target, env)) for env in envs}
    out["kustomization.yaml"] = serialize.dump(
        {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "resources": sorted(out)})
    return dict(sorted(out.items()))
