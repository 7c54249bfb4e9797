"""`train-compile render`: the stream `kubectl kustomize OUT/<env>` would print.

Objects come out in kustomize's legacy order (known kinds such as ServiceAccount and
PersistentVolumeClaim first, in its fixed list, then everything else by group/version/
kind, namespace and name) so the Argo CD plugin path and the kustomize path produce the
same stream; a test compares the two on every example.
"""

from __future__ import annotations

from compiler.emit import namespaces, serialize
from compiler.emit.source import bundle_objects
from compiler.pipeline import Result

ORDER_FIRST = (
    "Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition", "ServiceAccount",
    "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ConfigMap",
    "Secret", "Endpoints", "Service", "LimitRange", "PriorityClass", "PersistentVolume",
    "PersistentVolumeClaim", "Deployment", "StatefulSet", "CronJob", "PodDisruptionBudget",
)
ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _gvk(obj: dict) -> str:
    group, _, version = obj["apiVersion"].rpartition("/")
    return f"{group}_{version}_{obj['kind']}"


def kustomize_key(obj: dict) -> tuple:
    kind = obj["kind"]
    if kind in ORDER_FIRST:
        rank = ORDER_FIRST.index(kind)
    elif kind in ORDER_LAST:
        rank = len(ORDER_FIRST) + 1 + ORDER_LAST.index(kind)
    else:
        rank = len(ORDER_FIRST)
    meta = obj.get("metadata", {})
    return (rank, _gvk(obj), meta.get("namespace", ""), meta.get("name", ""))


def rendered_objects(result: Result, env: str) -> list[dict]:
    objects = namespaces.for_environment(result, env)
    objects += [obj for bundle in result.bundles.get(env, []) for obj in bundle_objects(bundle)]
    return sorted(objects, key=kustomize_key)


def render_stream(result: Result) -> str:
    """All environments of the run, each environment's objects in kustomize order."""
    objects = [obj for env in result.environments for obj in rendered_objects(result, env)]
    return serialize.dump_all(objects)
