"""The compiler's pod template review against the API server: it refuses a spec exactly when
kube-apiserver v1.32 refuses one of its pods.

Every case of `pod_template_cases.CASES` is compiled for two or more frameworks, twice: once
through the whole pipeline (the compiler's verdict), once lowered with no review at all, so
that the pods of a spec the compiler refuses still exist to be judged. Each of those pods,
built as the operator builds them (train-controller's pod builder: the template plus the
operator's init containers, rendezvous env and restart policy), goes to the project's
kube-apiserver as a server-side dry-run create with strict field validation
(`dryRun=All&fieldValidation=Strict`: unknown fields are refused, not dropped), all cases in
one namespace and a few requests at a time. That server runs its default admission plugins as
a cluster does (`admission_plane`): the session's control plane turns ServiceAccount admission
off, as envtest does, and without it validation refuses pods a cluster admits (a projected
serviceAccountToken on a pod that names no account, which the plugin gives `default`). The server's verdict is 201 (it takes the pod)
or 400/403/422 (strict decoding, an admission plugin or validation refuses it); anything else
fails the test.

Cases marked `beyond_server` are ones the server takes while something else goes wrong (the
shared-memory size lost, a restartPolicy the operator overwrites, a port the operator cannot
find, a keyed list whose second item the strategic merge folds into the first): there the
compiler must refuse and the server must take the pods (or the operator's pod builder
refuse them), so the reason stays visible.
"""

from __future__ import annotations

import copy
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import pytest
from pod_template_cases import (
    CASES,
    FIELD,
    VALID,
    Case,
    compiler_errors,
    job_for,
    params,
)
from test_pod_security_admission import operator_pods

from testworld.controlplane import ControlPlane, env_true

pytestmark = pytest.mark.controlplane
REFUSED = (400, 403, 422)  # strict decoding, an admission plugin, validation


@dataclass
class Verdict:
    errors: list[str]  # the compiler's error lines
    pods: list[dict[str, Any]]  # the pods as the operator would create them, unreviewed
    operator_refused: str = ""  # the operator's pod builder refused the job (upstream would too)
    server: Optional[list[tuple[int, str]]] = None  # (status, reason) per pod

    @property
    def compiler_refuses(self) -> bool:
        return bool(self.errors)

    @property
    def server_refuses(self) -> bool:
        return any(status in REFUSED for status, _ in self.server or [])


def unreviewed_job(folder) -> dict[str, Any]:
    """The kubeflow.org job as lowering and the overlays write it, no rule consulted."""
    from compiler.reading.resolve import targets_for
    from compiler.reading.sources import collect
    from compiler.targets import api
    from overlays import STEPS
    from schemas.project import DEFAULT_PROJECT
    from schemas.trainjob import TrainJob

    (doc,) = collect([folder]).jobs
    targets, problems = targets_for(doc, TrainJob.model_validate(doc.data), DEFAULT_PROJECT, ["default"])
    assert targets, problems
    bundle = api(targets[0].api).lower(targets[0])
    for step in STEPS:
        bundle = step(bundle)
    return bundle.rendered_job()


def raw_pods(job: dict[str, Any]) -> list[dict[str, Any]]:
    """The templates as pods, for a template the operator's builder cannot even read (containers
    written as a map): what the operator would send, were it to get that far."""
    from controller.jobs.kinds import KINDS

    replicas = job["spec"][KINDS[job["kind"]].facts.replica_specs]
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {**copy.deepcopy(r["template"].get("metadata") or {}), "name": f"raw-{t.lower()}"},
             "spec": copy.deepcopy(r["template"].get("spec"))} for t, r in replicas.items()]


def judge(folder, case: Case, framework: str) -> Verdict:
    doc = job_for(case, framework)
    errors = compiler_errors(folder, doc)
    job = unreviewed_job(folder)
    try:
        return Verdict(errors, operator_pods(job))
    except ValueError as refused:  # upstream's reconciler refuses the job (e.g. its port is gone)
        return Verdict(errors, [], operator_refused=str(refused))
    except (TypeError, AttributeError, KeyError):
        return Verdict(errors, raw_pods(job))


@pytest.fixture(scope="module")
def admission_plane(envtest_assets) -> Iterator[ControlPlane]:
    """kube-apiserver with its default admission plugins, ServiceAccount among them, as a cluster
    runs it (or the cluster itself with USE_EXISTING_CLUSTER)."""
    if env_true("USE_EXISTING_CLUSTER"):
        plane = ControlPlane(use_existing=True)
    else:
        plane = ControlPlane(assets=envtest_assets, service_account_admission=True)
    with plane:
        yield plane


def oracle_namespace(plane: ControlPlane, accounts: set[str]) -> str:
    """A namespace holding the ServiceAccounts its pods name, `default` included: what a cluster's
    ServiceAccount controller (default) and the jobs' rbac components (or the platform) create."""
    namespace = f"pod-oracle-{uuid.uuid4().hex[:6]}"
    status, body = plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    assert status == 201, body
    for account in sorted(accounts | {"default"}):
        status, body = plane.request("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts",
                                     {"metadata": {"name": account}})
        assert status == 201, body
    return namespace


@pytest.fixture(scope="module")
def verdicts(admission_plane, tmp_path_factory) -> dict[tuple[str, str], Verdict]:
    """Every (case, framework): the compiler's verdict, then all pods sent in one batch."""
    control_plane = admission_plane
    out = {(name, framework): judge(tmp_path_factory.mktemp("oracle"), CASES[name], framework)
           for name, framework in params()}
    accounts = {str(pod["spec"]["serviceAccountName"]) for verdict in out.values() for pod in verdict.pods
                if isinstance(pod.get("spec"), dict) and pod["spec"].get("serviceAccountName")}
    namespace = oracle_namespace(control_plane, accounts)
    path = f"/api/v1/namespaces/{namespace}/pods?dryRun=All&fieldValidation=Strict"

    def send(pod: dict[str, Any]) -> tuple[int, str]:
        pod = copy.deepcopy(pod)
        pod["metadata"].pop("namespace", None)
        status, answer = control_plane.request("POST", path, pod)
        assert status == 201 or status in REFUSED, f"the server answered {status}: {answer}"
        return status, "" if status == 201 else str(answer.get("message", answer))

    jobs = [(key, pod) for key, verdict in out.items() for pod in verdict.pods]
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda item: send(item[1]), jobs))
    for (key, _), answer in zip(jobs, answers):
        out[key].server = (out[key].server or []) + [answer]
    return out


def test_the_oracle_server_names_the_default_account_as_a_cluster_does_and_envtests_would_not(
        admission_plane, control_plane):
    token = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "token"}, "spec": {
        "containers": [{"name": "main", "image": "busybox:1.36", "volumeMounts": [{"name": "t", "mountPath": "/t"}]}],
        "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]}}
    envtest_namespace = f"pod-oracle-{uuid.uuid4().hex[:6]}"
    assert control_plane.request("POST", "/api/v1/namespaces", {"metadata": {"name": envtest_namespace}})[0] == 201

    admitted, pod = admission_plane.request(
        "POST", f"/api/v1/namespaces/{oracle_namespace(admission_plane, set())}/pods?dryRun=All", token)
    refused, answer = control_plane.request("POST", f"/api/v1/namespaces/{envtest_namespace}/pods?dryRun=All", token)

    assert admitted == 201 and pod["spec"]["serviceAccountName"] == "default", pod
    assert refused == 422 and "must not be specified when serviceAccountName is not set" in answer["message"], answer


@pytest.mark.parametrize(("name", "framework"), [pytest.param(n, f, id=f"{n} ({f})") for n, f in params()])
def test_the_compiler_refuses_exactly_when_the_server_refuses_a_pod(verdicts, name, framework):
    case, verdict = CASES[name], verdicts[(name, framework)]

    if case.beyond_server:
        assert verdict.compiler_refuses, f"{case.beyond_server}, yet the compiler took it"
        assert not verdict.server_refuses, f"the server refuses it after all: {verdict.server}"
    else:
        assert verdict.pods, f"the operator's pod builder refused: {verdict.operator_refused}"
        assert verdict.compiler_refuses == verdict.server_refuses, (
            f"compiler: {verdict.errors or 'accepts'}; server: {verdict.server}")
        assert verdict.compiler_refuses == case.invalid, (verdict.errors, verdict.server)


def test_the_table_covers_every_category_for_several_frameworks(verdicts):
    per_category = Counter(case.category for case in CASES.values())
    frameworks = {framework for _, framework in verdicts}

    assert all(per_category[category] >= 3 for category in (*FIELD, VALID)), per_category
    assert per_category[VALID] >= 15 and frameworks == {"pytorch", "tensorflow", "mpi", "xgboost", "paddle", "jax",
                                                        "mxnet"}


def test_every_refusal_is_positioned_with_a_path_and_a_fix(verdicts):
    for (name, _), verdict in verdicts.items():
        for line in verdict.errors:
            where, _, rest = line.partition(": error: ")
            assert where.count(":") == 2 and where.split(":")[1].isdigit(), line
            assert rest.startswith("spec.") and "; " in rest, line
