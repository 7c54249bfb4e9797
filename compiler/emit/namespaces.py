"""The Namespace objects of a compiled environment: created by the GitOps engine, never deleted by it.

Argo CD and Flux apply the tree as it is; a job whose namespace does not exist fails the
first sync ("namespaces nlp not found"). So each environment's tree carries one
`Namespace` per namespace its jobs use, at `OUT/<env>/<namespace>/namespace.yaml`
(beside the job folders, listed in the environment's kustomization), unless the project
sets `namespaces: {create: false}` (under `defaults` or per environment) because a
platform team owns them. Two properties make it safe to let git create them:

- the engines must never delete one: removing the last job of a namespace from git would
  otherwise prune the namespace and everything in it, including what trainforge never
  wrote. Flux skips objects annotated `kustomize.toolkit.fluxcd.io/prune: Disabled`, and
  Argo CD neither prunes nor deletes (with the Application) an object whose
  `argocd.argoproj.io/sync-options` say `Prune=false,Delete=false` (both as the engines'
  documentation names them);
- the cluster enforces what review checked: the Pod Security Admission labels
  (`enforce`, `warn` and `audit`) carry the environment's `policy.podSecurity` level,
  each version pinned to the one the compiler's checks follow (compiler/podsecurity.py).

Namespaces whose name starts with `kube-` are Kubernetes' own and never emitted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from compiler.podsecurity import KUBERNETES_VERSION
from overlays import waves

if TYPE_CHECKING:
    from compiler.pipeline import Result

NEVER_DELETE = {
    "kustomize.toolkit.fluxcd.io/prune": "Disabled",
    "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
}
PSA_MODES = ("enforce", "warn", "audit")
FILE = "namespace.yaml"


def namespace_object(name: str, level: str) -> dict[str, Any]:
    labels = {}
    for mode in PSA_MODES:
        labels[f"pod-security.kubernetes.io/{mode}"] = level
        labels[f"pod-security.kubernetes.io/{mode}-version"] = KUBERNETES_VERSION
    return waves.annotate({  # wave -1: before the ServiceAccounts and Roles that live in it
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "annotations": dict(NEVER_DELETE), "labels": dict(sorted(labels.items()))},
    })


def for_environment(result: "Result", env: str) -> list[dict[str, Any]]:
    """The Namespace objects of one environment of a compile `Result`, sorted by name."""
    if not result.project.creates_namespaces(env):
        return []
    level = result.project.policy_for(env).pod_security()
    names = {bundle.target.namespace for bundle in result.bundles.get(env, [])}
    return [namespace_object(name, level) for name in sorted(names) if not name.startswith("kube-")]


def path(obj: dict[str, Any]) -> str:
    """The file of a Namespace object, relative to the environment's folder."""
    return f"{obj['metadata']['name']}/{FILE}"
