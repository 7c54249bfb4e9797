"""train-controller's progress endpoint: where the compiled pods report, and what proves who they are.

The compiler writes these into each kubeflow-v1 job's pod templates (the Trainer's
environment names, `foundation.progress.protocol`), the controller serves them, and the
install (`controller/install/`) names the same Service and port; one module, so the three
never drift apart.

- **Where**: `https://train-controller.trainforge-system.svc:10443` (a Service in front of the
  controller's Deployment; 10443 is the Trainer's status port too), path
  `/apis/kubeflow.org/v1/namespaces/{ns}/{plural}/{name}/status`, the Trainer's path with the
  job's own group and resource.
- **Who**: a projected ServiceAccount token with the audience `AUDIENCE`, which the controller
  asks a TokenReview to check; the token is bound to its pod, and that pod must belong to the
  job the path names. One audience for every job rather than the Trainer's one per job: the
  pod binding already pins the job, and one audience lets the TokenReview cache serve every
  report of a pod.
- **Trust**: the controller signs its serving certificate with a CA of its own and copies the CA
  certificate into a ConfigMap `CA_CONFIGMAP` in each namespace that has jobs; the pods mount it
  (optional, so a pod never waits for it).
"""

from __future__ import annotations

SERVICE = "train-controller"
NAMESPACE = "trainforge-system"
PORT = 10443
AUDIENCE = "train-controller.trainforge.dev"
CA_CONFIGMAP = "train-controller-progress-ca"
CA_KEY = "ca.crt"
GROUP_VERSION = "kubeflow.org/v1"


def base_url(*, service: str = SERVICE, namespace: str = NAMESPACE, port: int = PORT) -> str:
    return f"https://{service}.{namespace}.svc:{port}"


def path(namespace: str, plural: str, name: str) -> str:
    """The report path of one job (the Trainer's shape: the job's API path plus `/status`)."""
    return f"/apis/{GROUP_VERSION}/namespaces/{namespace}/{plural}/{name}/status"


def parse_path(url_path: str) -> tuple[str, str, str] | None:
    """(namespace, plural, name) of a report path, or None when it is not one."""
    parts = url_path.split("?", 1)[0].strip("/").split("/")
    if len(parts) != 8 or parts[:4] != ["apis", *GROUP_VERSION.split("/"), "namespaces"] or parts[7] != "status":
        return None
    namespace, plural, name = parts[4], parts[5], parts[6]
    return (namespace, plural, name) if namespace and plural and name else None
