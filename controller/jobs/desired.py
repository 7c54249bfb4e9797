"""Pure construction of the pods and headless services upstream creates for one replica.

Given the defaulted job, a replica type and an index, build exactly the object the
Training Operator would POST (semantics §4–§5): name `{job}-{rt}-{i}`, the four
`training.kubeflow.org/*` labels (+ `job-role: master`), the controller owner reference,
restartPolicy from the replica (`ExitCode` -> `Never`), the rendezvous environment from
the shared framework module, and the init container the adapter's `operator_init` names
(PyTorch's wait for the master). A launcher kind's pods (MPIJob's) are built in
`controller/jobs/mpi.py`.

One deliberate difference, off with `--upstream-init-containers`: the init containers we
add carry the restricted securityContext (`INIT_SECURITY_CONTEXT` in
foundation/frameworks/base.py, the fact the compiler's pod security review reads under
`controller: train-controller`), so multi-node PyTorch and MPI jobs run in namespaces that
enforce `restricted`. An init container template (upstream's
`--pytorch-init-container-template-file`) keeps any securityContext it writes itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional

import yaml

from foundation.frameworks.base import INIT_SECURITY_CONTEXT, OperatorInit
from foundation.frameworks.operator import MASTER_ROLE, pod_restart_policy
from controller.jobs.kinds import Kind
from foundation import jsondata
from schemas.upstream import (
    INDEX_LABEL,
    JOB_NAME_LABEL,
    OPERATOR_LABEL,
    ROLE_LABEL,
    TYPE_LABEL,
)

INIT_CONTAINER_COMMAND = (
    "err=1;for i in $(seq {tries}); do if nslookup {master}; then err=0 && break; fi;"
    "echo waiting for master; sleep 2; done; exit $err"
)


# upstream's template (pkg/controller.v1/pytorch/initcontainer.go), for
# --pytorch-init-container-template-file: a YAML list of containers; the only actions are
# these three fields (upstream runs Go's text/template over the same struct)
INIT_TEMPLATE_FIELDS = ("MasterAddr", "InitContainerImage", "MaxTries")
_ACTION = re.compile(r"{{-?\s*(.*?)\s*-?}}", re.S)


class TemplateError(ValueError):
    """An init container template we cannot render (a message for the operator)."""


@dataclass(frozen=True)
class Options:
    """Operator flags that shape pods (semantics §10)."""

    pytorch_init_image: str = "alpine:3.10"
    pytorch_init_max_tries: int = 100
    mpi_kubectl_delivery_image: str = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
    # the text of --pytorch-init-container-template-file; None: upstream's built-in template
    pytorch_init_template: Optional[str] = None
    # add the init containers exactly as upstream does: no securityContext
    upstream_init_containers: bool = False

    def init_security_context(self) -> Optional[dict[str, Any]]:
        """What our init containers get when they set no securityContext of their own."""
        return INIT_SECURITY_CONTEXT["training-operator" if self.upstream_init_containers else "train-controller"]


def secured(containers: list[dict[str, Any]], options: Options) -> list[dict[str, Any]]:
    """Init containers the controller adds, with `options`' securityContext where they have none."""
    security = options.init_security_context()
    if security is None:
        return containers
    return [c if "securityContext" in c else {**c, "securityContext": jsondata.copy(security)} for c in containers]


def render_init_template(text: str, *, master: str, options: Options) -> list[dict[str, Any]]:
    """Upstream's init container template filled in: `{{.MasterAddr}}`, `{{.InitContainerImage}}`
    and `{{.MaxTries}}` replaced, the result read as a YAML list of containers."""
    values = {"MasterAddr": master, "InitContainerImage": options.pytorch_init_image,
              "MaxTries": str(options.pytorch_init_max_tries)}

    def fill(match: re.Match[str]) -> str:
        action = match.group(1)
        if not action.startswith(".") or action[1:] not in values:
            raise TemplateError(f"the init container template uses {{{{{action}}}}}; it may use only "
                                + ", ".join(f"{{{{.{name}}}}}" for name in INIT_TEMPLATE_FIELDS))
        return values[action[1:]]

    try:
        containers = yaml.safe_load(_ACTION.sub(fill, text))
    except yaml.YAMLError as exc:
        raise TemplateError(f"the init container template is not YAML once filled in: {exc}") from None
    if not isinstance(containers, list) or not all(isinstance(c, dict) and c.get("name") for c in containers):
        raise TemplateError("the init container template must be a YAML list of containers, each with a name")
    return containers


def child_name(job_name: str, replica_type: str, *, index: int) -> str:
    return f"{job_name}-{replica_type.lower()}-{index}".replace("/", "-")


def owner_reference(job: dict[str, Any], kind: Kind) -> dict[str, Any]:
    return {
        "apiVersion": kind.facts.api_version,
        "kind": kind.name,
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def base_labels(job: dict[str, Any], kind: Kind) -> dict[str, str]:
    return {
        OPERATOR_LABEL: kind.facts.operator_name,
        JOB_NAME_LABEL: job["metadata"]["name"].replace("/", "-"),
    }


def replica_labels(job: dict[str, Any], kind: Kind, *, replica_type: str, index: int) -> dict[str, str]:
    return {**base_labels(job, kind), TYPE_LABEL: replica_type.lower(), INDEX_LABEL: str(index)}


def pod(job: dict[str, Any], kind: Kind, *, replica_type: str, index: int, options: Options = Options()) -> dict[str, Any]:
    """The pod for (replica_type, index); raises ValueError when upstream would refuse it."""
    replicas = job["spec"][kind.facts.replica_specs]
    replica = replicas[replica_type]
    template = jsondata.copy(replica.get("template") or {})
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    labels = {**(meta.get("labels") or {}), **replica_labels(job, kind, replica_type=replica_type, index=index)}
    if kind.operator.master_role(replicas, replica_type, index):
        labels[ROLE_LABEL] = MASTER_ROLE
    env = kind.adapter.rendezvous_env(job, replica_type, index) if kind.adapter.rendezvous_env else []
    for container in spec.get("containers") or []:
        if kind.operator.env_default_container_only and container.get("name") != kind.facts.container:
            continue
        if env:
            container["env"] = [*(container.get("env") or []), *jsondata.copy(env)]
        if kind.operator.env_default_container_only:
            break
    init = kind.adapter.operator_init  # one that waits beside a master (PyTorch's); a launcher's is controller.jobs.mpi's
    if init is not None and init.beside is not None and init.containers(replica_type, replicas):
        spec["initContainers"] = [*(spec.get("initContainers") or []), *secured(_wait_for_master(job, init, options),
                                                                                options)]
    spec["restartPolicy"] = pod_restart_policy(replica)
    metadata: dict[str, Any] = {
        "name": child_name(job["metadata"]["name"], replica_type, index=index),
        "namespace": job["metadata"].get("namespace", "default"),
        "labels": labels,
        "ownerReferences": [owner_reference(job, kind)],
    }
    for key in ("annotations", "finalizers"):
        if meta.get(key):
            metadata[key] = meta[key]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def template_sets_restart_policy(job: dict[str, Any], kind: Kind, *, replica_type: str) -> bool:
    """Upstream warns (SetPodTemplateRestartPolicy) when the template sets its own policy."""
    replica = job["spec"][kind.facts.replica_specs][replica_type]
    return bool(((replica.get("template") or {}).get("spec") or {}).get("restartPolicy"))


def _wait_for_master(job: dict[str, Any], init: OperatorInit, options: Options) -> list[dict[str, Any]]:
    """The operator's init container that waits until the master's name resolves (`init.beside`
    index 0), or the containers of --pytorch-init-container-template-file."""
    master = child_name(job["metadata"]["name"], str(init.beside), index=0)
    if options.pytorch_init_template is not None:
        return render_init_template(options.pytorch_init_template, master=master, options=options)
    return [{
        "name": init.name,
        "image": options.pytorch_init_image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "limits": {"cpu": "100m", "memory": "20Mi"},
            "requests": {"cpu": "50m", "memory": "10Mi"},
        },
        "command": ["sh", "-c", INIT_CONTAINER_COMMAND.format(tries=options.pytorch_init_max_tries, master=master)],
    }]


def service(job: dict[str, Any], kind: Kind, *, replica_type: str, index: int) -> dict[str, Any]:
    """The headless service for (replica_type, index): every port of the default container."""
    replica = job["spec"][kind.facts.replica_specs][replica_type]
    containers = ((replica.get("template") or {}).get("spec") or {}).get("containers") or []
    ports: dict[str, int] = {}
    found = False
    for container in containers:
        if container.get("name") == kind.facts.container:
            found = True
            for port in container.get("ports") or []:
                ports[port.get("name", "")] = int(port["containerPort"])
            break
    if not found:
        raise ValueError("failed to find the port")
    labels = replica_labels(job, kind, replica_type=replica_type, index=index)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": child_name(job["metadata"]["name"], replica_type, index=index),
            "namespace": job["metadata"].get("namespace", "default"),
            "labels": dict(labels),
            "ownerReferences": [owner_reference(job, kind)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": dict(labels),
            "ports": [{"name": name, "port": port} for name, port in ports.items()],
        },
    }
