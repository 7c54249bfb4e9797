"""Restricted end to end with train-controller (issue 25 item 1).

The pods train-controller creates for TrainJobs compiled at `policy.podSecurity:
restricted` under `controller: train-controller` are admitted by the real PodSecurity
admission of a namespace that enforces restricted, and run to success on kwok: every
framework, multi-node, so PyTorch Workers carry `init-pytorch` and the MPI launcher
`kubectl-delivery`. The controller is the real process (`python -m controller`, default
flags); kwok does not run images, but admission checks every field of the pod.

Then the other side: with `--upstream-init-containers` (the pods upstream's operator
makes) the same jobs' Worker and launcher pods are refused there, as the compiler says
under `controller: training-operator`. The compiler's verdicts for both settings against
the server, case by case, are in tests/compiler/review/test_pod_security_admission.py.

The pure part pins what the parity test relies on (it runs ours with
--upstream-init-containers): the default pods differ from upstream's only by
`INIT_SECURITY_CONTEXT["train-controller"]` on the init containers we add; and upstream's
init container template file works as upstream's does.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from controller_kit import Cluster, job, wait_for

from compiler.emit.namespaces import namespace_object
from compiler.emit.render import rendered_objects
from foundation.frameworks.base import INIT_SECURITY_CONTEXT
from compiler.pipeline import compile_sources
from controller.jobs import desired, mpi
from controller.jobs.kinds import KINDS
from foundation.cluster.kube import EVENTS
from foundation.frameworks.defaulting import defaulted

REPO = Path(__file__).resolve().parents[2]
RESTRICTED = INIT_SECURITY_CONTEXT["train-controller"]
# every framework, with the roles that make it multi-node; runAsNonRoot is the one setting
# the compiler never writes (podSecurityDefaults writes the rest)
SPECS: dict[str, dict[str, Any]] = {
    "pytorch": {"nodes": 3},
    "tensorflow": {"nodes": 2, "roles": {"ps": {"replicas": 1}}},
    "mpi": {"nodes": 2},
    "xgboost": {"nodes": 2},
    "paddle": {"nodes": 2},
    "jax": {"nodes": 2},
    "mxnet": {"nodes": 2, "roles": {"server": {"replicas": 1}}},
}
READY = {"spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 1000}}}
INIT_PODS = {"pytorch": ("worker", "init-pytorch"), "mpi": ("launcher", "kubectl-delivery")}


# --- the compiled jobs --------------------------------------------------------------------

def compiled(tmp_path: Path, namespace: str, controller: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the kubeflow.org/v1 jobs, the Namespace objects) compiled at restricted under `controller`."""
    import json

    docs = [{"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob",
             "metadata": {"name": f"r-{framework}", "namespace": namespace},
             "spec": {"framework": framework, "image": f"example.com/{framework}:1", "command": ["train"],
                      "podTemplate": READY, **spec}}
            for framework, spec in SPECS.items()]
    project = {"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project", "defaults": {"controller": controller},
               "policy": {"podSecurity": "restricted", "podSecurityDefaults": True}}
    (tmp_path / "jobs.yaml").write_text("".join(f"---\n{json.dumps(d)}\n" for d in docs), encoding="utf-8")
    (tmp_path / "trainforge.yaml").write_text(json.dumps(project), encoding="utf-8")
    result = compile_sources([tmp_path])
    errors = [d.text() for d in result.diagnostics if d.severity == "error"]
    if controller == "train-controller":
        assert result.ok, errors
    else:  # the compiler refuses exactly the two frameworks whose pods get an init container
        assert sorted(e.split("refuses the ")[1].split(" pods")[0] for e in errors) == ["Launcher", "Worker"], errors
        # compile them anyway at baseline, to show the server refuses what the compiler did
        project["policy"]["podSecurity"] = "baseline"
        (tmp_path / "trainforge.yaml").write_text(json.dumps(project), encoding="utf-8")
        result = compile_sources([tmp_path])
        assert result.ok, [d.text() for d in result.diagnostics]
    objects = rendered_objects(result, "default")
    return ([o for o in objects if o["apiVersion"] == "kubeflow.org/v1"],
            [o for o in objects if o["kind"] == "Namespace"])


def enforce_restricted(world: Any, namespace: str) -> None:
    """Label the test namespace as a compiled restricted Namespace is (enforce, warn, audit)."""
    labels = namespace_object(namespace, "restricted")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    world.kubectl("label", "namespace", namespace, "--overwrite", *(f"{k}={v}" for k, v in labels.items()))


@contextmanager
def train_controller(kubeconfig: Path, namespace: str, *flags: str, log: Path) -> Iterator[subprocess.Popen]:
    """The real `python -m controller` process, watching `namespace`, stopped afterwards."""
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "controller", f"--kubeconfig={kubeconfig}",
                                 f"--namespace={namespace}", "--workers=2", *flags],
                                cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b"train-controller started" in log.read_bytes() or proc.poll() is not None,
                 timeout=60, what="train-controller to start")
        assert proc.poll() is None, log.read_text()
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def expected_pods(body: dict[str, Any]) -> set[str]:
    kind = KINDS[body["kind"]]
    name = body["metadata"]["name"]
    out = set()
    for rtype, replica in body["spec"][kind.facts.replica_specs].items():
        if kind.name == "MPIJob" and rtype == "Launcher":
            out.add(f"{name}-launcher")
            continue
        out |= {desired.child_name(name, rtype, index=i) for i in range(replica.get("replicas", 1))}
    return out


def refusals(cluster: Cluster) -> list[str]:
    """The controller's FailedCreatePod Events that PodSecurity caused."""
    events = cluster.client.list(EVENTS, namespace=cluster.namespace)["items"]
    return [e["message"] for e in events if "violates PodSecurity" in (e.get("message") or "")]


def refused(cluster: Cluster, *names: str) -> bool:
    found = refusals(cluster)
    return all(any(f'"{name}"' in m for m in found) for name in names)


# --- on the real API server, with kwok ----------------------------------------------------

def test_train_controller_pods_of_restricted_jobs_are_admitted_and_run_on_kwok(pod_world, pod_namespace, tmp_path):
    jobs, namespaces = compiled(tmp_path, pod_namespace, "train-controller")
    assert {j["kind"] for j in jobs} == set(KINDS)  # every framework
    assert namespaces == [namespace_object(pod_namespace, "restricted")]  # what the compiled tree would apply
    cluster = Cluster(pod_world.client, pod_namespace)
    enforce_restricted(pod_world, pod_namespace)
    with train_controller(pod_world.kubeconfig, pod_namespace, log=tmp_path / "controller.log"):
        for body in jobs:
            cluster.apply(body)
        for body in jobs:
            try:
                cluster.wait_condition(body["kind"], body["metadata"]["name"], "Succeeded", timeout=120)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nrefused by PodSecurity: {refusals(cluster)}") from None
    pods = cluster.pods()
    assert not refusals(cluster)
    for body in jobs:  # every pod was created (admitted) and ran to completion on a kwok node
        for name in expected_pods(body):
            assert pods[name]["status"]["phase"] == "Succeeded" and pods[name]["spec"].get("nodeName"), name
    for framework, (role, init) in INIT_PODS.items():
        mine = [p for n, p in pods.items() if n.startswith(f"r-{framework}-{role}")]
        assert mine
        for pod in mine:
            (container,) = [c for c in pod["spec"]["initContainers"] if c["name"] == init]
            assert container["securityContext"] == RESTRICTED


def test_upstream_init_containers_are_refused_where_the_compiler_says(pod_world, pod_namespace, tmp_path):
    """The pods upstream's operator makes (ours with --upstream-init-containers): only the
    PyTorch Workers and the MPI launcher, the pods the compiler refuses under
    `controller: training-operator`, are refused by the restricted namespace."""
    jobs, _ = compiled(tmp_path, pod_namespace, "training-operator")
    cluster = Cluster(pod_world.client, pod_namespace)
    enforce_restricted(pod_world, pod_namespace)
    chosen = [j for j in jobs if j["kind"] in ("PyTorchJob", "MPIJob", "JAXJob")]
    with train_controller(pod_world.kubeconfig, pod_namespace, "--upstream-init-containers",
                          log=tmp_path / "controller.log"):
        for body in chosen:
            cluster.apply(body)
        cluster.wait_condition("JAXJob", "r-jax", "Succeeded", timeout=120)  # the rest of the world works
        wait_for(lambda: refused(cluster, "r-pytorch-worker-0", "r-pytorch-worker-1", "r-mpi-launcher"),
                 timeout=60, what=f"PodSecurity to refuse the worker and launcher pods ({refusals(cluster)})")
        # the refusals are the signal: those pods were asked for and refused; the rest were admitted
        admitted = {"r-pytorch-master-0", "r-mpi-worker-0", "r-mpi-worker-1"}
        pods = wait_for(lambda: (lambda now: now if admitted <= set(now) else None)(cluster.pods()),
                        what="the admitted pods")
    assert admitted <= set(pods)
    assert not {n for n in pods if n.startswith("r-pytorch-worker") or n == "r-mpi-launcher"}


# --- pure: the one difference, and upstream's template file --------------------------------

def _applied(body: dict[str, Any]) -> dict[str, Any]:
    body = {**body, "metadata": {**body["metadata"], "namespace": "ns", "uid": "u-1"}}
    return defaulted(body, KINDS[body["kind"]])


def _all_pods(options: desired.Options) -> dict[str, dict[str, Any]]:
    pytorch = _applied(job("PyTorchJob", "p", Master=1, Worker=2))
    mpijob = _applied(job("MPIJob", "m", Launcher=1, Worker=1))
    out = {f"p-{rt}-{i}": desired.pod(pytorch, KINDS["PyTorchJob"], replica_type=rt, index=i, options=options)
           for rt, n in (("Master", 1), ("Worker", 2)) for i in range(n)}
    out["m-launcher"] = mpi.launcher_pod(mpijob, KINDS["MPIJob"], options=options)
    out["m-worker-0"] = mpi.worker_pod(mpijob, KINDS["MPIJob"], index=0)
    return out


def test_by_default_our_pods_differ_from_upstreams_only_by_the_init_containers_security_context():
    ours, upstream = _all_pods(desired.Options()), _all_pods(desired.Options(upstream_init_containers=True))
    secured = 0
    for name, pod in upstream.items():
        pod = copy.deepcopy(pod)
        for container in pod["spec"].get("initContainers") or []:
            assert "securityContext" not in container
            container["securityContext"] = RESTRICTED
            secured += 1
        assert ours[name] == pod, name
    assert secured == 3  # two PyTorch workers, one MPI launcher


def test_upstreams_template_file_renders_upstreams_init_container():
    """Upstream's built-in template, given as a file, makes exactly our built-in container."""
    template = (
        "- name: init-pytorch\n  image: {{.InitContainerImage}}\n  imagePullPolicy: IfNotPresent\n"
        "  resources:\n    limits:\n      cpu: 100m\n      memory: 20Mi\n    requests:\n      cpu: 50m\n"
        "      memory: 10Mi\n  command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if nslookup"
        " {{.MasterAddr}}; then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']\n")
    for upstream in (False, True):
        built_in = desired.Options(pytorch_init_max_tries=7, upstream_init_containers=upstream)
        from_file = desired.Options(pytorch_init_max_tries=7, upstream_init_containers=upstream,
                                    pytorch_init_template=template)
        body = _applied(job("PyTorchJob", "p", Master=1, Worker=1))
        pods = [desired.pod(body, KINDS["PyTorchJob"], replica_type="Worker", index=0, options=o)
                for o in (built_in, from_file)]
        assert pods[0] == pods[1]


def test_a_template_container_keeps_its_own_security_context():
    template = ("- name: wait\n  image: {{ .InitContainerImage }}\n  securityContext: {runAsUser: 4242}\n"
                "- name: other\n  image: x\n")
    body = _applied(job("PyTorchJob", "p", Master=1, Worker=1))
    pod = desired.pod(body, KINDS["PyTorchJob"], replica_type="Worker", index=0,
                      options=desired.Options(pytorch_init_template=template))

    assert [(c["name"], c["securityContext"]) for c in pod["spec"]["initContainers"]] == [
        ("wait", {"runAsUser": 4242}), ("other", RESTRICTED)]


@pytest.mark.parametrize(("text", "message"), [
    ("- name: a\n  image: {{.Image}}\n", "uses {{.Image}}; it may use only {{.MasterAddr}}, {{.InitContainerImage}}"),
    ("name: a\n", "must be a YAML list of containers, each with a name"),
])
def test_a_template_the_controller_cannot_use_is_a_usage_error_at_start(tmp_path, text, message):
    from click.testing import CliRunner

    from controller.__main__ import main

    path = tmp_path / "init.yaml"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["--pytorch-init-container-template-file", str(path)])

    assert result.exit_code == 2 and message in " ".join(result.output.split()), result.output
    missing = CliRunner().invoke(main, ["--pytorch-init-container-template-file", str(tmp_path / "none.yaml")])
    assert missing.exit_code == 2 and "cannot read" in missing.output, missing.output


def test_the_controller_and_the_compiler_read_one_fact():
    """The compiler's review and the pods take their securityContext from the same place."""
    from foundation.frameworks.base import operator_init_container

    pod = _all_pods(desired.Options())["p-Worker-0"]
    assert pod["spec"]["initContainers"][0]["securityContext"] == \
        operator_init_container("init-pytorch", "train-controller")["securityContext"]
    assert "securityContext" not in operator_init_container("init-pytorch", "training-operator")
