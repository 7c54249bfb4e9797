"""What the Training Operator does with a kind beyond its shape, declared per kind.

Its defaulting (`Scheme.Default`, applied in memory at every reconcile), which pods it labels
`job-role: master`, which containers get the rendezvous environment, the status rule it
applies (semantics §6), whether its webhook validates the kind or its reconciler does, and
that webhook's rules. Each adapter module declares its kind's as an `Operator`
(`Adapter.operator`): train-controller reads them there, and so does the compiler's
admission review, so neither names a kind. The status rule is data too (`StatusRule`: which
replica types decide the job, and each way upstream's seven rules differ), which
`controller.jobs.status` runs; everything here is data or a pure function on plain dicts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional

from schemas.upstream import pod_spec

if TYPE_CHECKING:
    from foundation.frameworks.base import Facts

# (replicas of the job, replica type, index) -> whether that pod gets job-role: master
MasterRole = Callable[[Mapping[str, Any], str, int], bool]
MASTER_ROLE = "master"  # schemas.upstream.ROLE_LABEL's one value, on the pods each kind's `master_role` picks
# (facts, spec, replica specs, runPolicy) -> None: defaults written into the (copied) spec
Defaults = Callable[["Facts", dict[str, Any], dict[str, Any], dict[str, Any]], None]
# job -> [] or [the first problem]: what upstream's reconciler checks on a kind without a webhook
ReconcilerCheck = Callable[[Mapping[str, Any]], list[str]]


def master_or_worker0(*masters: str) -> MasterRole:
    """The master types when the job has one, else worker 0 (PyTorchJob, TFJob)."""

    def rule(replicas: Mapping[str, Any], replica_type: str, index: int) -> bool:
        if any(m in replicas for m in masters):
            return replica_type in masters
        return replica_type == "Worker" and index == 0

    return rule


def only(*types: str) -> MasterRole:
    return lambda replicas, replica_type, index: replica_type in types


def first_of_each(replicas: Mapping[str, Any], replica_type: str, index: int) -> bool:
    """Index 0 of every replica type (JAXJob)."""
    return index == 0


@dataclass(frozen=True)
class WebhookRules:
    """What differs between the v1 validating webhooks; every field is one upstream `if`, and
    the replica types it names are the kind's own (`foundation.admission` holds the rules'
    text, Python and CEL, and reads which apply, and to what, from here)."""

    any_replica_type: bool = False  # TFJob accepts any replica type; the others only their own
    quote_container: bool = False  # PaddleJob's message quotes the container name
    exactly_one: Optional[str] = None  # this replica type, when present, must set replicas: 1
    others_at_least_one: bool = False  # every other replica type's replicas, when set, >= 1
    required: Optional[str] = None  # this replica type must be present
    not_both: Optional[tuple[str, str]] = None  # a job may not have both replica types
    elastic: Optional[str] = None  # elasticPolicy needs this replica type; nProcPerNode is deprecated


@dataclass(frozen=True)
class StatusRule:
    """Upstream's `UpdateJobStatus` of one kind as data (semantics §6), run replica type by
    replica type by controller.jobs.status; what differs between the kinds' rules is one field
    each, every field one upstream `if`."""

    deciders: tuple[str, ...]  # their pods make the job Running and Succeeded, when the job has one
    workers: Optional[str] = None  # decides instead when the job has no decider (messages name namespace/name)
    visit: Optional[tuple[str, ...]] = None  # only these types, in this order; None: the kind's, then any other sorted
    namespaced: bool = False  # the deciders' and failures' messages name namespace/name, and say "has failed"
    stops: bool = True  # a decider's success ends the rule
    running_with_outcome: bool = False  # Running is set again beside a decider's success and every failure
    # decides like a decider in a job of exactly one such replica and none of `sole_unless`
    sole: Optional[str] = None
    sole_unless: tuple[str, ...] = ()
    # the workers succeed before all are done: any of them succeeded in an elastic job ("elastic"),
    # or worker 0 exited 0 ("worker-0") unless the spec field `early_success_unless[0]` says `[1]`
    early_success: Optional[Literal["elastic", "worker-0"]] = None
    early_success_unless: Optional[tuple[str, str]] = None
    failures_while_short: bool = False  # failures count only while fewer pods are up or done than replicas
    restart: Literal["unless-never", "exit-code", "never"] = "unless-never"  # the restartPolicy that restarts
    failed_reason: str = "Failed"  # the Failed condition's reason, after the kind's name
    failure_subject: Optional[str] = None  # how failure and restart messages name the kind (None: its name)
    keeps_restarting: bool = False  # a failure sets a Restarting condition already there again instead of failing
    dynamic_workers: Optional[str] = None  # a spec flag under which failures of the workers are ignored


# ---------------------------------------------------------------------- names and replica specs
DNS1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"
DNS1035_ERROR = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic"
                 " character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for"
                 f" validation is '{DNS1035}')")
TOO_LONG = "must be no more than 63 characters"
_DNS1035_RE = re.compile(f"^{DNS1035}$")


def name_reasons(name: str) -> list[str]:
    """Why upstream's validation refuses a job name (a DNS-1035 label of at most 63 bytes); [] if it does not."""
    return ([TOO_LONG] if len(name.encode()) > 63 else []) + ([] if _DNS1035_RE.match(name) else [DNS1035_ERROR])


def replica_map(job: Mapping[str, Any], field_name: str) -> Mapping[str, Any] | None:
    """``spec.<field_name>`` when it is a map, else None."""
    specs = (job.get("spec") or {}).get(field_name)
    return specs if isinstance(specs, dict) else None


def container_list(replica: Any) -> list[Any]:
    """A replica spec's ``template.spec.containers`` when it is a list, else []."""
    if not isinstance(replica, dict):
        return []
    found = pod_spec(replica).get("containers")
    return found if isinstance(found, list) else []


# ---------------------------------------------------------------------- CRD schema atoms
# (the kinds' own spec fields below, and controller.generators.crds for the rest of each CRD)
INT32 = {"type": "integer", "format": "int32"}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
ANY_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


def elastic_policy_schema(*, torch_rendezvous: bool) -> dict[str, Any]:
    """upstream's elasticPolicy: PyTorchJob's carries the torchrun rendezvous, PaddleJob's not."""
    fields: dict[str, Any] = {
        "maxReplicas": INT32,
        "maxRestarts": INT32,
        "metrics": {"type": "array", "items": ANY_OBJECT},
        "minReplicas": INT32,
    }
    if torch_rendezvous:
        fields.update({
            "nProcPerNode": INT32,
            "rdzvBackend": STRING,
            "rdzvConf": {"type": "array", "items": obj({"key": STRING, "value": STRING})},
            "rdzvHost": STRING,
            "rdzvId": STRING,
            "rdzvPort": INT32,
            "standalone": BOOLEAN,
        })
    return obj(fields)


INT64 = {"type": "integer", "format": "int64"}
QUANTITY = {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}


def run_policy() -> dict[str, Any]:
    """Every v1 kind's `spec.runPolicy` (upstream's common RunPolicy), with its one default."""
    return obj({
        "activeDeadlineSeconds": INT64,
        "backoffLimit": INT32,
        "cleanPodPolicy": STRING,
        "managedBy": STRING,
        "schedulingPolicy": obj({
            "minAvailable": INT32,
            "minResources": {"type": "object", "additionalProperties": QUANTITY},
            "priorityClass": STRING,
            "queue": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "spec.runPolicy.schedulingPolicy.queue is immutable"}]},
            "scheduleTimeoutSeconds": INT32,
        }),
        "suspend": {"type": "boolean", "default": False},
        "ttlSecondsAfterFinished": INT32,
    })


def replica_specs() -> dict[str, Any]:
    """A v1 kind's `<x>ReplicaSpecs`: replica type -> replicas, restartPolicy and the pod template."""
    return {"type": "object", "additionalProperties": obj({
        "replicas": INT32,
        "restartPolicy": STRING,
        "template": ANY_OBJECT,
    })}


# ---------------------------------------------------------------------- defaulting
def _replica_dicts(replicas: dict[str, Any]) -> list[dict[str, Any]]:
    return [value for value in replicas.values() if isinstance(value, dict)]


def _default_port(replica: dict[str, Any], container_name: str, port_name: str | None, port: int | None) -> None:
    if port_name is None or port is None:
        return
    containers = pod_spec(replica).get("containers") or []
    if not containers or not all(isinstance(c, dict) for c in containers):
        return  # validation reports it; upstream's webhook would have rejected it
    target = next((c for c in containers if c.get("name") == container_name), containers[0])
    ports = target.get("ports") or []
    if not any(isinstance(p, dict) and p.get("name") == port_name for p in ports):
        target["ports"] = [*ports, {"name": port_name, "containerPort": port}]


def standard_defaults(facts: "Facts", spec: dict[str, Any], replicas: dict[str, Any], run_policy: dict[str, Any]) -> None:
    """cleanPodPolicy None; each replica: 1 replica, the kind's restart policy, its port."""
    if run_policy.get("cleanPodPolicy") is None:
        run_policy["cleanPodPolicy"] = "None"
    for replica in _replica_dicts(replicas):
        if replica.get("replicas") is None:
            replica["replicas"] = 1
        if not replica.get("restartPolicy"):
            replica["restartPolicy"] = facts.default_restart
        _default_port(replica, facts.container, facts.port_name, facts.port)


def elastic_bounds(spec: dict[str, Any], replicas: dict[str, Any]) -> None:
    """elasticPolicy min/maxReplicas from each other, or from the Worker replicas."""
    policy, worker = spec.get("elasticPolicy"), replicas.get("Worker")
    if not isinstance(policy, dict):
        return
    low, high = policy.get("minReplicas"), policy.get("maxReplicas")
    if low is None and high is not None:
        policy["minReplicas"] = high
    elif high is None and low is not None:
        policy["maxReplicas"] = low
    elif low is None and high is None and isinstance(worker, dict):
        policy["minReplicas"] = policy["maxReplicas"] = worker.get("replicas", 1)


@dataclass(frozen=True)
class Operator:
    """The Training Operator's handling of one kind (module docstring)."""

    status: StatusRule  # its UpdateJobStatus, which controller.jobs.status runs
    master_role: MasterRole
    defaults: Defaults = standard_defaults
    env_default_container_only: bool = False  # the environment goes to the kind's container only (TFJob)
    fills_selector: bool = False  # replicaStatuses[*].selector (PyTorch, Paddle, JAX)
    # no webhook: the reconciler validates every pass with this check, reports its first problem
    # by Event and retries (MPIJob, MXJob; upstream walks a Go map, in random order: ours is sorted)
    reconciler_check: Optional[ReconcilerCheck] = None
    webhook: Optional[WebhookRules] = None  # the validating webhook's rules (None: none)
    # the kind's own top-level spec fields in its CRD (OpenAPI), and those it requires
    # besides the replica specs
    spec_fields: Mapping[str, Any] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    # what the operator reads for a spec field left unset, at use time rather than by its
    # defaulting: (path under spec, value), meaningful where the path's parent is set (PyTorch's
    # rendezvous backend, MPI's slots); the importer's round trip counts unset as that value
    implicit: tuple[tuple[tuple[str, ...], Any], ...] = ()

    def with_implicit(self, spec: dict[str, Any]) -> dict[str, Any]:
        """`spec` (changed in place) with each `implicit` value where it is unset and its parent set."""
        for path, value in self.implicit:
            node: Any = spec
            for key in path[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict) and node.get(path[-1]) is None:
                node[path[-1]] = value
        return spec


def pod_restart_policy(replica: Mapping[str, Any]) -> str:
    """The restartPolicy the operator writes into every pod of a replica, over the template's
    own: the replica's, `ExitCode` as `Never` (the operator restarts those pods itself)."""
    policy = replica.get("restartPolicy") or "Never"
    return "Never" if policy == "ExitCode" else str(policy)
