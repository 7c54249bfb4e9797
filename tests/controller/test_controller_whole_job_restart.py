"""Whole-job restarts (issue 38, `trainforge.dev/restart-scope: job`) on the real control plane with kwok.

One pod's retryable exit replaces every pod of the job as one attempt: the test's own watch
of the pods replays every ADDED and DELETED in the API server's order and checks that no pod
of a new attempt was created while any pod of an earlier one still existed; the attempt is
counted once (the run's ControllerRevision, one `Restarting` Event naming the pod and exit
code, the status `Restarting` then `Running`). Past backoffLimit the job fails with
upstream's message; a permanent exit fails it as under scope `pod`. A controller SIGKILLed
while an attempt's pods terminate, or gone right after it committed the attempt (the state
such a crash leaves, made by hand), is followed by one that finishes the restart: still no
two attempts at once, no restart counted twice. MPI's own pass, an elastic job's scaling, a
gang's PodGroup and a suspension keep working with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from controller_kit import PODS_FIRST, Cluster, job, running_manager, settled, wait_for
from test_controller_run_integrity import end, events, live, server_side_apply

from controller.jobs import run_record, runs
from controller.jobs.kinds import KINDS, job_resource
from foundation.cluster import errors
from controller.runtime.informer import Informer
from foundation.cluster.kube import PODS
from schemas import marks
from testworld import stages

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

REPO = Path(__file__).resolve().parents[2]
FIRST = {"PyTorchJob": "Master", "MPIJob": "Launcher", "TFJob": "Chief"}


def whole_job(kind: str, name: str, namespace: str, *, restart: str, workers: int = 3, backoff: int | None = 3,
              spec: dict[str, Any] | None = None) -> dict[str, Any]:
    """A job of restart scope job whose pods kwok runs until told, and never deletes itself
    (the test's `Kubelet` does: kwok v0.8.0 deletes by name, so a delete it repeats hits the
    same-named pod of the next attempt, which a kubelet's uid precondition never does)."""
    run_policy = {"backoffLimit": backoff} if backoff is not None else None
    body = job(kind, name, restart=restart, run_policy=run_policy, spec=spec, **{FIRST[kind]: 1, "Worker": workers})
    body["metadata"].update(namespace=namespace, annotations={marks.RESTART_SCOPE: marks.RESTART_SCOPE_JOB})
    for replica in body["spec"][KINDS[kind].facts.replica_specs].values():
        replica["template"]["metadata"] = {"annotations": {stages.RUN_SECONDS: "forever",
                                                           stages.TERMINATE_SECONDS: "3600"}}
    return body


class Kubelet:
    """Removes each deleted pod after `grace` s as a kubelet does once its containers stopped:
    a delete with grace 0 and the pod's uid as precondition (its successor is never touched)."""

    def __init__(self, cluster: Cluster, grace: float = 0.0) -> None:
        self.cluster, self.grace = cluster, grace
        self.informer = Informer(cluster.client, PODS, handler=self.on_pod, namespace=cluster.namespace)
        self.timers: list[threading.Timer] = []

    def on_pod(self, etype: str, old: Any, new: Any) -> None:
        if new is not None and new["metadata"].get("deletionTimestamp") and not (
                old or {}).get("metadata", {}).get("deletionTimestamp"):
            timer = threading.Timer(self.grace, self.remove, args=(new["metadata"]["name"], new["metadata"]["uid"]))
            timer.daemon = True
            self.timers.append(timer)
            timer.start()

    def remove(self, name: str, uid: str) -> None:
        try:
            self.cluster.client.call("DELETE", PODS, verb="delete", namespace=self.cluster.namespace, name=name, body={
                "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
        except (errors.NotFound, errors.Conflict):
            pass


@contextmanager
def kubelet(cluster: Cluster, grace: float = 0.0) -> Iterator[Kubelet]:
    playing = Kubelet(cluster, grace)
    playing.informer.start()
    try:
        assert playing.informer.wait_synced(30)
        yield playing
    finally:
        playing.informer.stop()
        for timer in playing.timers:
            timer.cancel()


def pod_names(kind: str, name: str, workers: int) -> set[str]:
    first = f"{name}-launcher" if kind == "MPIJob" else f"{name}-{FIRST[kind].lower()}-0"
    return {first, *(f"{name}-worker-{i}" for i in range(workers))}


def attempt(pod: dict[str, Any]) -> int:
    return run_record.attempt_of(pod)


def running_attempt(cluster: Cluster, names: set[str], n: int) -> dict[str, dict[str, Any]] | None:
    pods = cluster.pods()
    ok = set(pods) == names and all(live(p) and p["status"].get("phase") == "Running" and attempt(p) == n
                                    for p in pods.values())
    return pods if ok else None


def revision(cluster: Cluster) -> dict[str, Any]:
    (only,) = cluster.objects(run_record.CONTROLLERREVISIONS).values()
    return only


# ---------------------------------------------------------------------------------- the pods' history
class History:
    """Every ADDED and DELETED of the namespace's pods with its attempt, in the API server's order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str, str, int]] = []  # (type, name, uid, attempt)
        self.jobs: dict[str, str] = {}  # pod uid -> its job

    def on_pod(self, etype: str, old: Any, new: Any) -> None:
        pod = new or old
        if etype in ("ADDED", "DELETED"):
            with self.lock:
                self.jobs[pod["metadata"]["uid"]] = pod["metadata"]["labels"].get("training.kubeflow.org/job-name", "")
                self.events.append((etype, pod["metadata"]["name"], pod["metadata"]["uid"], attempt(pod)))

    def mixed(self) -> list[str]:
        """Each creation of a pod while a pod of another attempt of its job still existed."""
        present: dict[str, tuple[str, int]] = {}  # uid -> (job, attempt)
        found = []
        with self.lock:
            events, jobs = list(self.events), dict(self.jobs)
        for etype, name, uid, n in events:
            if etype == "DELETED":
                present.pop(uid, None)
                continue
            others = {a for j, a in present.values() if j == jobs[uid] and a != n}
            if others:
                found.append(f"{name} of attempt {n} created beside pods of attempt(s) {sorted(others)}")
            present[uid] = (jobs[uid], n)
        return found

    def created(self, n: int) -> list[str]:
        with self.lock:
            return sorted(name for etype, name, _, a in self.events if etype == "ADDED" and a == n)


@contextmanager
def history(cluster: Cluster) -> Iterator[History]:
    record = History()
    informer = Informer(cluster.client, PODS, handler=record.on_pod, namespace=cluster.namespace)
    informer.start()
    try:
        assert informer.wait_synced(30)
        yield record
    finally:
        informer.stop()


def statuses_seen(cluster: Cluster, kind: str, name: str) -> Iterator[list[dict[str, Any]]]:
    """The job's statuses as they are written (a watch), for the Restarting -> Running order."""
    seen: list[dict[str, Any]] = []
    informer = Informer(cluster.client, job_resource(KINDS[kind]), namespace=cluster.namespace,
                        handler=lambda et, old, new: seen.append((new or {}).get("status") or {}))
    informer.start()
    try:
        assert informer.wait_synced(30)
        yield seen
    finally:
        informer.stop()


conditions_seen = contextmanager(statuses_seen)


def transitions(seen: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The (type, message) of the newest True condition of each status, repeats folded."""
    out: list[tuple[str, str]] = []
    for status in seen:
        true = [c for c in status.get("conditions") or [] if c.get("status") == "True"]
        if true and (not out or out[-1] != (true[-1]["type"], true[-1]["message"])):
            out.append((true[-1]["type"], true[-1]["message"]))
    return out


# ---------------------------------------------------------------------------------- one exit, one attempt
@pytest.mark.parametrize("policy, code", [("OnFailure", 1), ("ExitCode", 137), ("Always", 2)],
                         ids=["OnFailure and exit 1", "ExitCode and exit 137", "Always and exit 2"])
def test_one_pods_retryable_exit_replaces_every_pod_as_one_attempt(pod_world, pod_namespace, policy, code) -> None:
    cluster, name = Cluster(pod_world.client, pod_namespace), "wj"
    names = pod_names("PyTorchJob", name, 3)
    with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST), \
            kubelet(cluster), history(cluster) as pods, conditions_seen(cluster, "PyTorchJob", name) as seen:
        server_side_apply(pod_world, pod_namespace, whole_job("PyTorchJob", name, pod_namespace, restart=policy))
        first = wait_for(lambda: running_attempt(cluster, names, 0), timeout=60, what="attempt 0 running")
        assert {p["spec"]["restartPolicy"] for p in first.values()} == {"Never"}  # every exit is the controller's to see
        end(cluster, f"{name}-worker-1", code)
        second = wait_for(lambda: running_attempt(cluster, names, 1), timeout=60, what="attempt 1 running")
        assert not {p["metadata"]["uid"] for p in first.values()} & {p["metadata"]["uid"] for p in second.values()}
        wait_for(lambda: transitions(seen)[-1:] == [("Running", f"PyTorchJob {name} is running.")],
                 what="Running again, as the test's watch saw it")
    message = (f"PyTorchJob {name} is restarting every pod (whole-job restart 1 of backoffLimit 3): "
               f"pod {name}-worker-1 exited with code {code}.")
    assert not pods.mixed(), pods.mixed()
    assert pods.created(1) == sorted(names)  # each pod once in the new attempt
    steps = transitions(seen)
    assert steps[steps.index(("Restarting", message)) + 1:] == [("Running", f"PyTorchJob {name} is running.")], steps
    restarting = events(cluster, name, "PyTorchJobRestarting")
    assert [(e["type"], e["message"], e.get("count", 1)) for e in restarting] == [("Warning", message, 1)]
    rev = revision(cluster)
    assert run_record.attempt_of(rev) == 1
    assert rev["metadata"]["annotations"][run_record.RESTART_CAUSE] == f"pod {name}-worker-1 exited with code {code}"


def test_past_the_backoff_limit_the_job_fails_and_a_permanent_exit_fails_it_at_once(pod_world, pod_namespace) -> None:
    cluster = Cluster(pod_world.client, pod_namespace)
    with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST) as mgr, \
            kubelet(cluster):
        server_side_apply(pod_world, pod_namespace, whole_job("PyTorchJob", "wb", pod_namespace, restart="OnFailure",
                                                              workers=1, backoff=1))
        server_side_apply(pod_world, pod_namespace, whole_job("PyTorchJob", "wp", pod_namespace, restart="ExitCode",
                                                              workers=1))
        wb, wp = pod_names("PyTorchJob", "wb", 1), pod_names("PyTorchJob", "wp", 1)
        wait_for(lambda: running_attempt(Cluster(cluster.client, pod_namespace), wb | wp, 0), timeout=60,
                 what="both jobs' attempt 0")
        end(cluster, "wb-worker-0", 1)
        end(cluster, "wp-worker-0", 3)  # ExitCode below 128: permanent
        wait_for(lambda: {n for n, p in cluster.pods().items() if n in wb and attempt(p) == 1 and
                          p["status"].get("phase") == "Running"} == wb, timeout=60, what="wb's attempt 1")
        end(cluster, "wb-master-0", 1)
        failed = cluster.wait_condition("PyTorchJob", "wb", "Failed", timeout=60)
        permanent = cluster.wait_condition("PyTorchJob", "wp", "Failed", timeout=60)
        settled(mgr, mgr.reconciles - 1)
    assert failed["status"]["conditions"][-1]["message"] == (
        "Job wb has failed because it has reached the specified backoff limit")
    assert permanent["status"]["conditions"][-1]["message"] == 'job "wp" is failing because "Worker" replica(s) failed.'
    revs = {r["metadata"]["labels"]["training.kubeflow.org/job-name"]: run_record.attempt_of(r)
            for r in cluster.objects(run_record.CONTROLLERREVISIONS).values()}
    assert revs == {"wb": 1, "wp": 0}
    assert len(events(cluster, "wb", "PyTorchJobRestarting")) == 1
    # wp: only upstream's status rule speaks (its ExitCode replica "is restarting because 1 Worker
    # replica(s) failed" in the pass that fails it, as under scope pod); no whole-job restart
    assert not [e for e in events(cluster, "wp", "PyTorchJobRestarting") if "every pod" in e["message"]]
    assert all(attempt(p) == (1 if n in wb else 0) for n, p in cluster.pods().items())  # nothing created after


# ---------------------------------------------------------------------------------- the controller killed
class Process:
    """`python -m controller` for this namespace, SIGKILLed or stopped by the test."""

    def __init__(self, kubeconfig: Path, namespace: str, log: Path) -> None:
        argv = [sys.executable, "-m", "controller", "--kubeconfig", str(kubeconfig), "--namespace", namespace,
                "--frameworks", "pytorch,mpi", *([] if PODS_FIRST else ["--no-pods-first"])]
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                          cwd=REPO, env={**os.environ, "POD_NAME": "whole-job-test"})

    def kill(self) -> None:
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            self.popen.wait(20)


def test_the_controller_killed_while_an_attempts_pods_terminate(pod_world, pod_namespace, tmp_path) -> None:
    """The kubelet keeps each deleted pod Terminating for 4 s: the kill lands in the middle of the restart."""
    cluster, name = Cluster(pod_world.client, pod_namespace), "wk"
    names = pod_names("PyTorchJob", name, 3)
    log = tmp_path / "controller.log"
    with kubelet(cluster, grace=4.0), history(cluster) as pods:
        first = Process(pod_world.kubeconfig, pod_namespace, log)
        try:
            server_side_apply(pod_world, pod_namespace, whole_job("PyTorchJob", name, pod_namespace,
                                                                  restart="ExitCode"))
            wait_for(lambda: running_attempt(cluster, names, 0), timeout=90, what="attempt 0 running")
            end(cluster, f"{name}-worker-2", 137)
            wait_for(lambda: run_record.attempt_of(revision(cluster)) == 1 and any(
                p["metadata"].get("deletionTimestamp") for p in cluster.pods().values()), timeout=60,
                what="the restart under way")
        finally:
            first.kill()
        second = Process(pod_world.kubeconfig, pod_namespace, log)
        try:
            wait_for(lambda: running_attempt(cluster, names, 1), timeout=90, what="attempt 1 running")
            cluster.wait_condition("PyTorchJob", name, "Running")
        finally:
            second.stop()
    assert not pods.mixed(), pods.mixed()
    assert pods.created(1) == sorted(names) and run_record.attempt_of(revision(cluster)) == 1
    assert len(events(cluster, name, "PyTorchJobRestarting")) == 1, log.read_text()[-3000:]


def test_a_restart_committed_by_a_controller_that_died_before_retiring_a_pod_is_finished_once(
        pod_world, pod_namespace) -> None:
    """The state such a crash leaves, made by hand: the attempt on the revision, every pod still
    of the attempt before, the failed one unmarked. The next controller retires them all and
    creates attempt 1; it counts nothing again."""
    cluster, name = Cluster(pod_world.client, pod_namespace), "wc"
    names = pod_names("PyTorchJob", name, 2)
    with kubelet(cluster), history(cluster) as pods:
        with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST):
            server_side_apply(pod_world, pod_namespace, whole_job("PyTorchJob", name, pod_namespace,
                                                                  restart="OnFailure", workers=2))
            wait_for(lambda: running_attempt(cluster, names, 0), timeout=60, what="attempt 0 running")
        end(cluster, f"{name}-worker-0", 1)  # no controller runs now
        wait_for(lambda: cluster.pods()[f"{name}-worker-0"]["status"].get("phase") == "Failed", what="the exit")
        rev = revision(cluster)
        cause = f"pod {name}-worker-0 exited with code 1"
        cluster.client.patch(run_record.CONTROLLERREVISIONS, pod_namespace, rev["metadata"]["name"], {"metadata": {
            "annotations": {run_record.ATTEMPT: "1", run_record.RESTART_CAUSE: cause}}})
        with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST):
            wait_for(lambda: running_attempt(cluster, names, 1), timeout=60, what="attempt 1 running")
            cluster.wait_condition("PyTorchJob", name, "Running")
    assert not pods.mixed(), pods.mixed()
    assert pods.created(1) == sorted(names) and run_record.attempt_of(revision(cluster)) == 1
    assert not events(cluster, name, "PyTorchJobRestarting")  # the dead controller's Event is lost, none is repeated


# ---------------------------------------------------------------------------------- with the rest
def running_of(cluster: Cluster, names: set[str], n: int) -> bool:
    """`names` (and no other pod of their job) live, Running and of attempt `n`."""
    prefix = next(iter(names)).split("-")[0] + "-"
    pods = {k: p for k, p in cluster.pods().items() if k.startswith(prefix) and live(p)}
    return set(pods) == names and all(p["status"].get("phase") == "Running" and attempt(p) == n for p in pods.values())


def test_mpi_elastic_and_suspension_keep_working_with_whole_job_restarts(pod_world, pod_namespace) -> None:
    cluster = Cluster(pod_world.client, pod_namespace)
    mpi, workers = pod_names("MPIJob", "wm", 2), {"we-worker-0", "we-worker-1"}
    with running_manager(str(pod_world.kubeconfig), pod_namespace, pool_size=48, pods_first=PODS_FIRST), \
            kubelet(cluster), history(cluster) as pods:
        server_side_apply(pod_world, pod_namespace, whole_job("MPIJob", "wm", pod_namespace, restart="ExitCode",
                                                              workers=2))
        elastic = whole_job("PyTorchJob", "we", pod_namespace, restart="OnFailure", workers=1,
                            spec={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 3}})
        del elastic["spec"]["pytorchReplicaSpecs"]["Master"]
        server_side_apply(pod_world, pod_namespace, elastic)
        wait_for(lambda: running_of(cluster, mpi, 0) and running_of(cluster, {"we-worker-0"}, 0), timeout=60,
                 what="attempt 0")
        # MPI's own pass: a worker's retryable exit restarts the launcher and every worker
        end(cluster, "wm-worker-1", 137)
        wait_for(lambda: running_of(cluster, mpi, 1), timeout=60, what="the MPIJob's attempt 1")
        # elastic: scaled up (as its HPA would), the new worker joins the attempt; its exit restarts both
        cluster.client.patch(job_resource(KINDS["PyTorchJob"]), pod_namespace, "we", {"spec": {"replicas": 2}},
                             sub="scale")
        wait_for(lambda: running_of(cluster, workers, 0), timeout=60, what="the elastic job scaled up")
        end(cluster, "we-worker-1", 1)
        wait_for(lambda: running_of(cluster, workers, 1), timeout=60, what="the elastic job's attempt 1")
        # suspended and resumed (Kueue's preemption): the next run's pods, the restarts counted so far kept
        before = {n: p["metadata"]["uid"] for n, p in cluster.pods().items() if n in mpi}
        cluster.client.patch(job_resource(KINDS["MPIJob"]), pod_namespace, "wm", {"spec": {"runPolicy": {"suspend": True}}})
        cluster.wait_condition("MPIJob", "wm", "Suspended")
        wait_for(lambda: not any(n in mpi for n in cluster.pods()), timeout=60, what="suspended")
        cluster.client.patch(job_resource(KINDS["MPIJob"]), pod_namespace, "wm", {"spec": {"runPolicy": {"suspend": False}}})
        wait_for(lambda: running_of(cluster, mpi, 1), timeout=60, what="resumed")
        assert not set(before.values()) & {p["metadata"]["uid"] for n, p in cluster.pods().items() if n in mpi}
        for n in sorted(mpi - {"wm-launcher"}) + sorted(workers) + ["wm-launcher"]:
            end(cluster, n, 0)
        cluster.wait_condition("MPIJob", "wm", "Succeeded", timeout=60)
        cluster.wait_condition("PyTorchJob", "we", "Succeeded", timeout=60)
    assert not pods.mixed(), pods.mixed()
    assert len(events(cluster, "wm", "MPIJobRestarting")) == 1 and len(events(cluster, "we", "PyTorchJobRestarting")) == 1


def test_a_gangs_podgroup_stays_while_its_pods_restart_as_a_whole(control_plane, cluster) -> None:
    """scheduler-plugins on the session's control plane (the test plays the kubelet): the group
    is not touched by a restart, and every pod of the new attempt joins it again."""
    from controller.jobs.gang import SCHEDULER_PLUGINS
    from controller.manager import Manager
    from controller.jobs.kinds import select
    from foundation.cluster.kube import Client

    client = Client.connect(str(control_plane.kubeconfig), pool_size=32)
    mgr = Manager(client, select("pytorch"), namespace=cluster.namespace, workers=2, watch_timeout=60,
                  gang_scheduler_name="scheduler-plugins-scheduler", pods_first=PODS_FIRST)
    mgr.start()
    try:
        body = whole_job("PyTorchJob", "wg", cluster.namespace, restart="OnFailure", workers=1)
        cluster.apply(body)
        names = pod_names("PyTorchJob", "wg", 1)
        cluster.wait_pods(names)
        cluster.run_all(*sorted(names))
        group = wait_for(lambda: cluster.objects(SCHEDULER_PLUGINS).get("wg"), what="the PodGroup")
        cluster.set_phase("wg-worker-0", "Failed", exit_code=1)
        new = wait_for(lambda: (lambda pods: pods if set(pods) == names and all(attempt(p) == 1 for p in pods.values())
                                else None)(cluster.pods()), what="attempt 1")
        assert {p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] for p in new.values()} == {"wg"}
        settled(mgr, mgr.reconciles - 1)
        assert cluster.objects(SCHEDULER_PLUGINS)["wg"]["metadata"]["uid"] == group["metadata"]["uid"]
        assert mgr.client.snapshot()[("update", "scheduling.x-k8s.io/podgroups")] == 0
    finally:
        mgr.stop()
        client.close()
