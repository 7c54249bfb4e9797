"""Argo CD objects for a trainforge repository, so nobody writes them by hand.

- `install/`: a kustomize Component for the Argo CD installation. It always patches
  `argocd-cm` with the Lua health check of every kubeflow.org kind (Argo CD ships none);
  with the plugin source it also adds the Config Management Plugin (`plugin.yaml` in a
  ConfigMap) and the repo-server sidecar that runs it.
- One Application per environment (or one ApplicationSet with a list generator), with
  `CreateNamespace=true` and the environment's default namespace as destination: Argo CD
  creates that namespace before the sync; the other namespaces jobs name come from the
  Namespace objects of the compiled tree (kept out of pruning). The source is either the committed kustomize tree `OUT/<env>` (render in CI, commit, Argo
  CD runs kustomize) or the plugin, which runs `train-compile render --env <env>` on the
  TrainJob sources in the repo server.

Kueue-managed jobs: `ignore_differences` hides exactly the fields Kueue changes, on
queued jobs only (`compiler.gitops.kueue`), and `RespectIgnoreDifferences=true` keeps a
sync from writing them back, which would suspend a running job or strip its flavor. A job
is a run, not a rollout: auto-sync prunes jobs removed from git but does not self-heal by
default, because a job deleted in the cluster (by `ttlAfterFinished` or by hand) would be
created again and run again.

Deleting a job: Argo CD prunes with foreground propagation unless told otherwise, so the
job lingers with a deletionTimestamp until the garbage collector has deleted its
children; a controller that ignores the deletionTimestamp meanwhile re-creates them
(Kubeflow Trainer v2.3.0 does, for a failed or running TrainJob: kubeflow/trainer#3737),
and the job runs again. `PrunePropagationPolicy=background` (a sync option) deletes the job at
once and leaves its children to the garbage collector, as Flux prunes; the background
resources finalizer does the same when the Application itself is deleted (without a
finalizer Argo CD would leave every job behind; the plain one is foreground).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any, Optional

from foundation.frameworks import BY_KIND
from compiler.gitops import health, kueue

ARGOCD_NAMESPACE = "argocd"
PLUGIN_NAME = "trainforge"
PLUGIN_VERSION = "v1"
ENV_PARAM = "TRAINFORGE_ENV"  # the repo server exposes it as ARGOCD_ENV_TRAINFORGE_ENV
PLUGIN_CONFIGMAP = "trainforge-cmp-plugin"
SIDECAR = "trainforge-cmp"
GENERATE_SCRIPT = (
    'exec train-compile render . --env "${ARGOCD_ENV_' + ENV_PARAM
    + ':?set the TRAINFORGE_ENV plugin parameter to an environment of trainforge.yaml}"'
)
SYNC_OPTIONS = ("CreateNamespace=true", "RespectIgnoreDifferences=true", "ApplyOutOfSyncOnly=true",
                "PrunePropagationPolicy=background")
# Argo CD v3.2 pkg/apis/application/v1alpha1: BackgroundPropagationPolicyFinalizer
FINALIZER = "resources-finalizer.argocd.argoproj.io/background"


@dataclass(frozen=True)
class Target:
    """Where the Applications point: repository, revision, and how manifests are made."""

    repo_url: str
    path: str  # repo-relative: the build output (kustomize) or the TrainJob sources (plugin)
    revision: str = "HEAD"
    source: str = "kustomize"  # kustomize | plugin
    project: str = "default"
    server: str = "https://kubernetes.default.svc"
    namespace: str = ARGOCD_NAMESPACE
    prefix: str = "trainforge"
    self_heal: bool = False
    # env -> the namespace jobs that name none land in; the Application's destination
    # namespace, which CreateNamespace=true creates before the sync (others come from the
    # Namespace objects in the compiled tree).
    namespaces: tuple[tuple[str, str], ...] = ()

    def namespace_of(self, env: str) -> str:
        return dict(self.namespaces).get(env, "default")


def health_keys() -> dict[str, str]:
    """argocd-cm keys: `resource.customizations.health.<group>_<kind>` -> Lua script."""
    return {f"resource.customizations.health.{rule.group}_{kind}": health.lua_script(kind)
            for kind, rule in health.RULES.items()}


def argocd_cm_patch(namespace: str = ARGOCD_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "argocd-cm", "namespace": namespace},
        "data": health_keys(),
    }


def ignore_differences() -> list[dict[str, Any]]:
    """What Kueue changes on a queued job of each kind, as Argo CD ignoreDifferences entries."""
    return [{"group": health.GROUP, "kind": kind, "jqPathExpressions": kueue.jq_paths(kind)} for kind in BY_KIND] + [
        {"group": kueue.TRAINJOB["group"], "kind": kueue.TRAINJOB["kind"],
         "jqPathExpressions": list(kueue.TRAINJOB_JQ)}]


def plugin() -> dict[str, Any]:
    """The Config Management Plugin (`plugin.yaml`, CMP v2)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ConfigManagementPlugin",
        "metadata": {"name": PLUGIN_NAME},
        "spec": {
            "version": PLUGIN_VERSION,
            "discover": {"fileName": "./trainforge.yaml"},
            "generate": {"command": ["sh", "-c"], "args": [GENERATE_SCRIPT]},
            "preserveFileMode": False,
        },
    }


def plugin_configmap(namespace: str = ARGOCD_NAMESPACE) -> dict[str, Any]:
    from compiler.emit import serialize

    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": PLUGIN_CONFIGMAP, "namespace": namespace},
        "data": {"plugin.yaml": serialize.dump(plugin())},
    }


def repo_server_patch(image: str, namespace: str = ARGOCD_NAMESPACE) -> dict[str, Any]:
    """The sidecar that serves the plugin, as a strategic-merge patch of argocd-repo-server."""
    sidecar = {
        "name": SIDECAR,
        "image": image,
        "command": ["/var/run/argocd/argocd-cmp-server"],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 999},
        "volumeMounts": [
            {"name": "var-files", "mountPath": "/var/run/argocd"},
            {"name": "plugins", "mountPath": "/home/argocd/cmp-server/plugins"},
            {"name": PLUGIN_CONFIGMAP, "mountPath": "/home/argocd/cmp-server/config/plugin.yaml",
             "subPath": "plugin.yaml"},
            {"name": "trainforge-cmp-tmp", "mountPath": "/tmp"},
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "argocd-repo-server", "namespace": namespace},
        "spec": {"template": {"spec": {
            "containers": [sidecar],
            "volumes": [
                {"name": PLUGIN_CONFIGMAP, "configMap": {"name": PLUGIN_CONFIGMAP}},
                {"name": "trainforge-cmp-tmp", "emptyDir": {}},
            ],
        }}},
    }


def _source(target: Target, env: str) -> dict[str, Any]:
    source: dict[str, Any] = {"repoURL": target.repo_url, "targetRevision": target.revision}
    if target.source == "plugin":
        source["path"] = target.path
        source["plugin"] = {"name": f"{PLUGIN_NAME}-{PLUGIN_VERSION}", "env": [{"name": ENV_PARAM, "value": env}]}
    else:
        base = posixpath.normpath(target.path or ".")
        source["path"] = env if base == "." else f"{base}/{env}"
    return source


def _spec(target: Target, env: str) -> dict[str, Any]:
    return {
        "project": target.project,
        "source": _source(target, env),
        "destination": {"server": target.server, "namespace": target.namespace_of(env)},
        "ignoreDifferences": ignore_differences(),
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": target.self_heal},
            "syncOptions": list(SYNC_OPTIONS),
        },
    }


def _labels(target: Target) -> dict[str, str]:
    return {"app.kubernetes.io/part-of": target.prefix, "app.kubernetes.io/managed-by": "train-compile"}


def application(target: Target, env: str) -> dict[str, Any]:
    meta = {"name": f"{target.prefix}-{env}", "namespace": target.namespace,
            "labels": {**_labels(target), "trainforge.dev/environment": env},
            # also in an ApplicationSet's template: without one, it would add the foreground finalizer
            "finalizers": [FINALIZER]}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": meta,
            "spec": _spec(target, env)}


def applicationset(target: Target, envs: list[str]) -> dict[str, Any]:
    template = application(target, "{{.env}}")
    del template["apiVersion"], template["kind"], template["metadata"]["namespace"]
    template["spec"]["destination"]["namespace"] = "{{.namespace}}"
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": target.prefix, "namespace": target.namespace, "labels": _labels(target)},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": [{"env": env, "namespace": target.namespace_of(env)}
                                                  for env in envs]}}],
            "template": template,
        },
    }


def files(target: Target, envs: list[str], *, appset: bool = False,
          cmp_image: Optional[str] = None) -> dict[str, str]:
    """The output folder: `{relative path: YAML}` (deterministic)."""
    from compiler.emit import serialize
    from compiler.emit.tree import COMPONENT_API, KUSTOMIZE_API

    out: dict[str, str] = {}
    if appset:
        out["applicationset.yaml"] = serialize.dump(applicationset(target, envs))
        resources = ["applicationset.yaml"]
    else:
        resources = []
        for env in envs:
            out[f"applications/{env}.yaml"] = serialize.dump(application(target, env))
            resources.append(f"applications/{env}.yaml")
    out["kustomization.yaml"] = serialize.dump(
        {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "resources": resources})
    install: dict[str, Any] = {"apiVersion": COMPONENT_API, "kind": "Component",
                               "patches": [{"path": "argocd-cm.yaml"}]}
    out["install/argocd-cm.yaml"] = serialize.dump(argocd_cm_patch(target.namespace))
    if target.source == "plugin":
        if not cmp_image:
            raise ValueError("the plugin source needs the sidecar image (an image with train-compile)")
        install["resources"] = ["cmp-plugin.yaml"]
        install["patches"].append({"path": "repo-server.yaml"})
        out["install/cmp-plugin.yaml"] = serialize.dump(plugin_configmap(target.namespace))
        out["install/repo-server.yaml"] = serialize.dump(repo_server_patch(cmp_image, target.namespace))
    out["install/kustomization.yaml"] = serialize.dump(install)
    return dict(sorted(out.items()))
