"""Every framework, on the real API server: a 1-node and a multi-node job go
Created -> Running -> Succeeded and a failing one goes to Failed, with the pods, services,
labels and rendezvous environment asserted exactly (TF_CONFIG/MX_CONFIG parsed as JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from controller_kit import job, wait_for

from foundation.cluster.kube import SERVICES

OP = "training.kubeflow.org/operator-name"
JOB = "training.kubeflow.org/job-name"
RT = "training.kubeflow.org/replica-type"
IDX = "training.kubeflow.org/replica-index"
ROLE = "training.kubeflow.org/job-role"
POD_IP = {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}


def labels(operator: str, name: str, rtype: str, index: int | None, *, master: bool = False) -> dict[str, str]:
    out = {OP: operator, JOB: name, RT: rtype}
    if index is not None:
        out[IDX] = str(index)
    if master:
        out[ROLE] = "master"
    return out


@dataclass
class Case:
    id: str
    job: dict[str, Any]
    pods: dict[str, dict[str, Any]]  # name -> {"labels":..., "env": [(k, v)...], "container": name}
    services: dict[str, list[tuple[str, int]]]  # name -> [(port name, port)]
    run: list[str]  # pods set Running
    finish: dict[str, str]  # pod -> final phase
    conditions: list[tuple[str, str, str]]
    replica_statuses: dict[str, dict[str, Any]]
    final: str = "Succeeded"
    message: str | None = None
    exit_code: int | None = None
    json_env: set[str] = field(default_factory=lambda: {"TF_CONFIG", "MX_CONFIG"})


def env_pairs(container: dict[str, Any], json_env: set[str]) -> list[tuple[str, Any]]:
    out = []
    for e in container.get("env") or []:
        value = e.get("value", e.get("valueFrom", ""))  # the API server drops empty values
        out.append((e["name"], json.loads(value) if e["name"] in json_env else value))
    return out


def pt_env(name: str, rank: int, world: int) -> list[tuple[str, Any]]:
    return [("PYTHONUNBUFFERED", "1"), ("MASTER_PORT", "23456"), ("PET_MASTER_PORT", "23456"),
            ("MASTER_ADDR", f"{name}-master-0"), ("PET_MASTER_ADDR", f"{name}-master-0"), ("WORLD_SIZE", str(world)),
            ("RANK", str(rank)), ("PET_NODE_RANK", str(rank)), ("PET_NPROC_PER_NODE", "auto"), ("PET_NNODES", str(world))]


def tf_cfg(ns: str, cluster: dict[str, int], rtype: str, index: int) -> dict[str, Any]:
    return {"cluster": {rt: [f"tf-{rt}-{i}.{ns}.svc:2222" for i in range(n)] for rt, n in sorted(cluster.items())},
            "task": {"type": rtype, "index": index}, "environment": "cloud"}


def xgb_env(rank: int, world: int) -> list[tuple[str, Any]]:
    env = [("MASTER_PORT", "9999"), ("MASTER_ADDR", "xgb-master-0"), ("WORLD_SIZE", str(world)), ("RANK", str(rank)),
           ("PYTHONUNBUFFERED", "1")]
    if world > 1:
        env += [("WORKER_PORT", "9999"), ("WORKER_ADDRS", ",".join(f"xgb-worker-{i}" for i in range(world - 1)))]
    return env


def pd_env(index: int, nodes: int) -> list[tuple[str, Any]]:
    head = [("PYTHONUNBUFFERED", "1"), ("PADDLE_JOB_ID", "pd"), ("PADDLE_NNODES", str(nodes))]
    if index == 0:
        return head + [("POD_IP_DUMMY", POD_IP), ("PADDLE_MASTER", "$(POD_IP_DUMMY):36543")]
    return head + [("PADDLE_MASTER", "pd-worker-0:36543")]


def jax_env(index: int, n: int) -> list[tuple[str, Any]]:
    return [("PYTHONUNBUFFERED", "1"), ("COORDINATOR_PORT", "6666"), ("COORDINATOR_ADDRESS", "jx-worker-0"),
            ("NUM_PROCESSES", str(n)), ("PROCESS_ID", str(index))]


def mx_env(counts: dict[str, int], rtype: str, index: int) -> list[tuple[str, Any]]:
    cluster = {rt: [{"url": f"mx-{rt}-{i}", "port": 9091} for i in range(n)] for rt, n in sorted(counts.items())}
    config = {"cluster": cluster, "labels": {rt: "" for rt in sorted(counts)}, "task": {"type": rtype, "index": index}}
    env = [("MX_CONFIG", config), ("DMLC_PS_ROOT_PORT", "9091" if "scheduler" in counts else "0"),
           ("DMLC_PS_ROOT_URI", "mx-scheduler-0" if "scheduler" in counts else ""),
           ("DMLC_NUM_SERVER", str(counts.get("server", 0))), ("DMLC_NUM_WORKER", str(counts.get("worker", 0))),
           ("DMLC_ROLE", rtype), ("DMLC_USE_KUBERNETES", "1")]
    if rtype == "worker":
        env.append(("DMLC_WORKER_ID", str(index)))
    return env


def created(kind: str) -> tuple[str, str, str]:
    return ("Created", "True", f"{kind}Created")


def succeeded_conditions(kind: str) -> list[tuple[str, str, str]]:
    return [created(kind), ("Running", "False", f"{kind}Running"), ("Succeeded", "True", f"{kind}Succeeded")]


def sel(operator: str, name: str, rt: str) -> str:
    return f"{JOB}={name},{OP}={operator},{RT}={rt}"


def cases(ns: str) -> list[Case]:
    pt, tfo, xg, pdo, jx, _mpi, mx = ("pytorchjob-controller", "tfjob-controller", "xgboostjob-controller",
                                     "paddlejob-controller", "jaxjob-controller", "mpijob-controller", "mxjob-controller")
    tf3 = {"chief": 1, "ps": 1, "worker": 2}
    mx4 = {"scheduler": 1, "server": 1, "worker": 2}
    return [
        Case("pytorch single node", job("PyTorchJob", "pt", Master=1),
             {"pt-master-0": {"labels": labels(pt, "pt", "master", 0, master=True), "env": pt_env("pt", 0, 1)}},
             {"pt-master-0": [("pytorchjob-port", 23456)]}, ["pt-master-0"], {"pt-master-0": "Succeeded"},
             succeeded_conditions("PyTorchJob"), {"Master": {"succeeded": 1, "selector": sel(pt, "pt", "master")}}),
        Case("pytorch master and two workers", job("PyTorchJob", "pt", Master=1, Worker=2),
             {"pt-master-0": {"labels": labels(pt, "pt", "master", 0, master=True), "env": pt_env("pt", 0, 3)},
              "pt-worker-0": {"labels": labels(pt, "pt", "worker", 0), "env": pt_env("pt", 1, 3)},
              "pt-worker-1": {"labels": labels(pt, "pt", "worker", 1), "env": pt_env("pt", 2, 3)}},
             {f"pt-{n}": [("pytorchjob-port", 23456)] for n in ("master-0", "worker-0", "worker-1")},
             ["pt-master-0", "pt-worker-0", "pt-worker-1"],
             {"pt-worker-0": "Succeeded", "pt-worker-1": "Succeeded", "pt-master-0": "Succeeded"},
             succeeded_conditions("PyTorchJob"),
             {"Master": {"succeeded": 1, "selector": sel(pt, "pt", "master")},
              "Worker": {"succeeded": 2, "selector": sel(pt, "pt", "worker")}}),
        Case("pytorch worker fails with restartPolicy Never", job("PyTorchJob", "pt", Master=1, Worker=1, restart="Never"),
             {"pt-master-0": {"labels": labels(pt, "pt", "master", 0, master=True), "env": pt_env("pt", 0, 2)},
              "pt-worker-0": {"labels": labels(pt, "pt", "worker", 0), "env": pt_env("pt", 1, 2)}},
             {f"pt-{n}": [("pytorchjob-port", 23456)] for n in ("master-0", "worker-0")},
             ["pt-master-0", "pt-worker-0"], {"pt-worker-0": "Failed"},
             [created("PyTorchJob"), ("Running", "False", "PyTorchJobRunning"), ("Failed", "True", "PyTorchJobFailed")],
             {"Master": {"active": 1, "selector": sel(pt, "pt", "master")},
              "Worker": {"failed": 1, "selector": sel(pt, "pt", "worker")}},
             final="Failed", message="PyTorchJob pt is failed because 1 Worker replica(s) failed."),
        Case("tensorflow single worker has no TF_CONFIG", job("TFJob", "tf", Worker=1),
             {"tf-worker-0": {"labels": labels(tfo, "tf", "worker", 0, master=True), "env": []}},
             {"tf-worker-0": [("tfjob-port", 2222)]}, ["tf-worker-0"], {"tf-worker-0": "Succeeded"},
             succeeded_conditions("TFJob"), {"Worker": {"succeeded": 1}}),
        Case("tensorflow chief, parameter server and two workers", job("TFJob", "tf", Chief=1, PS=1, Worker=2),
             {"tf-chief-0": {"labels": labels(tfo, "tf", "chief", 0, master=True),
                             "env": [("TF_CONFIG", tf_cfg(ns, tf3, "chief", 0))]},
              "tf-ps-0": {"labels": labels(tfo, "tf", "ps", 0), "env": [("TF_CONFIG", tf_cfg(ns, tf3, "ps", 0))]},
              "tf-worker-0": {"labels": labels(tfo, "tf", "worker", 0), "env": [("TF_CONFIG", tf_cfg(ns, tf3, "worker", 0))]},
              "tf-worker-1": {"labels": labels(tfo, "tf", "worker", 1), "env": [("TF_CONFIG", tf_cfg(ns, tf3, "worker", 1))]}},
             {f"tf-{n}": [("tfjob-port", 2222)] for n in ("chief-0", "ps-0", "worker-0", "worker-1")},
             ["tf-chief-0", "tf-ps-0", "tf-worker-0", "tf-worker-1"], {"tf-chief-0": "Succeeded"},
             succeeded_conditions("TFJob"),
             {"Chief": {"succeeded": 1}, "PS": {"succeeded": 1}, "Worker": {"succeeded": 2}}),
        Case("tensorflow worker fails", job("TFJob", "tf", Worker=2),
             {"tf-worker-0": {"labels": labels(tfo, "tf", "worker", 0, master=True),
                              "env": [("TF_CONFIG", tf_cfg(ns, {"worker": 2}, "worker", 0))]},
              "tf-worker-1": {"labels": labels(tfo, "tf", "worker", 1),
                              "env": [("TF_CONFIG", tf_cfg(ns, {"worker": 2}, "worker", 1))]}},
             {f"tf-{n}": [("tfjob-port", 2222)] for n in ("worker-0", "worker-1")},
             ["tf-worker-0", "tf-worker-1"], {"tf-worker-1": "Failed"},
             [created("TFJob"), ("Running", "False", "TFJobRunning"), ("Failed", "True", "TFJobFailed")],
             {"Worker": {"active": 1, "failed": 1}}, final="Failed",
             message=f"TFJob {ns}/tf has failed because 1 Worker replica(s) failed."),
        Case("xgboost single master", job("XGBoostJob", "xgb", Master=1),
             {"xgb-master-0": {"labels": labels(xg, "xgb", "master", 0, master=True), "env": xgb_env(0, 1)}},
             {"xgb-master-0": [("xgboostjob-port", 9999)]}, ["xgb-master-0"], {"xgb-master-0": "Succeeded"},
             succeeded_conditions("XGBoostJob"), {"Master": {"succeeded": 1}}),
        Case("xgboost master and two workers", job("XGBoostJob", "xgb", Master=1, Worker=2),
             {"xgb-master-0": {"labels": labels(xg, "xgb", "master", 0, master=True), "env": xgb_env(0, 3)},
              "xgb-worker-0": {"labels": labels(xg, "xgb", "worker", 0), "env": xgb_env(1, 3)},
              "xgb-worker-1": {"labels": labels(xg, "xgb", "worker", 1), "env": xgb_env(2, 3)}},
             {f"xgb-{n}": [("xgboostjob-port", 9999)] for n in ("master-0", "worker-0", "worker-1")},
             ["xgb-master-0", "xgb-worker-0", "xgb-worker-1"],
             {"xgb-worker-0": "Succeeded", "xgb-worker-1": "Succeeded", "xgb-master-0": "Succeeded"},
             succeeded_conditions("XGBoostJob"), {"Master": {"succeeded": 1}, "Worker": {"succeeded": 2}}),
        Case("xgboost worker fails", job("XGBoostJob", "xgb", Master=1, Worker=1),
             {"xgb-master-0": {"labels": labels(xg, "xgb", "master", 0, master=True), "env": xgb_env(0, 2)},
              "xgb-worker-0": {"labels": labels(xg, "xgb", "worker", 0), "env": xgb_env(1, 2)}},
             {f"xgb-{n}": [("xgboostjob-port", 9999)] for n in ("master-0", "worker-0")},
             ["xgb-master-0", "xgb-worker-0"], {"xgb-worker-0": "Failed"},
             [created("XGBoostJob"), ("Running", "False", "XGBoostJobRunning"), ("Failed", "True", "XGBoostJobFailed")],
             {"Master": {"active": 1}, "Worker": {"failed": 1}}, final="Failed",
             message="XGBoostJob xgb is failed because 1 Worker replica(s) failed."),
        Case("paddle single worker", job("PaddleJob", "pd", Worker=1),
             {"pd-worker-0": {"labels": labels(pdo, "pd", "worker", 0), "env": pd_env(0, 1)}},
             {"pd-worker-0": [("master", 36543)]}, ["pd-worker-0"], {"pd-worker-0": "Succeeded"},
             [created("PaddleJob"), ("Running", "False", "PaddleJobRunning"), ("Succeeded", "True", "PaddleJobSucceeded")],
             {"Worker": {"succeeded": 1, "selector": sel(pdo, "pd", "worker")}}),
        Case("paddle three collective workers", job("PaddleJob", "pd", Worker=3),
             {f"pd-worker-{i}": {"labels": labels(pdo, "pd", "worker", i), "env": pd_env(i, 3)} for i in range(3)},
             {f"pd-worker-{i}": [("master", 36543)] for i in range(3)},
             [f"pd-worker-{i}" for i in range(3)], {f"pd-worker-{i}": "Succeeded" for i in range(3)},
             succeeded_conditions("PaddleJob"), {"Worker": {"succeeded": 3, "selector": sel(pdo, "pd", "worker")}}),
        Case("paddle worker fails with restartPolicy Never", job("PaddleJob", "pd", Worker=2, restart="Never"),
             {f"pd-worker-{i}": {"labels": labels(pdo, "pd", "worker", i), "env": pd_env(i, 2)} for i in range(2)},
             {f"pd-worker-{i}": [("master", 36543)] for i in range(2)},
             ["pd-worker-0", "pd-worker-1"], {"pd-worker-1": "Failed"},
             [created("PaddleJob"), ("Running", "False", "PaddleJobRunning"), ("Failed", "True", "PaddleJobFailed")],
             {"Worker": {"active": 1, "failed": 1, "selector": sel(pdo, "pd", "worker")}}, final="Failed",
             message="PaddleJob pd is failed because 1 Worker replica(s) failed."),
        Case("jax single worker", job("JAXJob", "jx", Worker=1),
             {"jx-worker-0": {"labels": labels(jx, "jx", "worker", 0, master=True), "env": jax_env(0, 1)}},
             {"jx-worker-0": [("jaxjob-port", 6666)]}, ["jx-worker-0"], {"jx-worker-0": "Succeeded"},
             succeeded_conditions("JAXJob"), {"Worker": {"succeeded": 1, "selector": sel(jx, "jx", "worker")}}),
        Case("jax three workers", job("JAXJob", "jx", Worker=3),
             {f"jx-worker-{i}": {"labels": labels(jx, "jx", "worker", i, master=i == 0), "env": jax_env(i, 3)} for i in range(3)},
             {f"jx-worker-{i}": [("jaxjob-port", 6666)] for i in range(3)},
             [f"jx-worker-{i}" for i in range(3)], {f"jx-worker-{i}": "Succeeded" for i in range(3)},
             succeeded_conditions("JAXJob"), {"Worker": {"succeeded": 3, "selector": sel(jx, "jx", "worker")}}),
        Case("jax worker fails", job("JAXJob", "jx", Worker=2),
             {f"jx-worker-{i}": {"labels": labels(jx, "jx", "worker", i, master=i == 0), "env": jax_env(i, 2)} for i in range(2)},
             {f"jx-worker-{i}": [("jaxjob-port", 6666)] for i in range(2)},
             ["jx-worker-0", "jx-worker-1"], {"jx-worker-0": "Failed"},
             [created("JAXJob"), ("Running", "False", "JAXJobRunning"), ("Failed", "True", "JAXJobFailed")],
             {"Worker": {"active": 1, "failed": 1, "selector": sel(jx, "jx", "worker")}}, final="Failed",
             message="JAXJob jx is failed because 1 Worker replica(s) failed."),
        Case("mxnet single worker", job("MXJob", "mx", Worker=1),
             {"mx-worker-0": {"labels": labels(mx, "mx", "worker", 0), "env": mx_env({"worker": 1}, "worker", 0)}},
             {"mx-worker-0": [("mxjob-port", 9091)]}, ["mx-worker-0"], {"mx-worker-0": "Succeeded"},
             succeeded_conditions("MXJob"), {"Worker": {"succeeded": 1}}),
        Case("mxnet scheduler, server and two workers", job("MXJob", "mx", Scheduler=1, Server=1, Worker=2),
             {"mx-scheduler-0": {"labels": labels(mx, "mx", "scheduler", 0), "env": mx_env(mx4, "scheduler", 0)},
              "mx-server-0": {"labels": labels(mx, "mx", "server", 0, master=True), "env": mx_env(mx4, "server", 0)},
              "mx-worker-0": {"labels": labels(mx, "mx", "worker", 0), "env": mx_env(mx4, "worker", 0)},
              "mx-worker-1": {"labels": labels(mx, "mx", "worker", 1), "env": mx_env(mx4, "worker", 1)}},
             {f"mx-{n}": [("mxjob-port", 9091)] for n in ("scheduler-0", "server-0", "worker-0", "worker-1")},
             ["mx-scheduler-0", "mx-server-0", "mx-worker-0", "mx-worker-1"], {"mx-scheduler-0": "Succeeded"},
             succeeded_conditions("MXJob"), {"Scheduler": {"succeeded": 1}, "Server": {"succeeded": 1}, "Worker": {"succeeded": 2}}),
        Case("mxnet worker fails", job("MXJob", "mx", Scheduler=1, Worker=1),
             {"mx-scheduler-0": {"labels": labels(mx, "mx", "scheduler", 0),
                                 "env": mx_env({"scheduler": 1, "worker": 1}, "scheduler", 0)},
              "mx-worker-0": {"labels": labels(mx, "mx", "worker", 0), "env": mx_env({"scheduler": 1, "worker": 1}, "worker", 0)}},
             {f"mx-{n}": [("mxjob-port", 9091)] for n in ("scheduler-0", "worker-0")},
             ["mx-scheduler-0", "mx-worker-0"], {"mx-worker-0": "Failed"},
             [created("MXJob"), ("Running", "False", "MXJobRunning"), ("Failed", "True", "MXJobFailed")],
             {"Scheduler": {"active": 1}, "Worker": {"failed": 1}}, final="Failed",
             message="mxjob mx is failed because 1 Worker replica(s) failed."),
    ]


CASE_IDS = [c.id for c in cases("ns")]


@pytest.mark.parametrize("index", range(len(CASE_IDS)), ids=CASE_IDS)
def test_job_lifecycle(cluster, manager, index: int) -> None:
    case = cases(cluster.namespace)[index]
    kind, name = case.job["kind"], case.job["metadata"]["name"]
    applied = cluster.apply(case.job)
    pods = cluster.wait_pods(set(case.pods))
    for pod_name, want in case.pods.items():
        pod = pods[pod_name]
        assert pod["metadata"]["labels"] == want["labels"], pod_name
        main = pod["spec"]["containers"][0]
        assert env_pairs(main, case.json_env) == want["env"], pod_name
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "kubeflow.org/v1", "kind": kind, "name": name, "uid": applied["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    # services are created after the pods in the same pass: wait for them, don't race
    services = wait_for(
        lambda: (lambda found: found if set(found) == set(case.services) else None)(cluster.objects(SERVICES)),
        what=f"services {sorted(case.services)}",
    )
    for svc_name, ports in case.services.items():
        svc = services[svc_name]
        assert svc["spec"]["clusterIP"] == "None"
        assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == ports
        expected_labels = {k: v for k, v in case.pods[svc_name]["labels"].items() if k != ROLE}
        assert svc["metadata"]["labels"] == expected_labels
        assert svc["spec"]["selector"] == expected_labels
        assert svc["metadata"]["ownerReferences"][0]["uid"] == applied["metadata"]["uid"]
    first = cluster.wait_condition(kind, name, "Created")
    assert first["status"]["conditions"][0]["message"] == f"{kind} {name} is created."

    cluster.run_all(*case.run)
    cluster.wait_condition(kind, name, "Running")
    for pod_name, phase in case.finish.items():
        cluster.set_phase(pod_name, phase, exit_code=case.exit_code)
    done = cluster.wait_condition(kind, name, case.final)
    if case.final == "Succeeded":
        done = _settled(cluster, kind, name, case)
    assert [(c["type"], c["status"], c["reason"]) for c in done["status"]["conditions"]] == case.conditions
    assert done["status"]["replicaStatuses"] == case.replica_statuses
    assert done["status"]["startTime"] and done["status"]["completionTime"]
    if case.message:
        assert done["status"]["conditions"][-1]["message"] == case.message


def _settled(cluster, kind: str, name: str, case: Case) -> dict[str, Any]:
    """A finished job moves leftover active counts to succeeded on the next pass."""
    from controller_kit import wait_for

    return wait_for(lambda: (lambda j: j if j["status"]["replicaStatuses"] == case.replica_statuses else None)(
        cluster.get_job(kind, name)), what=f"{kind} {name} replicaStatuses {case.replica_statuses}")
