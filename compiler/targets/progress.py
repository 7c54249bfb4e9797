"""Where a kubeflow-v1 job's pods report progress: train-controller's endpoint, in the Trainer's words.

On the trainer-v2 target the Trainer itself gives every trainer pod `KUBEFLOW_TRAINER_SERVER_URL`,
`..._CA_CERT` and `..._TOKEN` and the projected volume they name (its TrainJobStatus feature
gate), so that lowering adds nothing. A kubeflow.org/v1 job run by train-controller gets the
same three variables and an equivalent volume here, pointing at train-controller's endpoint
(`foundation.progress.endpoint`): the same training code, the client library or the Hugging
Face `Trainer`'s own Kubeflow callback, reports on either target without a change.

Why the compiler and not the controller's pod building: the pods' templates are what git
holds, what `plan` and `status` compare and what the parity test holds equal to upstream's;
a controller adding a volume to every pod would make each one differ from its template and
from what the Training Operator makes. Written here, it is in the reviewed output like any
other field, and a job compiled for the Training Operator (`controller: training-operator`,
where nobody serves the endpoint) gets none of it.

What is added, to every container of every replica type: the three variables (a variable
the spec sets itself keeps the spec's value) and a read-only mount of one projected volume
holding a ServiceAccount token for train-controller's audience (bound to the pod, rotated by
the kubelet) and the CA certificate from the namespace's `train-controller-progress-ca`
ConfigMap (optional: a pod never waits for it; the controller writes it when it first sees a
job in the namespace); and `serviceAccountName: default` where the template names no account,
as the API server's ServiceAccount admission would (a server without that plugin refuses a
projected token for a pod that names no account).
"""

from __future__ import annotations

from foundation.progress import endpoint
from foundation.progress.protocol import (
    CA_FILE,
    ENV_CA_CERT,
    ENV_TOKEN,
    ENV_URL,
    MOUNT_PATH,
    TOKEN_EXPIRY_SECONDS,
    TOKEN_FILE,
    VOLUME_NAME,
)
from schemas.bundle import JsonObject

CONTROLLER = "train-controller"  # the controller that serves the endpoint (schemas.project.ControllerName)
DEFAULT_ACCOUNT = "default"


def env(namespace: str, plural: str, name: str) -> list[JsonObject]:
    url = endpoint.base_url() + endpoint.path(namespace, plural, name)
    return [{"name": ENV_URL, "value": url}, {"name": ENV_CA_CERT, "value": f"{MOUNT_PATH}/{CA_FILE}"},
            {"name": ENV_TOKEN, "value": f"{MOUNT_PATH}/{TOKEN_FILE}"}]


def volume() -> JsonObject:
    return {"name": VOLUME_NAME, "projected": {"sources": [
        {"serviceAccountToken": {"audience": endpoint.AUDIENCE, "expirationSeconds": TOKEN_EXPIRY_SECONDS,
                                 "path": TOKEN_FILE}},
        {"configMap": {"name": endpoint.CA_CONFIGMAP, "items": [{"key": endpoint.CA_KEY, "path": CA_FILE}],
                       "optional": True}},
    ]}}


def report_to_controller(template: JsonObject, *, namespace: str, plural: str, name: str) -> JsonObject:
    """`template` (a pod template this lowering owns) with the reporting environment and volume."""
    spec = template.get("spec") or {}
    added = env(namespace, plural, name)
    for container in spec.get("containers") or []:
        own = {e.get("name") for e in container.get("env") or []}
        extra = [e for e in added if e["name"] not in own]
        if extra:
            container["env"] = [*(container.get("env") or []), *extra]
        mounts = container.get("volumeMounts") or []
        if not any(m.get("name") == VOLUME_NAME for m in mounts):
            container["volumeMounts"] = [*mounts, {"name": VOLUME_NAME, "mountPath": MOUNT_PATH, "readOnly": True}]
    volumes = spec.get("volumes") or []
    if not any(v.get("name") == VOLUME_NAME for v in volumes):
        spec["volumes"] = [*volumes, volume()]
    if not spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        # what the ServiceAccount admission plugin writes into every pod of a real cluster; an
        # API server without it refuses a projected token for a pod that names no account
        spec["serviceAccountName"] = DEFAULT_ACCOUNT
    return template
