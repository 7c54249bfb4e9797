"""The admission table: invalid and borderline-valid jobs of the five webhook kinds, with upstream's answer.

One table for three tests: the Python rules (`foundation/admission.py`) must give exactly these
messages, the shipped ValidatingAdmissionPolicies must refuse exactly these jobs with these
messages on a real kube-apiserver, and upstream's own webhook (v1.9.4) must agree with both
(`test_admission_differential.py`). A case with `upstream` set is a listed difference
(controller/README.md, "Admission"): what upstream answers instead, and why we do not.

Messages are upstream's `field.Error` texts; several errors of one job are compared as a set
(upstream walks a Go map, so its order across replica types is random).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

CONTAINER = {"PyTorchJob": "pytorch", "TFJob": "tensorflow", "XGBoostJob": "xgboost", "PaddleJob": "paddle", "JAXJob": "jax"}
FIELD = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "XGBoostJob": "xgbReplicaSpecs",
         "PaddleJob": "paddleReplicaSpecs", "JAXJob": "jaxReplicaSpecs"}
PLURAL = {"PyTorchJob": "pytorchjobs", "TFJob": "tfjobs", "XGBoostJob": "xgboostjobs", "PaddleJob": "paddlejobs",
          "JAXJob": "jaxjobs"}
BASE = {"PyTorchJob": {"Master": 1, "Worker": 1}, "TFJob": {"Worker": 1}, "XGBoostJob": {"Master": 1, "Worker": 1},
        "PaddleJob": {"Worker": 1}, "JAXJob": {"Worker": 1}}
KINDS = tuple(FIELD)
DNS = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character,"
       " and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is"
       " '[a-z]([-a-z0-9]*[a-z0-9])?')")
LONG = "must be no more than 63 characters"
SUPPORTED_MB = '"kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator"'
NPROC_WARNING = "spec.elasticPolicy.nProcPerNode is deprecated, use spec.nprocPerNode instead"
JAX_MANAGED_BY = "JAXJob: upstream checks no runPolicy field and its JAX reconciler ignores managedBy"
PYTORCH_UPDATE = "PyTorchJob: upstream's update check compares the new object with itself"


@dataclass
class Case:
    id: str
    kind: str
    job: dict[str, Any]
    errors: tuple[str, ...] = ()
    old: dict[str, Any] | None = None  # an update: this is created first, then replaced by `job`
    warnings: tuple[str, ...] = ()
    upstream: tuple[str, ...] | None = None  # upstream's errors where they differ from ours
    why: str = ""  # the listed difference (controller/README.md)
    tags: set[str] = field(default_factory=set)

    @property
    def upstream_errors(self) -> tuple[str, ...]:
        return self.errors if self.upstream is None else self.upstream


def container(kind: str, **extra: Any) -> dict[str, Any]:
    return {"name": CONTAINER[kind], "image": "example.com/train:1", **extra}


def replica(kind: str, count: int | None, containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": {"containers": containers if containers is not None else [container(kind)]}}}
    if count is not None:
        spec["replicas"] = count
    return spec


def job(kind: str, name: str, replicas: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A job with `replicas` as {type: count | replica dict}; extra spec fields as keywords."""
    specs = {t: (r if isinstance(r, dict) else replica(kind, r)) for t, r in (BASE[kind] if replicas is None else replicas).items()}
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name},
            "spec": {FIELD[kind]: specs, **spec}}


def with_managed_by(body: dict[str, Any], value: str | None) -> dict[str, Any]:
    body = copy.deepcopy(body)
    if value is not None:
        body["spec"].setdefault("runPolicy", {})["managedBy"] = value
    return body


def _path(kind: str, rtype: str) -> str:
    return f"spec.{FIELD[kind]}[{rtype}]"


def _per_kind(kind: str) -> list[Case]:
    k, c = kind, CONTAINER[kind]
    jax = kind == "JAXJob"
    pt = kind == "PyTorchJob"
    main = "Worker" if kind in ("TFJob", "PaddleJob", "JAXJob") else "Master"
    default = f'"{c}"' if kind == "PaddleJob" else c
    cases = [
        Case("valid", k, job(k, "n")),
        Case("name starts with a digit", k, job(k, "1job"), (f'metadata.name: Invalid value: "1job": should match: {DNS}',)),
        Case("name with a dot", k, job(k, "a.b"), (f'metadata.name: Invalid value: "a.b": should match: {DNS}',)),
        Case("name of 63 characters", k, job(k, "a" * 63)),
        Case("name of 64 characters", k, job(k, "b" * 64), (f'metadata.name: Invalid value: "{"b" * 64}": should match: {LONG}',)),
        Case("name too long and with a dot", k, job(k, "c" * 62 + ".d"),
             (f'metadata.name: Invalid value: "{"c" * 62}.d": should match: {LONG},{DNS}',)),
        Case("managedBy multikueue", k, with_managed_by(job(k, "n"), "kueue.x-k8s.io/multikueue")),
        Case("managedBy the training operator", k, with_managed_by(job(k, "n"), "kubeflow.org/training-operator")),
        Case("unsupported managedBy", k, with_managed_by(job(k, "n"), "kueue.x-k8s.io/other-controller"),
             (f'spec.runPolicy.managedBy: Unsupported value: "kueue.x-k8s.io/other-controller": supported values: {SUPPORTED_MB}',),
             upstream=() if jax else None, why=JAX_MANAGED_BY if jax else "", tags={"managedBy"}),
        Case("empty managedBy", k, with_managed_by(job(k, "n"), ""),
             (f'spec.runPolicy.managedBy: Unsupported value: "": supported values: {SUPPORTED_MB}',),
             upstream=() if jax else None, why=JAX_MANAGED_BY if jax else ""),
        Case("managedBy set on update", k, with_managed_by(job(k, "n"), "kueue.x-k8s.io/multikueue"),
             ('spec.runPolicy.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable',), old=job(k, "n"),
             upstream=() if jax or pt else None, why=JAX_MANAGED_BY if jax else PYTORCH_UPDATE if pt else ""),
        Case("managedBy changed on update", k, with_managed_by(job(k, "n"), "kubeflow.org/training-operator"),
             ('spec.runPolicy.managedBy: Invalid value: "kubeflow.org/training-operator": field is immutable',),
             old=with_managed_by(job(k, "n"), "kueue.x-k8s.io/multikueue"),
             upstream=() if jax or pt else None, why=JAX_MANAGED_BY if jax else PYTORCH_UPDATE if pt else ""),
        Case("managedBy removed on update", k, job(k, "n"), ("spec.runPolicy.managedBy: Invalid value: null: field is immutable",),
             old=with_managed_by(job(k, "n"), "kubeflow.org/training-operator"),
             upstream=() if jax or pt else None, why=JAX_MANAGED_BY if jax else PYTORCH_UPDATE if pt else ""),
        Case("unchanged managedBy on update", k, with_managed_by(job(k, "n", runPolicy={"backoffLimit": 2}), "kueue.x-k8s.io/multikueue"),
             old=with_managed_by(job(k, "n"), "kueue.x-k8s.io/multikueue")),
        Case("an image removed on update", k, job(k, "n", {**BASE[k], main: replica(k, 1, [{"name": c}])}),
             (f"{_path(k, main)}.template.spec.containers[0].image: Required value: must be required",), old=job(k, "n")),
        Case("a replica without containers", k, job(k, "n", {**BASE[k], main: replica(k, 1, [])}),
             (f"{_path(k, main)}.template.spec.containers: Required value: must be specified",
              f"{_path(k, main)}.template.spec.containers: Required value: must have at least one container with name {default}")),
        Case("a replica without a template", k, job(k, "n", {**BASE[k], main: {"replicas": 1}}),
             (f"{_path(k, main)}.template.spec.containers: Required value: must be specified",
              f"{_path(k, main)}.template.spec.containers: Required value: must have at least one container with name {default}")),
        Case("an empty image", k, job(k, "n", {**BASE[k], main: replica(k, 1, [container(k, image="")])}),
             (f"{_path(k, main)}.template.spec.containers[0].image: Required value: must be required",)),
        Case("a second container without an image", k,
             job(k, "n", {**BASE[k], main: replica(k, 1, [container(k), {"name": "sidecar"}])}),
             (f"{_path(k, main)}.template.spec.containers[1].image: Required value: must be required",)),
        Case("no container with the default name", k,
             job(k, "n", {**BASE[k], main: replica(k, 1, [{"name": "main", "image": "x"}])}),
             (f"{_path(k, main)}.template.spec.containers: Required value: must have at least one container with name {default}",)),
        Case("the default container among others", k,
             job(k, "n", {**BASE[k], main: replica(k, 1, [{"name": "main", "image": "x"}, container(k)])})),
    ]
    if kind != "TFJob":
        allowed = '"Worker"' if jax else '"Master", "Worker"'
        cases += [
            Case("an unknown replica type", k, job(k, "n", {**BASE[k], "Trainer": 1}),
                 (f'{_path(k, "Trainer")}: Unsupported value: "Trainer": supported values: {allowed}',)),
            Case("a lower-case replica type", k, job(k, "n", {**BASE[k], "worker": 1}),
                 (f'{_path(k, "worker")}: Unsupported value: "worker": supported values: {allowed}',)),
        ]
    else:
        cases += [Case("any replica type (TFJob checks none)", k, job(k, "n", {"Worker": 1, "Trainer": 1, "ps": 1}))]
    name_error = f'metadata.name: Invalid value: "9": should match: {DNS}'
    managed = f'spec.runPolicy.managedBy: Unsupported value: "other": supported values: {SUPPORTED_MB}'
    replica_errors = (f"{_path(k, main)}.template.spec.containers[0].image: Required value: must be required",
                      f"{_path(k, main)}.template.spec.containers: Required value: must have at least one container"
                      f" with name {default}")
    cases.append(Case("every rule at once", k,
                      with_managed_by(job(k, "9", {**BASE[k], main: replica(k, 1, [{"name": "x"}])}), "other"),
                      (name_error, managed, *replica_errors), upstream=(name_error, *replica_errors) if jax else None,
                      why=JAX_MANAGED_BY if jax else ""))
    return cases


def _specific() -> list[Case]:
    pt, xgb, tf, pd, jx = "PyTorchJob", "XGBoostJob", "TFJob", "PaddleJob", "JAXJob"
    return [
        Case("Master replicas omitted", pt, job(pt, "n", {"Master": None, "Worker": 1}),
             ("spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",)),
        Case("two Masters", pt, job(pt, "n", {"Master": 2}), ("spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1",)),
        Case("no workers", pt, job(pt, "n", {"Master": 1, "Worker": 0}),
             ("spec.pytorchReplicaSpecs[Worker].replicas: Forbidden: must be at least 1",)),
        Case("Worker replicas omitted", pt, job(pt, "n", {"Worker": None})),
        Case("workers only", pt, job(pt, "n", {"Worker": 3})),
        Case("an empty replica map", pt, job(pt, "n", {})),
        Case("elastic without Worker", pt, job(pt, "n", {"Master": 1}, elasticPolicy={"maxReplicas": 2}),
             ("spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used",)),
        Case("an empty elastic policy without Worker", pt, job(pt, "n", {"Master": 1}, elasticPolicy={}),
             ("spec.pytorchReplicaSpecs[Worker]: Required value: must be configured if elastic policy is used",)),
        Case("elastic with Worker", pt, job(pt, "n", {"Worker": 2}, elasticPolicy={"minReplicas": 1, "maxReplicas": 3},
                                            nprocPerNode="2")),
        Case("deprecated nProcPerNode", pt, job(pt, "n", {"Worker": 2}, elasticPolicy={"nProcPerNode": 2}),
             warnings=(NPROC_WARNING,)),
        Case("both nProcPerNode and nprocPerNode", pt,
             job(pt, "n", {"Worker": 2}, elasticPolicy={"nProcPerNode": 2}, nprocPerNode="2"),
             ("spec.elasticPolicy.nProcPerNode: Forbidden: must not be used with spec.nprocPerNode",), warnings=(NPROC_WARNING,)),
        Case("no Master", xgb, job(xgb, "n", {"Worker": 2}), ("spec.xgbReplicaSpecs[Master]: Required value: must be present",)),
        Case("an empty replica map", xgb, job(xgb, "n", {}), ("spec.xgbReplicaSpecs[Master]: Required value: must be present",)),
        Case("Master replicas omitted", xgb, job(xgb, "n", {"Master": None}),
             ("spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1",)),
        Case("two Masters", xgb, job(xgb, "n", {"Master": 2}), ("spec.xgbReplicaSpecs[Master].replicas: Forbidden: must be 1",)),
        Case("no workers", xgb, job(xgb, "n", {"Master": 1, "Worker": 0})),
        Case("Chief and Master", tf, job(tf, "n", {"Chief": 1, "Master": 1, "Worker": 1}),
             ("spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role",)),
        Case("Chief, PS and Evaluator", tf, job(tf, "n", {"Chief": 1, "PS": 2, "Worker": 2, "Evaluator": 1})),
        Case("an empty replica map", tf, job(tf, "n", {})),
        Case("three Masters", pd, job(pd, "n", {"Master": 3, "Worker": 0})),
        Case("no workers", jx, job(jx, "n", {"Worker": 0})),
        Case("a Master", jx, job(jx, "n", {"Master": 1, "Worker": 1}),
             ('spec.jaxReplicaSpecs[Master]: Unsupported value: "Master": supported values: "Worker"',)),
    ]


CASES: list[Case] = [c for kind in KINDS for c in _per_kind(kind)] + _specific()


def case_id(case: Case) -> str:
    return f"{case.kind} {case.id}"
