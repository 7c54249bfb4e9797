"""The install's roles are sufficient and minimal: the controller runs as an identity bound
to nothing but `controller/install/clusterrole.yaml` (and `role.yaml`, the Lease's, in the
namespace it elects in) through a scenario that takes
every code path that talks to the API server (create, adopt, restart, clean up, TTL
delete, MPI helpers updated as workers run and scale down, PodGroups of both gang
schedulers created, updated and deleted, an elastic job's HPA likewise), never gets a
403, and uses every verb the role grants except the two it must hold to grant them to
MPI launchers."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import pytest
import yaml
from controller_kit import (
    ESCALATION_ONLY,
    PODS_FIRST,
    Cluster,
    job,
    one_job_resource,
    wait_for,
)

from test_controller_behaviour import events_of

from controller.generators import crds
from controller.jobs.gang import SCHEDULER_PLUGINS, VOLCANO
from controller.jobs.hpa import HPAS
from controller.jobs.kinds import KINDS, job_resource, select
from controller.manager import Manager
from foundation.cluster.kube import CONFIGMAPS, PODS, ROLES, SERVICES, Client
from controller.progress.service import ProgressOptions
from controller.runtime.leader import LeaderConfig, LeaderElector
from foundation.cluster import errors
from foundation.progress.endpoint import CA_CONFIGMAP, path
from progress_kit import SERVICEACCOUNTS, mint, report

pytestmark = pytest.mark.both_orders  # starts train-controller: make test runs it in upstream's order too

ROLE_FILE = crds.OUT.parent / "clusterrole.yaml"
LEASE_ROLE_FILE = crds.OUT.parent / "role.yaml"  # the Lease, in the controller's namespace only


def granted() -> set[tuple[str, str]]:
    rules = [rule for path in (ROLE_FILE, LEASE_ROLE_FILE) for rule in yaml.safe_load(path.read_text())["rules"]]
    return {(verb, f"{group}/{res}") for rule in rules for group in rule["apiGroups"]
            for res in rule["resources"] for verb in rule["verbs"]}


def test_clusterrole_is_exactly_what_the_controller_uses(control_plane, namespace, cluster) -> None:
    user = "trainforge-rbac-probe"
    control_plane.kubectl("apply", "-f", str(ROLE_FILE))
    control_plane.kubectl("create", "clusterrolebinding", f"{user}-{namespace}", "--clusterrole=train-controller", f"--user={user}")
    control_plane.kubectl("apply", "-n", namespace, "-f", str(LEASE_ROLE_FILE))
    control_plane.kubectl("create", "rolebinding", "-n", namespace, "lease", "--role=train-controller-leader-election",
                          f"--user={user}")
    kubeconfig = control_plane.add_user(user)
    client = Client.connect(str(Path(kubeconfig)))
    answers: Counter[str] = Counter()  # HTTP codes (409s from racing the test's own patches are fine)
    client.observer = lambda verb, resource, code, seconds: answers.update([code])
    audit_from = control_plane.audit_log.stat().st_size
    elector = _elect(client, namespace)
    # the progress endpoint's CA ConfigMap, there already and stale: created (409), read, updated
    cluster.client.create(CONFIGMAPS, namespace, {"metadata": {"name": CA_CONFIGMAP}, "data": {"ca.crt": "old"}})
    mgr = Manager(client, select(""), namespace=namespace, workers=2, watch_timeout=60,
                  gang_scheduler_name="scheduler-plugins-scheduler", pods_first=PODS_FIRST,
                  progress=ProgressOptions(ca_pem=b"new"))
    mgr.start()
    try:
        _scenario(cluster)
        _progress(cluster, mgr)
        _elastic(cluster)
        wait_for(lambda: cluster.get_job("PyTorchJob", "ttl") is None, timeout=8, what="TTL delete")
        wait_for(lambda: "m" not in cluster.objects(SCHEDULER_PLUGINS) or
                 cluster.objects(SCHEDULER_PLUGINS)["m"]["spec"]["minMember"] == 2, what="PodGroup update")
        assert "ttl" not in cluster.objects(SCHEDULER_PLUGINS)
    finally:
        mgr.stop()
        elector.stop(release=True)
    volcano = _volcano(control_plane, cluster, kubeconfig, f"{namespace[:55]}-volcano", answers)
    client.close()
    used = {key for key, count in (client.snapshot() + elector.client.snapshot() + volcano).items() if count}
    assert "403" not in answers
    assert used <= granted(), used - granted()
    # the scenario drives PyTorchJob and MPIJob; every job kind goes through the same code
    assert one_job_resource(granted()) - one_job_resource(used) == ESCALATION_ONLY
    # the API server's audit log of the run (user = the controller's identity) says the same
    assert _audited(control_plane, user, audit_from) == used



def _scenario(cluster: Cluster) -> None:
    # an orphan pod and service with a job's labels are adopted (patch)
    labels = {"training.kubeflow.org/operator-name": "pytorchjob-controller", "training.kubeflow.org/job-name": "ttl",
              "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"}
    cluster.client.create(PODS, cluster.namespace, {"metadata": {"name": "ttl-worker-0", "labels": labels},
                                                    "spec": {"containers": [{"name": "pytorch", "image": "x"}]}})
    cluster.client.create(SERVICES, cluster.namespace, {"metadata": {"name": "ttl-worker-0", "labels": labels},
                                                        "spec": {"clusterIP": "None", "selector": labels, "ports": []}})
    applied = cluster.apply(job("PyTorchJob", "ttl", Master=1, Worker=1, restart="OnFailure",
                                run_policy={"ttlSecondsAfterFinished": 1, "cleanPodPolicy": "All"}))
    wait_for(lambda: all(p["metadata"].get("ownerReferences", [{}])[0].get("uid") == applied["metadata"]["uid"]
                         for p in cluster.pods().values()) and len(cluster.pods()) == 2, what="adopted and created")
    cluster.run_all("ttl-master-0", "ttl-worker-0")
    old = cluster.pods()["ttl-worker-0"]["metadata"]["uid"]
    cluster.set_phase("ttl-worker-0", "Failed")  # OnFailure: delete and recreate
    wait_for(lambda: cluster.pods().get("ttl-worker-0", {}).get("metadata", {}).get("uid") not in (None, old), what="restart")

    cluster.apply(job("MPIJob", "m", Launcher=1, Worker=2))
    cluster.wait_pods({"ttl-master-0", "ttl-worker-0", "m-launcher", "m-worker-0", "m-worker-1"})
    cluster.run_all("m-worker-0", "m-worker-1")
    wait_for(lambda: "m-worker-1" in cluster.objects(CONFIGMAPS)["m-config"]["data"]["discover_hosts.sh"], what="configmap update")
    mpi = job_resource(KINDS["MPIJob"])
    # fewer workers while it runs: held until the next run (the run's ControllerRevision patched
    # with the announcement); suspended and resumed, the next run's revision replaces it (deleted)
    cluster.client.patch(mpi, cluster.namespace, "m", {"spec": {"mpiReplicaSpecs": {"Worker": {"replicas": 1}}}})
    wait_for(lambda: any(e[1] == "MPIJobSpecChangeHeld" for e in events_of(cluster, "m")), what="the change held")
    cluster.client.patch(mpi, cluster.namespace, "m", {"spec": {"runPolicy": {"suspend": True}}})
    wait_for(lambda: not {"m-launcher", "m-worker-0", "m-worker-1"} & set(cluster.pods()), what="suspended")
    cluster.client.patch(mpi, cluster.namespace, "m", {"spec": {"runPolicy": {"suspend": False}}})
    wait_for(lambda: "m-worker-0" in cluster.pods() and "m-worker-1" not in cluster.pods(), what="scale down")
    wait_for(lambda: cluster.objects(ROLES)["m-launcher"]["rules"][1]["resourceNames"] == ["m-worker-0"], what="role update")

    cluster.set_phase("ttl-master-0", "Succeeded")


def _progress(cluster: Cluster, mgr: Manager) -> None:
    """A report from the MPI launcher's pod: its token reviewed, the job's status patched."""
    try:
        cluster.client.create(SERVICEACCOUNTS, cluster.namespace, {"metadata": {"name": "default"}})
    except errors.AlreadyExists:
        pass
    token = mint(cluster.client, cluster.pods()["m-launcher"])
    body = json.dumps(report(10)).encode()
    assert mgr.progress is not None
    answer = mgr.progress.endpoint.answer("POST", path(cluster.namespace, "mpijobs", "m"),
                                          {"Authorization": f"Bearer {token}", "Content-Length": str(len(body))},
                                          lambda n: body)
    assert answer.code == 200, answer
    wait_for(lambda: cluster.objects(CONFIGMAPS)[CA_CONFIGMAP]["data"]["ca.crt"] == "new", what="CA published")


def _elect(client: Client, namespace: str) -> LeaderElector:
    """Hold the Lease as `--leader-elect` does: get, create, update; released on stop."""
    elector = LeaderElector(client, LeaderConfig(namespace, "train-controller.trainforge.io", "rbac-probe_0",
                                                 lease_duration=2, renew_deadline=1.5, retry_period=0.3),
                            on_lost=lambda: None)
    elector.start()
    assert elector.wait_leading(threading.Event())
    return elector


def _audited(control_plane, user: str, offset: int) -> set[tuple[str, str]]:
    """(verb, group/resource[/sub]) of every request of `user` in the audit log since `offset`."""
    needle, pairs = f'"username":"{user}"'.encode(), set()
    with open(control_plane.audit_log, "rb") as fh:
        fh.seek(offset)
        for line in fh:
            if needle in line:
                event = json.loads(line)
                ref = event.get("objectRef") or {}
                sub = f"/{ref['subresource']}" if ref.get("subresource") else ""
                pairs.add((event["verb"], f"{ref.get('apiGroup', '')}/{ref.get('resource', '')}{sub}"))
    return pairs


def _elastic(cluster: Cluster) -> None:
    """An elastic job's HPA: created, rewritten when the job changes, deleted on suspend."""
    metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    cluster.apply(job("PyTorchJob", "el", Worker=1, spec={"elasticPolicy": {"maxReplicas": 2, "metrics": metrics}}))
    wait_for(lambda: "el" in cluster.objects(HPAS), what="HPA created")
    pt = job_resource(KINDS["PyTorchJob"])
    cluster.client.patch(pt, cluster.namespace, "el", {"spec": {"elasticPolicy": {"maxReplicas": 3}}})
    wait_for(lambda: cluster.objects(HPAS)["el"]["spec"]["maxReplicas"] == 3, what="HPA updated")
    # scaled as its HPA would: the running job's gang follows (an elastic job's worker count is live)
    cluster.client.patch(pt, cluster.namespace, "el", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}})
    wait_for(lambda: cluster.objects(SCHEDULER_PLUGINS)["el"]["spec"]["minMember"] == 2, what="PodGroup updated")
    cluster.client.patch(pt, cluster.namespace, "el", {"spec": {"runPolicy": {"suspend": True}}})
    wait_for(lambda: "el" not in cluster.objects(HPAS), what="HPA deleted")


def _volcano(control_plane, cluster: Cluster, kubeconfig: Path, namespace: str, answers: Counter[str]) -> Counter:
    """A Volcano PodGroup created, admitted, updated on scale-up and deleted on suspend,
    by a second controller (one gang scheduler per process) in a namespace of its own."""
    control_plane.kubectl("create", "namespace", namespace)
    client = Client.connect(str(kubeconfig))
    client.observer = lambda verb, resource, code, seconds: answers.update([code])
    mgr = Manager(client, select("pytorch"), namespace=namespace, workers=2, watch_timeout=60, gang_scheduler_name="volcano", pods_first=PODS_FIRST)
    mgr.start()
    admin = Cluster(cluster.client, namespace)
    pt = job_resource(KINDS["PyTorchJob"])
    try:
        admin.apply(job("PyTorchJob", "vg", Worker=1, spec={"elasticPolicy": {"minReplicas": 1, "maxReplicas": 2}}))
        wait_for(lambda: "vg" in admin.objects(VOLCANO), what="Volcano PodGroup")
        admin.client.patch(VOLCANO, namespace, "vg", {"status": {"phase": "Inqueue"}})
        admin.wait_pods({"vg-worker-0"})
        admin.client.patch(pt, namespace, "vg", {"spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2}}}})
        wait_for(lambda: admin.objects(VOLCANO)["vg"]["spec"]["minMember"] == 2, what="Volcano PodGroup updated")
        admin.client.patch(pt, namespace, "vg", {"spec": {"runPolicy": {"suspend": True}}})
        wait_for(lambda: "vg" not in admin.objects(VOLCANO), what="Volcano PodGroup deleted")
    finally:
        mgr.stop()
        client.close()
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false")
    return client.snapshot()
