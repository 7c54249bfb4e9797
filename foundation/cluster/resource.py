"""An API resource as a request names it: group, version, plural, kind and scope.

Its own module, free of the client's imports (urllib3, orjson, the kubernetes config
loaders), because the compiler's CLI names the resources it will read while it starts
(`compiler/cli/cluster.py`, `compiler/cli/live/`) and must stay light until it reads a
cluster; the controller, the test world and the CLI share this one descriptor, and
`foundation.cluster.kube` sends the requests.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    """One API resource (`group` "" is the core group)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base

    def audit_name(self, sub: str | None = None) -> str:
        """`group/resource[/sub]` as RBAC and the audit log spell it."""
        return f"{self.group}/{self.plural}" + (f"/{sub}" if sub else "")


PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
EVENTS = Resource("", "v1", "events", "Event")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
ROLES = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLEBINDINGS = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
CONTROLLERREVISIONS = Resource("apps", "v1", "controllerrevisions", "ControllerRevision")
# Kueue's Workload of a queued job, newest served version first (v0.17 and v0.19 serve both)
WORKLOADS = (Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload"),
             Resource("kueue.x-k8s.io", "v1beta1", "workloads", "Workload"))
