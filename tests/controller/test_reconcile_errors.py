"""Bugs are visible, not looped (issue 25, item 3), on a real API server.

Malformed jobs: the shipped CRDs let each pod template preserve unknown fields, and a CRD
from an older release or another tool may not type the spec at all, so the API server hands
the controller jobs it cannot read. They are served here by our CRDs with the spec loosened
that way (every shape reaches the controller; which of them the shipped CRDs also accept is
asserted against their schema), a few hundred of them of every kind beside good jobs and
jobs that hit an injected bug. Every malformed job gets `Failed` with `{Kind}FailedValidation`
and the same Warning event, once, and no retry (controller.jobs.malformed); every bug is logged
with its traceback once, counted in `controller_runtime_reconcile_panics_total`, recorded as one
`ReconcileError` event per job and retried with backoff (controller.runtime.bugs); the workers
survive and the good jobs run as fast as without all that.
"""

from __future__ import annotations

import copy
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from controller_kit import PODS_FIRST, Cluster, job, running_manager, wait_for

from controller.generators import crds
from controller.jobs import malformed
from controller.jobs.kinds import KINDS, select
from controller.manager import Manager
from controller.runtime import bugs
from foundation.cluster.kube import EVENTS, Client
from controller.runtime.writes import job_key
from schemas.upstream import JOB_NAME_LABEL
from testworld.controlplane import ControlPlane

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

GOOD_REPLICAS: dict[str, dict[str, int]] = {
    "PyTorchJob": {"Master": 1, "Worker": 1}, "TFJob": {"Chief": 1, "Worker": 1},
    "MPIJob": {"Launcher": 1, "Worker": 1}, "XGBoostJob": {"Master": 1, "Worker": 1},
    "PaddleJob": {"Master": 1, "Worker": 1}, "JAXJob": {"Worker": 2},
    "MXJob": {"Scheduler": 1, "Server": 1, "Worker": 1},
}


def short(kind: str) -> str:
    return kind.lower().removesuffix("job")


# ------------------------------------------------------------------ malformation shapes
# name -> (mutate the replica spec `r` of type `rt` in `specs`, the problem relative to its path)
Mutate = Callable[[dict[str, Any], str], None]


def _container0(specs: dict[str, Any], rt: str) -> dict[str, Any]:
    return specs[rt]["template"]["spec"]["containers"][0]


def _set(path: tuple[str, ...], value: Any) -> Mutate:
    def mutate(specs: dict[str, Any], rt: str) -> None:
        node = specs[rt]
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
    return mutate


def _on_container(field: str, value: Any) -> Mutate:
    return lambda specs, rt: _container0(specs, rt).__setitem__(field, value)


def _append_container(value: Any) -> Mutate:
    return lambda specs, rt: specs[rt]["template"]["spec"]["containers"].append(value)


C0 = ".template.spec.containers[0]"
SHAPES: dict[str, tuple[Mutate, str]] = {
    "replica-null": (lambda specs, rt: specs.__setitem__(rt, None), ': Invalid value: "null": must be of type object'),
    "replica-string": (lambda specs, rt: specs.__setitem__(rt, rt), ': Invalid value: "string": must be of type object'),
    "replicas-string": (_set(("replicas",), "2"), '.replicas: Invalid value: "string": must be of type integer'),
    "replicas-fraction": (_set(("replicas",), 1.5), '.replicas: Invalid value: "number": must be of type integer'),
    "replicas-overflow": (_set(("replicas",), 2**40),
                          ".replicas: Invalid value: 1099511627776: must be less than or equal to 2147483647"),
    "restart-list": (_set(("restartPolicy",), ["Never"]), '.restartPolicy: Invalid value: "array": must be of type string'),
    "template-string": (_set(("template",), "pod"), '.template: Invalid value: "string": must be of type object'),
    "podspec-list": (_set(("template", "spec"), ["containers"]),
                     '.template.spec: Invalid value: "array": must be of type object'),
    "containers-map": (_set(("template", "spec", "containers"), {"main": {"image": "x"}}),
                       '.template.spec.containers: Invalid value: "object": must be of type array'),
    "container-string": (_append_container("sidecar"),
                         '.template.spec.containers[1]: Invalid value: "string": must be of type object'),
    "container-null": (_append_container(None),
                       '.template.spec.containers[1]: Invalid value: "null": must be of type object'),
    "env-map": (_on_container("env", {"A": "1"}), f'{C0}.env: Invalid value: "object": must be of type array'),
    "env-item-string": (_on_container("env", ["A=1"]), f'{C0}.env[0]: Invalid value: "string": must be of type object'),
    "port-named": (_on_container("ports", [{"name": "http", "containerPort": "http"}]),
                   f'{C0}.ports[0].containerPort: Invalid value: "string": must be of type integer'),
    "labels-list": (_set(("template", "metadata"), {"labels": ["team=a"]}),
                    '.template.metadata.labels: Invalid value: "array": must be of type object'),
    "limits-list": (_on_container("resources", {"limits": ["cpu"]}),
                    f'{C0}.resources.limits: Invalid value: "array": must be of type object'),
    "quantity-word": (_on_container("resources", {"limits": {"cpu": "lots"}}),
                      f'{C0}.resources.limits[cpu]: Invalid value: "lots": must be a quantity such as 500m, 2 or 4Gi'),
}
MAP_SHAPE = "specs-list"  # the whole replica map a list: one job per kind, no replica type
# what the shipped CRDs' schema also accepts (the rest only a looser CRD lets through; a
# null replica spec the API server prunes from a typed map, so the job arrives without it)
SHIPPED_CRD_ACCEPTS = {"replicas-overflow", "podspec-list", "containers-map", "container-string", "container-null",
                       "env-map", "env-item-string", "port-named", "labels-list", "limits-list", "quantity-word"}


def malformed_jobs() -> list[tuple[str, str, dict[str, Any], str]]:
    """(shape, kind, job, expected problem): each shape on the first and on the last replica type."""
    out = []
    for kind, replicas in GOOD_REPLICAS.items():
        field = KINDS[kind].facts.replica_specs
        types = list(replicas)
        for shape, (mutate, problem) in SHAPES.items():
            for n, rt in enumerate((types[0], types[-1])):
                body = job(kind, f"bad-{short(kind)}-{shape}-{n}", **replicas)
                mutate(body["spec"][field], rt)
                out.append((shape, kind, body, f"spec.{field}[{rt}]{problem}"))
        body = job(kind, f"bad-{short(kind)}-{MAP_SHAPE}", **replicas)
        body["spec"][field] = list(body["spec"][field].values())
        out.append((MAP_SHAPE, kind, body, f'spec.{field}: Invalid value: "array": must be of type object'))
    return out


MALFORMED = malformed_jobs()


def _shipped_schema(kind: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load((crds.OUT / f"kubeflow.org_{KINDS[kind].facts.plural}.yaml").read_text())
    return jsonschema.Draft7Validator(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def test_which_shapes_the_shipped_crds_let_through() -> None:
    """The pod template preserves unknown fields, and int32 is a format the server does not bound."""
    validators = {kind: _shipped_schema(kind) for kind in GOOD_REPLICAS}
    accepted = {shape for shape, kind, body, _ in MALFORMED if validators[kind].is_valid(body)}
    assert accepted == SHIPPED_CRD_ACCEPTS


@pytest.mark.parametrize("kind", list(GOOD_REPLICAS))
def test_a_null_field_reads_as_absent_as_the_api_server_reads_it(kind) -> None:
    """`metadata:` left empty in YAML is null: not a shape problem (a null list item is)."""
    body = job(kind, "nulls", **GOOD_REPLICAS[kind])
    for replica in body["spec"][KINDS[kind].facts.replica_specs].values():
        replica["restartPolicy"] = None
        replica["template"]["metadata"] = None
        replica["template"]["spec"].update(volumes=None, initContainers=None)
        replica["template"]["spec"]["containers"][0].update(env=None, ports=None, resources={"limits": None})
    assert malformed.problems(body, KINDS[kind]) == []


# ------------------------------------------------------------------ injected bugs
def _invariant(key: str) -> None:
    raise RuntimeError(f"replica bookkeeping lost track of {key}")


def _divide(key: str) -> float:
    return len(key) / 0


def _recurse(key: str) -> Any:
    return _recurse(key)


BUGS: dict[str, tuple[Callable[[str], Any], type[Exception]]] = {
    "invariant": (_invariant, RuntimeError), "divide": (_divide, ZeroDivisionError), "recurse": (_recurse, RecursionError),
}


class Probe:
    """Wraps the real reconcile: counts passes per key; the `bug-*-<bug>` jobs raise that bug first."""

    def __init__(self, real: Callable[[str], float | None]) -> None:
        self.real = real
        self.lock = threading.Lock()
        self.passes: Counter[str] = Counter()
        self.raised: Counter[str] = Counter()  # per kind

    def __call__(self, key: str) -> float | None:
        name = key.rsplit("/", 1)[-1]
        with self.lock:
            self.passes[key] += 1
        if name.startswith("bug-"):
            with self.lock:
                self.raised[key.split("/", 1)[0]] += 1
            BUGS[name.rsplit("-", 1)[-1]][0](key)
        return self.real(key)


# ------------------------------------------------------------------ the world
@pytest.fixture(scope="module")
def loose_plane(envtest_assets, tmp_path_factory) -> Iterator[ControlPlane]:
    """A second API server with our CRDs whose whole spec preserves unknown fields (and no scale
    subresource: its path through `Worker` is refused where `Worker` is not an object)."""
    folder: Path = tmp_path_factory.mktemp("loose-crds")
    for path in sorted(crds.OUT.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            schema = version["schema"]["openAPIV3Schema"]["properties"]
            schema["spec"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                              "required": schema["spec"].get("required", [])}
            version.get("subresources", {}).pop("scale", None)
        (folder / path.name).write_text(yaml.safe_dump(crd))
    plane = ControlPlane(assets=envtest_assets)
    plane.start()
    try:
        plane.install_crds([folder])
        yield plane
    finally:
        plane.stop()


def good_jobs(tag: str) -> list[dict[str, Any]]:
    return [job(kind, f"good-{short(kind)}-{tag}", **replicas) for kind, replicas in GOOD_REPLICAS.items()]


def running(cluster: Cluster, jobs: list[dict[str, Any]]) -> bool:
    """Every job has all its pods and a `Created` condition."""
    pods = Counter(p["metadata"]["labels"].get(JOB_NAME_LABEL) for p in cluster.pods().values())
    for body in jobs:
        name = body["metadata"]["name"]
        if pods[name] != sum(GOOD_REPLICAS[body["kind"]].values()):
            return False
        if ("Created", "True") not in {(c, s) for c, s, _ in cluster.conditions(body["kind"], name)}:
            return False
    return True


def time_to_run(cluster: Cluster, jobs: list[dict[str, Any]]) -> float:
    began = time.monotonic()
    for body in jobs:
        cluster.apply(body)
    wait_for(lambda: running(cluster, jobs), timeout=60, what=f"{len(jobs)} good jobs running")
    return time.monotonic() - began


def events(cluster: Cluster) -> dict[str, list[tuple[str, str, str]]]:
    by_job: dict[str, list[tuple[str, str, str]]] = {}
    for e in cluster.client.list(EVENTS, namespace=cluster.namespace)["items"]:
        by_job.setdefault(e["involvedObject"]["name"], []).append((e["type"], e["reason"], e["message"]))
    return by_job


def sample(mgr: Manager, name: str, **labels: str) -> float:
    return mgr.metrics.registry.get_sample_value(name, labels) or 0.0


# ------------------------------------------------------------------ the flood
def test_malformed_jobs_and_bugs_are_marked_once_and_good_jobs_keep_running(loose_plane, caplog) -> None:
    caplog.set_level(logging.INFO, logger="controller.manager")
    loose_plane.kubectl("create", "namespace", "flood")
    client = Client.connect(str(loose_plane.kubeconfig), pool_size=8)
    cluster = Cluster(client, "flood")
    bug_jobs = [job(kind, f"bug-{short(kind)}-{bug}", **replicas) for kind, replicas in GOOD_REPLICAS.items() for bug in BUGS]
    try:
        with running_manager(str(loose_plane.kubeconfig), "flood", pool_size=48, pods_first=PODS_FIRST) as mgr:
            probe = Probe(mgr.reconciler.reconcile)
            mgr.reconciler.reconcile = probe  # type: ignore[method-assign]
            baseline = time_to_run(cluster, good_jobs("before"))

            began = time.monotonic()
            beside = good_jobs("beside")
            for i, (_, _, body, _) in enumerate(MALFORMED):
                cluster.apply(copy.deepcopy(body))
                if i % 40 == 0:
                    cluster.apply(bug_jobs[(i // 40) % len(bug_jobs)])
                if i % 36 == 0:
                    cluster.apply(beside[(i // 36) % len(beside)])
            for body in bug_jobs + beside:
                if cluster.get_job(body["kind"], body["metadata"]["name"]) is None:
                    cluster.apply(body)

            def marked() -> list[str]:
                return [body["metadata"]["name"] for _, kind, body, _ in MALFORMED
                        if ("Failed", "True", f"{kind}FailedValidation")
                        not in cluster.conditions(kind, body["metadata"]["name"])]
            wait_for(lambda: not marked(), timeout=120, interval=0.5, what="every malformed job Failed")
            wait_for(lambda: running(cluster, beside), timeout=60, what="the good jobs applied beside them running")
            during = time_to_run(cluster, good_jobs("after"))

            assert mgr.workers_alive() == mgr.workers == 2 and mgr.ready()
            bug_keys = [job_key(b["kind"], "flood", b["metadata"]["name"]) for b in bug_jobs]
            wait_for(lambda: all(mgr.queue.num_requeues(k) >= 3 for k in bug_keys), what="every bug retried 3 times")
            elapsed = time.monotonic() - began
            by_job = wait_for(lambda: (lambda e: e if all(
                any(r == bugs.REASON for _, r, _ in e.get(b["metadata"]["name"], [])) for b in bug_jobs) else None)(
                events(cluster)), what="a ReconcileError event on every bug job")
        # stopped: every pass is counted
        panics = {kind: sample(mgr, "controller_runtime_reconcile_panics_total", controller=kind.lower())
                  for kind in GOOD_REPLICAS}
        errors = {kind: sample(mgr, "controller_runtime_reconcile_errors_total", controller=kind.lower())
                  for kind in GOOD_REPLICAS}
        pods = cluster.pods()
    finally:
        client.close()

    # the good jobs run as fast with the flood as without (generous: the machine is shared)
    assert during <= 2 * baseline + 2.0, (during, baseline)

    # every malformed job: Failed + the same Warning event, no pod, no retry loop
    for shape, kind, body, problem in MALFORMED:
        name = body["metadata"]["name"]
        message = f"{kind} failed validation because {problem}"
        assert by_job.get(name) == [("Warning", f"{kind}FailedValidation", message)], (shape, name)
        assert not any(p["metadata"]["labels"].get(JOB_NAME_LABEL) == name for p in pods.values()), name
        assert probe.passes[job_key(kind, "flood", name)] <= 3, (name, "a malformed job is not retried")

    # every bug: counted as a panic (and an error) on each pass, retried with backoff, one event per job
    assert panics == {kind: float(probe.raised[kind]) for kind in GOOD_REPLICAS}
    assert all(errors[kind] >= panics[kind] >= 3 * len(BUGS) for kind in GOOD_REPLICAS)
    ceiling = math.log2(elapsed / 0.005) + 3  # passes 5 ms doubling backoff allows in `elapsed`
    for body, key in zip(bug_jobs, bug_keys):
        assert 3 <= probe.passes[key] <= ceiling, (key, probe.passes[key], ceiling)
        bug = body["metadata"]["name"].rsplit("-", 1)[-1]
        reported = [e for e in by_job[body["metadata"]["name"]] if e[1] == bugs.REASON]
        assert len(reported) == 1 and reported[0][0] == "Warning" and BUGS[bug][1].__name__ in reported[0][2], reported

    # the log: one traceback per distinct error, one line for each other job it struck, nothing per retry
    manager_log = [r for r in caplog.records if r.name == "controller.manager" and r.levelno >= logging.WARNING]
    tracebacks = [r for r in manager_log if r.exc_info]
    assert sorted(r.exc_info[0].__name__ for r in tracebacks) == sorted(t.__name__ for _, t in BUGS.values())
    lines = [r for r in manager_log if not r.exc_info]
    assert len(lines) == len(bug_jobs) - len(BUGS), [r.getMessage() for r in lines]
    assert all("bug-" in r.getMessage() for r in manager_log), "malformed jobs are not errors of the controller"


# ------------------------------------------------------------------ one worker, one bug
@pytest.mark.parametrize("error", [RuntimeError("lost track"), ZeroDivisionError("division by zero"),
                                   LookupError("no such replica")], ids=lambda e: type(e).__name__)
def test_any_exception_from_a_reconciler_is_backed_off_and_the_worker_survives(loose_plane, caplog, error) -> None:
    """The real Manager with one worker; its reconciler raises `error` for one job."""
    caplog.set_level(logging.DEBUG, logger="controller.manager")
    namespace = f"one-{type(error).__name__.lower()}"
    loose_plane.kubectl("create", "namespace", namespace)
    client = Client.connect(str(loose_plane.kubeconfig), pool_size=16)
    cluster = Cluster(client, namespace)
    mgr = Manager(client, select("pytorch"), namespace=namespace, workers=1, watch_timeout=60, pods_first=PODS_FIRST)
    mgr.queue.base_delay = 0.02
    broken = job_key("PyTorchJob", namespace, "broken")
    calls: list[float] = []
    real = mgr.reconciler.reconcile

    def reconcile(key: str) -> float | None:
        if key == broken:
            calls.append(time.monotonic())
            raise type(error)(*error.args)  # a new one each time, as a bug raises it
        return real(key)

    mgr.reconciler.reconcile = reconcile  # type: ignore[method-assign]
    mgr.start()
    try:
        cluster.apply(job("PyTorchJob", "broken", Master=1))
        wait_for(lambda: len(calls) >= 7, timeout=30, what="seven failed passes")
        cluster.apply(job("PyTorchJob", "after", Master=1))  # the only worker is still there to run it
        cluster.wait_pods({"after-master-0"})
        assert mgr.workers_alive() == 1 and mgr.ready()
        assert mgr.queue.num_requeues(broken) >= 7
        wait_for(lambda: any(e["reason"] == bugs.REASON for e in client.list(EVENTS, namespace=namespace)["items"]),
                 what="the ReconcileError event")
        reported = [e for e in client.list(EVENTS, namespace=namespace)["items"] if e["reason"] == bugs.REASON]
    finally:
        mgr.stop()
        client.close()
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    for step, gap in enumerate(gaps[:6]):
        assert gap >= 0.9 * 0.02 * 2**step, (step, gaps)  # 20 ms doubling: never hot
    assert sample(mgr, "controller_runtime_reconcile_panics_total", controller="pytorchjob") == len(calls)
    assert sample(mgr, "controller_runtime_reconcile_errors_total", controller="pytorchjob") == len(calls)
    records = [r for r in caplog.records if r.name == "controller.manager" and broken in r.getMessage()]
    assert [r.levelno for r in records if r.exc_info] == [logging.ERROR]  # the traceback, once
    assert all(r.levelno == logging.DEBUG for r in records if not r.exc_info)  # the retries
    assert [(e["involvedObject"]["name"], e["type"]) for e in reported] == [("broken", "Warning")]
    assert f"{type(error).__name__}: {error}" in reported[0]["message"]
