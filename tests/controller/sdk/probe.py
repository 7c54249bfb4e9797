"""Runs inside the Kubeflow SDK's own venv (tests/controller/sdk/requirements.txt), never
the project's: one TrainingClient per namespace, driven over stdin/stdout one JSON line per
call, so the SDK's pins (kubernetes<36) cannot reach the project's environment.

Request: {"config_file": ..., "namespace": ..., "call": "<TrainingClient method>",
"args": [...], "kwargs": {...}}. Answer: {"value": <the result as the API's JSON>} or
{"error": "<exception type>", "message": "..."}. `create_pytorchjob` builds a PyTorchJob
from the SDK's own models and creates it with `create_job`, as a user of the SDK would.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kubeflow.training import (KubeflowOrgV1PyTorchJob, KubeflowOrgV1PyTorchJobSpec, KubeflowOrgV1ReplicaSpec,
                               KubeflowOrgV1RunPolicy, TrainingClient)
from kubernetes.client import ApiClient, V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec

clients: dict[tuple[str, str], TrainingClient] = {}
serializer = ApiClient()


def create_pytorchjob(sdk: TrainingClient, namespace: str, name: str, image: str) -> None:
    template = V1PodTemplateSpec(spec=V1PodSpec(containers=[V1Container(name="pytorch", image=image)]))
    sdk.create_job(job=KubeflowOrgV1PyTorchJob(
        api_version="kubeflow.org/v1", kind="PyTorchJob", metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=KubeflowOrgV1PyTorchJobSpec(
            run_policy=KubeflowOrgV1RunPolicy(clean_pod_policy=None),
            pytorch_replica_specs={"Master": KubeflowOrgV1ReplicaSpec(replicas=1, template=template),
                                   "Worker": KubeflowOrgV1ReplicaSpec(replicas=1, template=template)})))


def answer(request: dict[str, Any]) -> Any:
    key = (request["config_file"], request["namespace"])
    if key not in clients:
        clients[key] = TrainingClient(config_file=key[0], namespace=key[1])
    sdk = clients[key]
    if request["call"] == "create_pytorchjob":
        return create_pytorchjob(sdk, key[1], *request["args"])
    return serializer.sanitize_for_serialization(getattr(sdk, request["call"])(*request["args"], **request["kwargs"]))


for line in sys.stdin:
    request = json.loads(line)
    try:
        reply = {"value": answer(request)}
    except Exception as exc:  # noqa: BLE001 - every SDK error goes back to the test, which asserts on it
        reply = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(reply), flush=True)
