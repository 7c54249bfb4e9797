"""Adopting a running job changes nothing: `kubectl get -o yaml | train-compile import -`, then real
Flux and real Argo CD sync the spec, and the job's pods are left alone.

One world (kwok, the upstream operator v1.9.4 on namespace adopt-up, train-controller on
adopt-tc, Flux, Argo CD, the git server) and four PyTorchJobs written by hand and created with
`kubectl apply`, as a team's jobs are: one per engine and controller. The manifests say what
people write and the importer leaves out (a restartPolicy and an imagePullPolicy that are the
defaults, a CPU request as a bare number), so what each engine's apply does with those fields
is seen too. Each running job is read back with `kubectl get -o yaml` and imported into its
engine's project folder; `plan --live` of that folder says the job is `unchanged`; one commit
is synced; after each engine says it applied that revision, every pod has the uid it had and
each job is still the same job (`compiler.importing.sameness`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from e2e_kit import running as started
from plan_engines_kit import get_job, pods, running, wait_job, wait_pods

from compiler.importing.sameness import differences
from testworld import gitops
from testworld.argocd import ArgoCD
from testworld.controller_manager import ControllerManager
from testworld.flux import Flux
from testworld.gitserver import GitPart
from testworld.kwok import Kwok, NodePool
from testworld.scheduler import Scheduler
from testworld.stages import RUN_SECONDS
from testworld.train_controller import TrainController
from testworld.upstream import Operator
from testworld.world import World

UP, TC = "adopt-up", "adopt-tc"  # the upstream operator's namespace, train-controller's
ENGINES = ("flux", "argocd")
JOBS = {(engine, ns): f"{engine[:4]}-{ns.rsplit('-', 1)[1]}" for engine in ENGINES for ns in (UP, TC)}
KIND = "PyTorchJob"
FOLDER = "adopt/"

MANIFEST = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
  namespace: {namespace}
  labels: {{team: vision}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template: &pod
        metadata:
          annotations: {{{forever}: forever}}
        spec:
          containers:
            - name: pytorch
              image: ghcr.io/acme/resnet:2.1
              imagePullPolicy: IfNotPresent
              command: [torchrun, train.py, --epochs, "90"]
              env:
                - {{name: LOGLEVEL, value: INFO}}
              resources:
                requests: {{cpu: 1, memory: 1Gi}}
                limits: {{memory: 1Gi}}
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template: *pod
"""


class State:
    originals: dict[tuple[str, str], dict[str, Any]] = {}  # (engine, namespace) -> the job as applied
    uids: dict[tuple[str, str], dict[str, str]] = {}  # -> pod name -> uid, before the sync
    generations: dict[tuple[str, str], int] = {}
    before: dict[tuple[str, str], dict[str, Any]] = {}  # the running job as the cluster had it, before the sync
    sha = ""


STATE = State()


def make_world() -> World:
    return World([ControllerManager(), Scheduler(), Kwok(nodes=(NodePool("cpu", 4, cpu="32", memory="128Gi"),)),
                  GitPart(), Flux(), ArgoCD(), Operator(UP), TrainController(TC, workers=2)])


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with started(make_world(), "the adoption world") as world:
        yield world


@pytest.fixture(scope="module")
def loop(world) -> gitops.Loop:
    return gitops.Loop(world)


def _jobs(loop: gitops.Loop, engine: str) -> Path:
    return loop.repo.path / engine / FOLDER / "jobs"


def _train_compile(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("train-compile")
    return subprocess.run([str(exe), *args], input=stdin, capture_output=True, text=True, check=False)


def test_the_hand_made_jobs_run(world, loop):
    for ns in (UP, TC):
        world.kubectl("create", "namespace", ns)
    for (engine, ns), name in JOBS.items():
        text = MANIFEST.format(name=name, namespace=ns, forever=RUN_SECONDS)
        world.kubectl("apply", "-f", "-", input=text)
        STATE.originals[(engine, ns)] = yaml.safe_load(text)
    for (engine, ns), name in JOBS.items():
        job = wait_job(world, KIND, ns, name, lambda j: "Running" in {c["type"] for c in
                       (j.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}, "Running")
        found = wait_pods(world, ns, name, lambda ps: running(ps, 3), "Running")
        STATE.uids[(engine, ns)] = {p["metadata"]["name"]: p["metadata"]["uid"] for p in found}
        STATE.generations[(engine, ns)] = job["metadata"]["generation"]
        STATE.before[(engine, ns)] = job
    base = loop.repo.path / "README.md"
    base.write_text("jobs adopted from the cluster\n")
    STATE.sha = loop.commit("adopt: the base, no specs")


def test_kubectl_get_piped_into_import_gives_a_spec_per_job(world, loop):
    for (engine, ns), name in JOBS.items():
        got = world.kubectl("get", "pytorchjob", name, "-n", ns, "-o", "yaml").stdout
        done = _train_compile("import", "-", "-o", str(_jobs(loop, engine)), stdin=got)
        assert done.returncode == 0, done.stderr
        assert f"PyTorchJob {ns}/{name} -> " in done.stderr
        # kubectl get hides managedFields since 1.21 (--show-managed-fields): not there to leave out
        assert "left out what the cluster wrote: status, uid, resourceVersion, creationTimestamp, generation," \
               " annotations.kubectl.kubernetes.io/last-applied-configuration" in done.stderr
    for engine in ENGINES:
        assert sorted(p.name for p in _jobs(loop, engine).iterdir()) == sorted(
            ["trainforge.yaml", *(f"{JOBS[(engine, ns)]}.yaml" for ns in (UP, TC))])


@pytest.mark.parametrize("engine", ENGINES)
def test_the_live_plan_says_each_running_job_is_adopted_unchanged(world, loop, engine):
    done = _train_compile("plan", str(_jobs(loop, engine)), "--base", STATE.sha, "--live", "--format", "json",
                          "--kubeconfig", str(world.kubeconfig))
    assert done.returncode == 0, done.stderr
    jobs = {j["name"]: j for env in json.loads(done.stdout)["environments"] for j in env["jobs"]}
    for ns in (UP, TC):
        job = jobs[JOBS[(engine, ns)]]
        assert (job["change"], job["hazards"], job["state"]) == ("unchanged", [], "Running"), job


def test_both_engines_sync_the_imported_specs(world, loop):
    for engine in ENGINES:
        loop.publish(engine, _jobs(loop, engine), prefix=f"adopt-{engine}", folder=FOLDER, timeout="20s")
    STATE.sha = loop.commit("adopt: the running jobs, imported")
    for engine in ENGINES:
        loop.install(engine, FOLDER)
    loop.poke()
    # a running job is in progress for both engines' health checks: Flux reports the revision
    # applied and its health check timing out, Argo CD the revision synced and Progressing
    loop.wait_flux("adopt-flux-default", STATE.sha, ready="False", reason="HealthCheckFailed")
    loop.wait_argocd("adopt-argocd-default", STATE.sha, health="Progressing")
    for (engine, ns), name in JOBS.items():  # each job carries what only the engine's apply wrote
        wait_job(world, KIND, ns, name, lambda j: "trainforge.dev/source" in (j["metadata"].get("annotations") or {}),
                 f"applied by {engine}")


@pytest.mark.parametrize(("engine", "ns"), list(JOBS), ids=[f"{e} under {n}" for e, n in JOBS])
def test_the_sync_left_the_pods_alone(world, engine, ns):
    name = JOBS[(engine, ns)]
    now = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods(world, ns, name)}

    assert now == STATE.uids[(engine, ns)]
    assert all((p.get("status") or {}).get("phase") == "Running" for p in pods(world, ns, name))


@pytest.mark.parametrize(("engine", "ns"), list(JOBS), ids=[f"{e} under {n}" for e, n in JOBS])
def test_the_synced_job_is_the_same_job(world, engine, ns):
    live = get_job(world, KIND, ns, JOBS[(engine, ns)])
    assert live is not None

    assert differences(STATE.originals[(engine, ns)], live) == []
    # what the engine's apply changed in the stored object, field by field (the same job all the
    # same: the defaults and marks the comparison above reads through); said in docs/import.md
    before = STATE.before[(engine, ns)]
    changed = [f"{path}: {json.dumps(old)} -> {json.dumps(new)}" for path, old, new in
               _raw_changes({"labels": before["metadata"].get("labels"), "annotations": before["metadata"].get(
                   "annotations"), "spec": before["spec"]}, {"labels": live["metadata"].get("labels"), "annotations":
                   live["metadata"].get("annotations"), "spec": live["spec"]})]
    print(f"\n{engine} {ns}: generation {STATE.generations[(engine, ns)]} -> {live['metadata']['generation']};"
          f" managers {sorted({m['manager'] for m in live['metadata'].get('managedFields') or []})}; changed:\n  "
          + "\n  ".join(changed))


def _raw_changes(old: Any, new: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted({*old, *new}, key=str):
            yield from _raw_changes(old.get(key), new.get(key), f"{path}.{key}" if path else str(key))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            yield from _raw_changes(a, b, f"{path}[{i}]")
    elif old != new:
        yield path, old, new
