"""Least privilege, tested: `train-controller` runs as a process with exactly the ServiceAccount
and RBAC of `controller/install` (rendered by `kubectl kustomize`, applied to the test API
server, a token from the TokenRequest API for that ServiceAccount) through a small path of
every behaviour that talks to the API server: a lifecycle of each kind, adoption, restart,
cleanup, TTL, suspend, MPI's launcher helpers, the elastic HPA, both gang schedulers'
PodGroups and leader election. With the whole install every path completes and no request is
refused; then each rule loses one verb, resource or API group at a time (RBAC only adds, so
removing a whole rule breaks at least as much) and the path named for it breaks: the API
server's audit log shows the request it refused (403) and the controller's log says so.
`ABLATIONS` is that table (controller/README.md shows it), and a test checks that it names
every verb, resource and group of the install, so a new grant cannot arrive untested.

Cost: the session's control plane; the whole install runs `python -m controller` (about 20 s
for all paths), each ablation a controller forked from a warm interpreter (the same CLI entry
point, arguments and environment in a process of its own, without 2 s of imports; about 2 s).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from copy import deepcopy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from controller_kit import ESCALATION_ONLY, PODS_FIRST, Cluster, job, one_job_resource

from controller.jobs.gang import SCHEDULER_PLUGINS, VOLCANO
from controller.jobs.hpa import HPAS
from controller.jobs.kinds import KINDS, job_resource
from controller.jobs.run_record import CONTROLLERREVISIONS
from foundation.cluster import errors
from foundation.cluster.kube import (
    CONFIGMAPS,
    EVENTS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
    Client,
    Resource,
)
from controller.progress.certs import SECRET as CERT_SECRET
from controller.progress.certs import SECRETS
from controller.runtime.leader import LEASES
from foundation.progress.endpoint import CA_CONFIGMAP, path
from progress_kit import Poster, mint, report
from testworld.assets import kubectl_path
from testworld.controlplane import free_port

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "controller" / "install"
SYSTEM = "trainforge-system"  # the install's namespace: its ServiceAccount, Role and Lease live here
ACCOUNT = "train-controller"
USER = f"system:serviceaccount:{SYSTEM}:{ACCOUNT}"
LEASE = "train-controller.trainforge.io"  # --leader-election-id's default, as the Deployment runs it
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
GANG = {"volcano": "gang/volcano", "scheduler-plugins": "gang/scheduler-plugins"}
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
ROLE_KINDS = {"ClusterRole": Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
              "Role": ROLES}
SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview",
                                  namespaced=False)
STEP = 30.0  # seconds a path waits for one effect of the controller


# ---------------------------------------------------------------------------- the install, rendered
def render(tmp: Path, component: str | None = None) -> list[dict[str, Any]]:
    """`kubectl kustomize` of the install, or of a user's kustomization adding a component."""
    folder = INSTALL
    if component:
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "kustomization.yaml").write_text(yaml.safe_dump({
            "resources": [os.path.relpath(INSTALL, tmp)], "components": [os.path.relpath(INSTALL / component, tmp)]}))
        folder = tmp
    out = subprocess.run([str(kubectl_path()), "kustomize", str(folder)], capture_output=True, text=True, check=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def rbac(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] in RBAC_KINDS]


def deployment_args(docs: list[dict[str, Any]]) -> list[str]:
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    return list(deployment["spec"]["template"]["spec"]["containers"][0]["args"])


def role_rules(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [rule for d in docs if d["kind"] in ("ClusterRole", "Role") for rule in d["rules"]]


def grants(docs: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """(verb, group/resource) of every grant of the install's roles."""
    return {(verb, f"{group}/{res}") for rule in role_rules(docs) for group in rule["apiGroups"]
            for res in rule["resources"] for verb in rule["verbs"]}


# ---------------------------------------------------------------------------- the ablations
JOB_PLURALS = {kind: job_resource(k).plural for kind, k in KINDS.items()}
RULES = {  # a rule is named by a resource it holds; each (group, resource) is in exactly one rule
    "jobs": "pytorchjobs", "job status": "pytorchjobs/status", "pods": "pods", "pods/exec": "pods/exec",
    "services": "services", "events": "events", "configmaps": "configmaps", "serviceaccounts": "serviceaccounts",
    "roles": "roles", "rolebindings": "rolebindings", "leases": "leases", "podgroups": "podgroups",
    "priorityclasses": "priorityclasses", "hpa": "horizontalpodautoscalers", "controllerrevisions": "controllerrevisions",
    "tokenreviews": "tokenreviews", "secrets": "secrets",
}


@dataclass(frozen=True)
class Ablation:
    """Rule `rule` without `cut` (one of its verbs, resources or API groups): `path` breaks,
    the server refusing `refused` (verb, group/resource[/subresource])."""

    rule: str
    cut: str
    path: str
    refused: tuple[str, str]

    @property
    def id(self) -> str:
        return f"{self.rule} without {self.cut}"

    def apply(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The install's RBAC with `cut` taken out of the rule (the rule dropped if left empty)."""
        out = deepcopy(docs)
        for doc in (d for d in out if d["kind"] in ("ClusterRole", "Role")):
            for rule in doc["rules"]:
                if RULES[self.rule] in rule["resources"]:  # (a resource's verbs may sit in two rules)
                    field = next((f for f in ("verbs", "resources", "apiGroups") if self.cut in rule[f]), None)
                    if field is not None:
                        rule[field].remove(self.cut)
            doc["rules"] = [r for r in doc["rules"] if all(r[f] for f in ("verbs", "resources", "apiGroups"))]
        return out


def _ablations() -> list[Ablation]:
    lc, pt = "lifecycle/PyTorchJob", "kubeflow.org/pytorchjobs"
    table = [
        Ablation("jobs", "list", lc, ("list", pt)),
        Ablation("jobs", "watch", lc, ("watch", pt)),
        Ablation("jobs", "delete", "ttl", ("delete", pt)),
        *(Ablation("jobs", plural, f"lifecycle/{kind}", ("list", f"kubeflow.org/{plural}"))
          for kind, plural in JOB_PLURALS.items()),
        Ablation("job status", "update", lc, ("update", f"{pt}/status")),
        Ablation("job status", "patch", "progress", ("patch", f"{pt}/status")),  # a report's status.trainerStatus
        *(Ablation("job status", f"{plural}/status", f"lifecycle/{kind}", ("update", f"kubeflow.org/{plural}/status"))
          for kind, plural in JOB_PLURALS.items()),
        *(Ablation("pods", verb, lc, (verb, "/pods")) for verb in ("list", "watch", "create")),
        Ablation("pods", "delete", "restart", ("delete", "/pods")),
        Ablation("pods", "patch", "adoption", ("patch", "/pods")),
        # held only to grant it to the MPI launcher's Role: the server refuses that Role
        Ablation("pods", "get", "mpi", ("create", "rbac.authorization.k8s.io/roles")),
        Ablation("pods/exec", "create", "mpi", ("create", "rbac.authorization.k8s.io/roles")),
        *(Ablation("services", verb, lc, (verb, "/services")) for verb in ("list", "watch", "create")),
        Ablation("services", "delete", "cleanup", ("delete", "/services")),
        Ablation("services", "patch", "adoption", ("patch", "/services")),
        Ablation("events", "create", lc, ("create", "/events")),
        # the pod created again under its name repeats "Created pod: ...": the count is PATCHed
        Ablation("events", "patch", "restart", ("patch", "/events")),
        *(Ablation("configmaps", verb, "mpi", (verb, "/configmaps")) for verb in ("list", "watch", "create", "update")),
        # the progress endpoint: the CA ConfigMap read when it is there already, each report's
        # token reviewed, the certificate's Secret created by the first replica and read
        Ablation("configmaps", "get", "progress", ("get", "/configmaps")),
        Ablation("tokenreviews", "create", "progress", ("create", "authentication.k8s.io/tokenreviews")),
        *(Ablation("secrets", verb, "progress", (verb, "/secrets")) for verb in ("create", "get")),
        *(Ablation("serviceaccounts", verb, "mpi", (verb, "/serviceaccounts")) for verb in ("list", "watch", "create")),
        *(Ablation("roles", verb, "mpi", (verb, "rbac.authorization.k8s.io/roles"))
          for verb in ("list", "watch", "create", "update")),
        *(Ablation("rolebindings", verb, "mpi", (verb, "rbac.authorization.k8s.io/rolebindings"))
          for verb in ("list", "watch", "create")),
        *(Ablation("leases", verb, "leader-election", (verb, "coordination.k8s.io/leases"))
          for verb in ("get", "create", "update")),
        *(Ablation("podgroups", verb, "gang/scheduler-plugins", (verb, "scheduling.x-k8s.io/podgroups"))
          for verb in ("list", "watch", "create", "update", "delete")),
        Ablation("podgroups", "scheduling.volcano.sh", "gang/volcano", ("list", "scheduling.volcano.sh/podgroups")),
        Ablation("podgroups", "scheduling.x-k8s.io", "gang/scheduler-plugins", ("list", "scheduling.x-k8s.io/podgroups")),
        *(Ablation("priorityclasses", verb, "gang/scheduler-plugins", (verb, "scheduling.k8s.io/priorityclasses"))
          for verb in ("list", "watch")),
        *(Ablation("hpa", verb, "elastic", (verb, "autoscaling/horizontalpodautoscalers"))
          for verb in ("list", "watch", "create", "update", "delete")),
        *(Ablation("controllerrevisions", verb, lc, (verb, "apps/controllerrevisions"))
          for verb in ("list", "watch", "create")),
        *(Ablation("controllerrevisions", verb, "revisions", (verb, "apps/controllerrevisions"))
          for verb in ("patch", "delete")),
    ]
    return table


ABLATIONS = _ablations()


# ---------------------------------------------------------------------------- the paths
class Aborted(Exception):
    """The ablation's refusal was seen: the path stops waiting."""


class Run:
    """A path's view: the admin's client in the controller's namespace, and waits that stop
    when the test has seen what it waited for."""

    def __init__(self, cluster: Cluster, abort: threading.Event, progress_port: int = 0) -> None:
        self.cluster, self.abort, self.progress_port = cluster, abort, progress_port

    def until(self, predicate: Callable[[], Any], what: str, timeout: float = STEP) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            if self.abort.is_set():
                raise Aborted(what)
            try:
                value = predicate()
            except (KeyError, TypeError, IndexError):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}")
            time.sleep(0.05)

    def pod_uid(self, name: str) -> str | None:
        pod = self.cluster.pods().get(name)
        return pod["metadata"]["uid"] if pod else None

    def finish(self, kind: str, name: str, pods: set[str], *, or_deleted: bool = False) -> None:
        """Pods Running, then Succeeded, until the job's Succeeded condition (or, with
        `or_deleted`, the job gone: a TTL of 0 may delete it before a poll sees the condition)."""
        self.until(lambda: pods <= set(self.cluster.pods()), f"pods {sorted(pods)}")
        self.cluster.run_all(*sorted(pods))
        for pod in sorted(pods):
            self.cluster.set_phase(pod, "Succeeded")
        self.until(lambda: ("Succeeded", "True", f"{kind}Succeeded") in self.cluster.conditions(kind, name)
                   or (or_deleted and self.cluster.get_job(kind, name) is None), f"{kind} {name} Succeeded")


SHAPES = {"PyTorchJob": {"Master": 1}, "TFJob": {"Worker": 1}, "MPIJob": {"Launcher": 1, "Worker": 1},
          "XGBoostJob": {"Master": 1}, "PaddleJob": {"Worker": 1}, "JAXJob": {"Worker": 1}, "MXJob": {"Worker": 1}}


def lifecycle(kind: str) -> Callable[[Run], None]:
    def path(run: Run) -> None:
        name = f"lc-{kind.lower()[:-3]}"
        run.cluster.apply(job(kind, name, **SHAPES[kind]))
        pods = {f"{name}-launcher" if rt == "Launcher" else f"{name}-{rt.lower()}-{i}"
                for rt, n in SHAPES[kind].items() for i in range(n)}
        served = set() if kind == "MPIJob" else pods  # MPI's pods have no Services
        run.until(lambda: served <= set(run.cluster.objects(SERVICES)), f"services {sorted(served)}")
        run.until(lambda: any(e["reason"] == "SuccessfulCreatePod" and e["involvedObject"]["name"] == name
                              for e in run.cluster.objects(EVENTS).values()), f"{kind} {name}'s Events")
        run.finish(kind, name, pods)
    return path


def adoption(run: Run) -> None:
    """A pod and a Service with a job's labels but no owner are adopted (PATCH of the owner)."""
    labels = {"training.kubeflow.org/operator-name": "pytorchjob-controller", "training.kubeflow.org/job-name": "adopt",
              "training.kubeflow.org/replica-type": "master", "training.kubeflow.org/replica-index": "0"}
    client, ns = run.cluster.client, run.cluster.namespace
    client.create(PODS, ns, {"metadata": {"name": "adopt-master-0", "labels": labels},
                             "spec": {"containers": [{"name": "pytorch", "image": "example.com/pytorch:1"}]}})
    client.create(SERVICES, ns, {"metadata": {"name": "adopt-master-0", "labels": labels},
                                 "spec": {"clusterIP": "None", "selector": labels, "ports": []}})
    uid = run.cluster.apply(job("PyTorchJob", "adopt", Master=1))["metadata"]["uid"]
    owned = lambda o: [r["uid"] for r in o["metadata"].get("ownerReferences", [])] == [uid]  # noqa: E731
    run.until(lambda: owned(run.cluster.pods()["adopt-master-0"]), "the pod adopted")
    run.until(lambda: owned(run.cluster.objects(SERVICES)["adopt-master-0"]), "the Service adopted")


def restart(run: Run) -> None:
    """restartPolicy OnFailure: a failed pod is deleted and created again, and the Event of
    its create, written once before, counts 2 (PATCHed)."""
    def created_count() -> int:
        return sum(e.get("count") or 1 for e in run.cluster.objects(EVENTS).values()
                   if e["message"] == "Created pod: restart-master-0")

    run.cluster.apply(job("PyTorchJob", "restart", Master=1, restart="OnFailure"))
    old = run.until(lambda: run.pod_uid("restart-master-0"), "the pod")
    run.until(lambda: created_count() == 1, "the pod's create Event written")
    run.cluster.run_all("restart-master-0")
    run.cluster.set_phase("restart-master-0", "Failed", exit_code=1)
    run.until(lambda: run.pod_uid("restart-master-0") not in (None, old), "the pod created again")
    run.until(lambda: created_count() == 2, "the create Event counting 2")


def cleanup(run: Run) -> None:
    """cleanPodPolicy All: a finished job's pods and Services are deleted."""
    run.cluster.apply(job("PyTorchJob", "cleanup", Master=1, run_policy={"cleanPodPolicy": "All"}))
    run.finish("PyTorchJob", "cleanup", {"cleanup-master-0"})
    run.until(lambda: "cleanup-master-0" not in run.cluster.pods(), "the pod deleted")
    run.until(lambda: "cleanup-master-0" not in run.cluster.objects(SERVICES), "the Service deleted")


def ttl(run: Run) -> None:
    """ttlSecondsAfterFinished: the finished job is deleted."""
    run.cluster.apply(job("PyTorchJob", "ttl", Master=1, run_policy={"ttlSecondsAfterFinished": 0}))
    run.finish("PyTorchJob", "ttl", {"ttl-master-0"}, or_deleted=True)
    run.until(lambda: run.cluster.get_job("PyTorchJob", "ttl") is None, "the job deleted")


def suspend(run: Run) -> None:
    """Suspended: pods marked and deleted, Services deleted; resumed: created again and finished."""
    pt = job_resource(KINDS["PyTorchJob"])
    run.cluster.apply(job("PyTorchJob", "susp", Master=1, Worker=1))
    pods = {"susp-master-0", "susp-worker-0"}
    run.until(lambda: pods <= set(run.cluster.pods()), "pods")
    run.cluster.run_all(*sorted(pods))
    run.cluster.client.patch(pt, run.cluster.namespace, "susp", {"spec": {"runPolicy": {"suspend": True}}})
    run.until(lambda: ("Suspended", "True", "PyTorchJobSuspended") in run.cluster.conditions("PyTorchJob", "susp"),
              "Suspended")
    run.until(lambda: not pods & set(run.cluster.pods()) and not pods & set(run.cluster.objects(SERVICES)),
              "pods and Services deleted")
    run.cluster.client.patch(pt, run.cluster.namespace, "susp", {"spec": {"runPolicy": {"suspend": False}}})
    run.finish("PyTorchJob", "susp", pods)


def mpi(run: Run) -> None:
    """The launcher's ConfigMap, ServiceAccount, Role and RoleBinding: created, the hosts and
    the Role updated as workers run and scale down, then the job finishes."""
    ns = run.cluster.namespace
    run.cluster.apply(job("MPIJob", "mpi", Launcher=1, Worker=2))
    for res in (CONFIGMAPS, SERVICEACCOUNTS, ROLES, ROLEBINDINGS):
        name = "mpi-config" if res is CONFIGMAPS else "mpi-launcher"
        run.until(lambda res=res, name=name: name in run.cluster.objects(res), f"{res.kind} {name}")
    run.until(lambda: {"mpi-launcher", "mpi-worker-0", "mpi-worker-1"} <= set(run.cluster.pods()), "pods")
    run.cluster.run_all("mpi-worker-0", "mpi-worker-1")
    run.until(lambda: "mpi-worker-1" in run.cluster.objects(CONFIGMAPS)["mpi-config"]["data"]["discover_hosts.sh"],
              "the hosts updated")
    # fewer workers, from the next run on (run integrity): suspended, edited, resumed
    mpijobs = job_resource(KINDS["MPIJob"])
    run.cluster.client.patch(mpijobs, ns, "mpi", {"spec": {"runPolicy": {"suspend": True}}})
    run.until(lambda: not {"mpi-launcher", "mpi-worker-0", "mpi-worker-1"} & set(run.cluster.pods()), "suspended")
    run.cluster.client.patch(mpijobs, ns, "mpi", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}},
                                                           "runPolicy": {"suspend": False}}})
    run.until(lambda: run.cluster.objects(ROLES)["mpi-launcher"]["rules"][1]["resourceNames"] == ["mpi-worker-0"],
              "the Role updated")
    run.finish("MPIJob", "mpi", {"mpi-launcher"})


def elastic(run: Run) -> None:
    """An elastic PyTorchJob's HPA: created, scaled and rewritten, deleted on suspend."""
    pt, ns = job_resource(KINDS["PyTorchJob"]), run.cluster.namespace
    metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    run.cluster.apply(job("PyTorchJob", "el", Worker=1, spec={"elasticPolicy": {"maxReplicas": 3, "metrics": metrics}}))
    run.until(lambda: "el" in run.cluster.objects(HPAS), "the HPA")
    run.cluster.client.patch(pt, ns, "el", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}})
    run.until(lambda: "el-worker-1" in run.cluster.pods(), "scaled up")
    run.cluster.client.patch(pt, ns, "el", {"spec": {"elasticPolicy": {"maxReplicas": 4}}})
    run.until(lambda: run.cluster.objects(HPAS)["el"]["spec"]["maxReplicas"] == 4, "the HPA rewritten")
    run.cluster.client.patch(pt, ns, "el", {"spec": {"runPolicy": {"suspend": True}}})
    run.until(lambda: "el" not in run.cluster.objects(HPAS), "the HPA deleted")


def revisions(run: Run) -> None:
    """A running job's edit held (its run's ControllerRevision patched with the announcement),
    then run on resume: a new revision, the superseded one deleted."""
    pt, ns = job_resource(KINDS["PyTorchJob"]), run.cluster.namespace

    def revisions_of_rev() -> list[str]:  # the paths share the namespace: every job has its own
        return [n for n, r in run.cluster.objects(CONTROLLERREVISIONS).items()
                if r["metadata"]["labels"].get("training.kubeflow.org/job-name") == "rev"]

    run.cluster.apply(job("PyTorchJob", "rev", Master=1))
    first = run.until(revisions_of_rev, "the run's revision")
    run.until(lambda: "rev-master-0" in run.cluster.pods(), "the pod")
    run.cluster.run_all("rev-master-0")  # the run has started: its edit is held (foundation.runs.started)
    run.until(lambda: ("Running", "True", "PyTorchJobRunning") in run.cluster.conditions("PyTorchJob", "rev"), "Running")
    edit = {"spec": {"pytorchReplicaSpecs": {"Master": {"template": {"metadata": {"labels": {"edit": "1"}}}}}}}
    run.cluster.client.patch(pt, ns, "rev", edit)
    run.until(lambda: any(e["reason"] == "PyTorchJobSpecChangeHeld" and e["involvedObject"]["name"] == "rev"
                          for e in run.cluster.objects(EVENTS).values()), "the change held")
    run.cluster.client.patch(pt, ns, "rev", {"spec": {"runPolicy": {"suspend": True}}})
    run.until(lambda: "rev-master-0" not in run.cluster.pods(), "suspended")
    run.cluster.client.patch(pt, ns, "rev", {"spec": {"runPolicy": {"suspend": False}}})
    run.until(lambda: (lambda names: len(names) == 1 and names != first)(revisions_of_rev()),
              "the next run's revision, the superseded one deleted")


def gang(res: Resource) -> Callable[[Run], None]:
    def path(run: Run) -> None:
        """The job's PodGroup: created (Volcano: pods wait for its phase), rewritten on a scale-up,
        deleted on suspend."""
        pt, ns = job_resource(KINDS["PyTorchJob"]), run.cluster.namespace
        run.cluster.apply(job("PyTorchJob", "gang", Worker=1, spec={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 2}}))
        run.until(lambda: "gang" in run.cluster.objects(res), "the PodGroup")
        if res is VOLCANO:
            assert "gang-worker-0" not in run.cluster.pods()
            run.cluster.client.patch(VOLCANO, ns, "gang", {"status": {"phase": "Inqueue"}})
        run.until(lambda: "gang-worker-0" in run.cluster.pods(), "the pod")
        run.cluster.client.patch(pt, ns, "gang", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}})
        run.until(lambda: run.cluster.objects(res)["gang"]["spec"]["minMember"] == 2, "the PodGroup rewritten")
        run.cluster.client.patch(pt, ns, "gang", {"spec": {"runPolicy": {"suspend": True}}})
        run.until(lambda: "gang" not in run.cluster.objects(res), "the PodGroup deleted")
    return path


def leader_election(run: Run) -> None:
    """The Lease in the controller's namespace: created, held and renewed (released at stop)."""
    def lease() -> dict[str, Any]:
        return run.cluster.client.get(LEASES, SYSTEM, LEASE)["spec"]

    first = run.until(lambda: _quiet(lease), "the Lease")
    assert first["holderIdentity"].startswith("install-rbac-"), first
    run.until(lambda: _quiet(lease)["renewTime"] != first["renewTime"], "the Lease renewed")


def _quiet(get: Callable[[], Any]) -> Any:
    try:
        return get()
    except errors.NotFound:
        return None


def progress(run: Run) -> None:
    """A report from a job's pod (a token the API server mints for that pod) is taken (200):
    its token reviewed, the job's status patched; the CA ConfigMap, there already and stale,
    is read and rewritten."""
    client, ns = run.cluster.client, run.cluster.namespace
    client.create(CONFIGMAPS, ns, {"metadata": {"name": CA_CONFIGMAP}, "data": {"ca.crt": "stale"}})
    try:
        client.create(SERVICEACCOUNTS, ns, {"metadata": {"name": "default"}})
    except errors.AlreadyExists:
        pass
    body = job("PyTorchJob", "prog", Master=1)
    body["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["serviceAccountName"] = "default"
    run.cluster.apply(body)
    pod = run.until(lambda: run.cluster.pods().get("prog-master-0"), "the pod")
    secret = run.until(lambda: _quiet(lambda: client.get(SECRETS, SYSTEM, CERT_SECRET)), "the certificate Secret")
    ca = base64.b64decode(secret["data"]["ca.crt"])
    poster, token = Poster(run.progress_port, ca), mint(client, pod)

    def taken() -> bool:
        try:
            return poster.post(path(ns, "pytorchjobs", "prog"), token, report(30))[0] == 200
        except OSError:  # not serving yet
            return False

    run.until(taken, "the report taken")
    run.until(lambda: run.cluster.objects(CONFIGMAPS)[CA_CONFIGMAP]["data"]["ca.crt"] == ca.decode(), "the CA written")


PATHS: dict[str, Callable[[Run], None]] = {
    **{f"lifecycle/{kind}": lifecycle(kind) for kind in KINDS},
    "adoption": adoption, "restart": restart, "cleanup": cleanup, "ttl": ttl, "suspend": suspend, "mpi": mpi,
    "elastic": elastic, "revisions": revisions, "gang/volcano": gang(VOLCANO), "gang/scheduler-plugins": gang(SCHEDULER_PLUGINS),
    "leader-election": leader_election, "progress": progress,
}


def variant(path: str) -> str | None:
    """The gang component a path's controller runs with (one gang scheduler per process)."""
    return path.split("/", 1)[1] if path.startswith("gang/") else None


# ---------------------------------------------------------------------------- the controller process
class Audit:
    """The API server's audit log from now on, for the controller's identity."""

    def __init__(self, log: Path) -> None:
        self.log, self.offset, self.events = log, log.stat().st_size, []

    def read(self) -> list[dict[str, Any]]:
        with open(self.log, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        needle = f'"username":"{USER}"'.encode()
        self.events += [json.loads(line) for line in data[:end].splitlines() if needle in line]
        return self.events

    @staticmethod
    def pair(event: dict[str, Any]) -> tuple[str, str]:
        ref = event.get("objectRef") or {}
        sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
        return event["verb"], f"{ref.get('apiGroup', '')}/{ref.get('resource', '')}{sub}"

    def refused(self) -> set[tuple[str, str]]:
        return {self.pair(e) for e in self.read() if (e.get("responseStatus") or {}).get("code") == 403}


@dataclass
class Installed:
    plane: Any
    docs: list[dict[str, Any]]  # the install's RBAC objects, as rendered
    args: dict[str | None, list[str]]  # the Deployment's args, without and with each gang component
    kubeconfig: Path  # the ServiceAccount's token

    def apply(self, docs: list[dict[str, Any]]) -> None:
        self.plane.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=test-install-rbac",
                           "-f", "-", input=yaml.safe_dump_all(docs))

    def set_rules(self, admin: Client, docs: list[dict[str, Any]]) -> None:
        """The roles' rules as in `docs` (a merge patch replaces the whole list)."""
        for doc in (d for d in docs if d["kind"] in ROLE_KINDS):
            admin.patch(ROLE_KINDS[doc["kind"]], doc["metadata"].get("namespace"), doc["metadata"]["name"],
                        {"rules": doc["rules"]})

    def allowed(self, client: Client, verb: str, resource: str, namespace: str) -> bool:
        """What the server's authorizer answers now for the ServiceAccount (a SubjectAccessReview)."""
        group, _, rest = resource.partition("/")
        plural, _, sub = rest.partition("/")
        attrs = {"verb": verb, "group": group, "resource": plural, "subresource": sub, "namespace": namespace}
        review = client.create(SUBJECT_ACCESS_REVIEWS, None, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": USER, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{SYSTEM}",
                                              "system:authenticated"], "resourceAttributes": attrs}})
        return bool(review["status"].get("allowed"))


# A warm interpreter that forks `train-controller` runs: each child is a process of its own running
# the CLI's entry point with the given argv and environment, without paying ~2 s of imports.
ZYGOTE = r"""
import json, os, signal, sys
import controller.__main__, controller.manager, foundation.cluster.kubelib, controller.runtime.metrics, controller.runtime.health

signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped as they exit
for line in sys.stdin:
    order = json.loads(line)
    pid = os.fork()
    if pid == 0:
        fd = os.open(order["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.environ.clear()
        os.environ.update(order["env"])
        code = 0
        try:
            controller.__main__.main(args=order["argv"], prog_name="train-controller")
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            import traceback
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(pid, flush=True)
"""


class Zygote:
    def __init__(self) -> None:
        self.popen = subprocess.Popen([sys.executable, "-c", ZYGOTE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, cwd=REPO)

    def fork(self, argv: list[str], env: dict[str, str], log: Path) -> int:
        assert self.popen.stdin is not None and self.popen.stdout is not None
        self.popen.stdin.write(json.dumps({"argv": argv, "env": env, "log": str(log)}) + "\n")
        self.popen.stdin.flush()
        return int(self.popen.stdout.readline())

    def close(self) -> None:
        if self.popen.stdin is not None:
            self.popen.stdin.close()
        self.popen.wait(10)


class Controller:
    """train-controller with the Deployment's args (bind addresses on free loopback ports), the
    token's kubeconfig and the Deployment's POD_NAMESPACE, watching one namespace: `python -m
    controller`, or forked by a Zygote."""

    def __init__(self, installed: Installed, gang_variant: str | None, namespace: str, log: Path,
                 zygote: Zygote | None = None) -> None:
        args = [_loopback(a) for a in installed.args[gang_variant]]
        self.progress_port = next((int(a.rsplit(":", 1)[1]) for a in args if a.startswith("--progress-bind-address=")), 0)
        if not PODS_FIRST:
            args.append("--no-pods-first")  # as the upstream-order component adds it
        self.log = log
        self.name = f"install-rbac-{uuid.uuid4().hex[:6]}"
        args += ["--kubeconfig", str(installed.kubeconfig), "--namespace", namespace]
        env = {**os.environ, "POD_NAME": self.name, "POD_NAMESPACE": SYSTEM}
        env.pop("KUBECONFIG", None)
        self.popen: subprocess.Popen[bytes] | None = None
        self.pid = 0
        if zygote is not None:
            self.pid = zygote.fork(args, env, log)
            return
        with open(log, "wb") as out:
            self.popen = subprocess.Popen([sys.executable, "-m", "controller", *args], stdout=out,
                                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=REPO)

    def stop(self) -> None:
        if self.popen is not None:
            if self.popen.poll() is None:
                self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
            return
        try:
            os.kill(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                os.kill(self.pid, 0)  # ProcessLookupError once it is gone (the zygote reaps it)
                time.sleep(0.05)
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def _loopback(arg: str) -> str:
    """--metrics-bind-address=:8080 -> 127.0.0.1:<free port>: several runs, no fixed ports."""
    flag, sep, value = arg.partition("=")
    if sep and flag.endswith("-bind-address") and value.startswith(":"):
        return f"{flag}=127.0.0.1:{free_port()}"
    return arg


@pytest.fixture(scope="module")
def installed(control_plane, tmp_path_factory) -> Iterator[Installed]:
    """The install's ServiceAccount and RBAC on the shared API server, and a kubeconfig holding
    a token the server issued for that ServiceAccount (TokenRequest API)."""
    tmp = tmp_path_factory.mktemp("install-rbac")
    docs = render(tmp)
    args = {None: deployment_args(docs), **{name: deployment_args(render(tmp / name, folder))
                                            for name, folder in GANG.items()}}
    control_plane.kubectl("create", "namespace", SYSTEM, check=False)
    installed = Installed(control_plane, rbac(docs), args, tmp / "token.kubeconfig")
    installed.apply(installed.docs)
    code, answer = control_plane.request(
        "POST", f"/api/v1/namespaces/{SYSTEM}/serviceaccounts/{ACCOUNT}/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    assert code == 201, answer
    admin = json.loads(Path(control_plane.kubeconfig).read_text())
    admin["users"] = [{"name": ACCOUNT, "user": {"token": answer["status"]["token"]}}]
    admin["contexts"][0]["context"]["user"] = ACCOUNT
    installed.kubeconfig.write_text(json.dumps(admin))
    installed.kubeconfig.chmod(0o600)
    try:
        yield installed
    finally:
        installed.apply(installed.docs)  # as rendered, whatever an ablation left


def _namespace(admin: Client, stem: str) -> str:
    name = f"t-install-rbac-{stem}-{uuid.uuid4().hex[:6]}"
    admin.create(NAMESPACES, None, {"metadata": {"name": name}})
    return name


def _drop_lease(client: Client) -> None:
    """Every run starts from no Lease (get (404), create, renew) and no progress certificate
    Secret (get (404), create), as a fresh install."""
    for res, name in ((LEASES, LEASE), (SECRETS, CERT_SECRET)):
        try:
            client.delete(res, SYSTEM, name)
        except errors.NotFound:
            pass


@dataclass
class Outcome:
    completed: dict[str, float]  # path -> seconds
    failed: dict[str, str]  # path -> why
    audit: Audit
    log: str
    seconds: tuple[float, float]  # until the paths finished or the refusal was seen; stopping the process


def drive(installed: Installed, admin: Client, gang_variant: str | None, paths: list[str], tmp: Path, *,
          stop_when: Callable[[Audit], bool] | None = None, timeout: float = 120, zygote: Zygote | None = None) -> Outcome:
    """One controller process in a fresh namespace, the paths run side by side, until they
    finish or `stop_when(audit)` holds (then the paths are told to stop waiting)."""
    namespace = _namespace(admin, (gang_variant or "base")[:10])
    _drop_lease(admin)
    audit = Audit(installed.plane.audit_log)
    controller = Controller(installed, gang_variant, namespace, tmp / f"{namespace}.log", zygote)
    abort, completed, failed = threading.Event(), {}, {}

    def one(name: str) -> None:
        began = time.monotonic()
        try:
            PATHS[name](Run(Cluster(admin, namespace), abort, controller.progress_port))
            completed[name] = time.monotonic() - began
        except Aborted as exc:
            failed[name] = f"stopped waiting for {exc}"
        except Exception as exc:  # noqa: BLE001 - reported by the caller with the controller's log
            failed[name] = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=one, args=(name,), daemon=True) for name in paths]
    began, stopping = time.monotonic(), 0.0
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            if stop_when is not None and stop_when(audit):
                break
            time.sleep(0.1)
        abort.set()
        for thread in threads:
            thread.join(10)
    finally:
        abort.set()
        stopping = time.monotonic()
        controller.stop()
        admin.delete(NAMESPACES, None, namespace)
    audit.read()
    return Outcome(completed, failed, audit, controller.text(), (stopping - began, time.monotonic() - stopping))


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    forks = Zygote()
    try:
        yield forks
    finally:
        forks.close()


@pytest.fixture
def admin(control_plane) -> Iterator[Client]:
    client = Client.connect(str(control_plane.kubeconfig))
    try:
        yield client
    finally:
        client.close()


# ---------------------------------------------------------------------------- the tests
def test_the_install_runs_every_path_without_a_refusal(installed, admin, tmp_path) -> None:
    """Exactly the install's ServiceAccount and RBAC: every path completes, the server refuses
    nothing, and every grant but the two held for MPI launchers is requested."""
    assert _whoami(installed.kubeconfig) == USER
    began = time.monotonic()
    base = [p for p in PATHS if variant(p) is None]
    outcomes = [drive(installed, admin, None, base, tmp_path)]
    outcomes += [drive(installed, admin, name, [f"gang/{name}"], tmp_path) for name in GANG]
    for outcome in outcomes:
        assert not outcome.failed, (outcome.failed, outcome.log[-3000:])
        assert not outcome.audit.refused(), outcome.audit.refused()
        assert "forbidden" not in outcome.log.lower(), outcome.log[-3000:]
    assert set().union(*(o.completed for o in outcomes)) == set(PATHS)
    used = {Audit.pair(e) for o in outcomes for e in o.audit.events}
    docs = installed.docs
    assert used <= grants(docs), used - grants(docs)
    # ttl deletes a PyTorchJob: every kind's delete is the same code (ablations: each kind's list and status)
    assert one_job_resource(grants(docs)) - one_job_resource(used) == ESCALATION_ONLY
    print(f"\nall paths, exactly the install's RBAC: {time.monotonic() - began:.1f} s "
          + ", ".join(f"{p} {s:.1f}s" for o in outcomes for p, s in o.completed.items()))


def test_every_verb_resource_and_group_of_the_install_has_an_ablation(tmp_path) -> None:
    """The table names exactly the install's rules and, per rule, each verb, and each resource
    and API group when the rule has more than one; every path it names exists."""
    wanted = set()
    for rule in role_rules(render(tmp_path)):
        name = next(n for n, res in RULES.items() if res in rule["resources"])
        wanted |= {(name, verb) for verb in rule["verbs"]}
        for field in ("resources", "apiGroups"):
            if len(rule[field]) > 1:
                wanted |= {(name, item) for item in rule[field]}
    assert {(a.rule, a.cut) for a in ABLATIONS} == wanted
    assert len(ABLATIONS) == len(wanted)
    assert {a.path for a in ABLATIONS} <= set(PATHS)


def test_the_controller_holds_no_lease_outside_its_namespace(installed, admin) -> None:
    """The issue: the ClusterRole once granted `update leases` everywhere, kube-system's
    leader-election Leases included. Now only the Role in trainforge-system does."""
    client = Client.connect(str(installed.kubeconfig))
    try:
        for verb in ("get", "create", "update"):
            assert installed.allowed(admin, verb, "coordination.k8s.io/leases", SYSTEM)
            for namespace in ("kube-system", "default"):
                assert not installed.allowed(admin, verb, "coordination.k8s.io/leases", namespace), (verb, namespace)
        with pytest.raises(errors.Forbidden):
            client.get(LEASES, "kube-system", "kube-controller-manager")
        with pytest.raises(errors.Forbidden):
            client.create(LEASES, "kube-system", {"metadata": {"name": "trainforge-probe"},
                                                   "spec": {"holderIdentity": "x"}})
    finally:
        client.close()


@pytest.mark.skipif(not PODS_FIRST, reason="the requests are the same in upstream's order: one pass is enough")
@pytest.mark.parametrize("ablation", ABLATIONS, ids=[a.id for a in ABLATIONS])
def test_without_any_grant_a_named_path_breaks(installed, admin, zygote, tmp_path, ablation: Ablation) -> None:
    """The install but for one verb, resource or group of one rule: the named path's request is
    refused by the API server (audit log) and the controller logs the refusal."""
    docs = ablation.apply(installed.docs)
    removed = grants(installed.docs) - grants(docs)
    verb, resource = sorted(removed)[0]  # to wait for the authorizer's cache, which follows RBAC writes in moments
    namespace = SYSTEM if resource.endswith("/leases") else "default"

    def until_allowed(allowed: bool) -> None:
        deadline = time.monotonic() + 10
        while installed.allowed(admin, verb, resource, namespace) != allowed and time.monotonic() < deadline:
            time.sleep(0.05)

    installed.set_rules(admin, docs)
    try:
        until_allowed(False)
        outcome = drive(installed, admin, variant(ablation.path), [ablation.path], tmp_path,
                        stop_when=lambda audit: ablation.refused in audit.refused(), timeout=60, zygote=zygote)
    finally:
        installed.set_rules(admin, installed.docs)
        until_allowed(True)  # the next test starts from the whole install
    assert ablation.refused in outcome.audit.refused(), (
        f"{ablation.id}: expected the server to refuse {ablation.refused}; refused {outcome.audit.refused()}; "
        f"path {outcome.completed or outcome.failed}\n{outcome.log[-3000:]}")
    plural = ablation.refused[1].split("/")[1]
    assert any("forbidden" in line.lower() and plural in line for line in outcome.log.splitlines()), (
        f"the controller did not log the 403 for {plural}:\n{outcome.log[-3000:]}")
    print(f"\n{ablation.id}: {ablation.path} refused {ablation.refused} after {outcome.seconds[0]:.1f} s")



def _whoami(kubeconfig: Path) -> str:
    client = Client.connect(str(kubeconfig))
    try:
        review = client.create(Resource("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview",
                                        namespaced=False), None,
                               {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
        return review["status"]["userInfo"]["username"]
    finally:
        client.close()
