"""The cases of the parity test: every upstream example, every compiled example, and a table
of lifecycle scenarios, each a list of objects to apply to both sides plus the pod lifecycle
kwok plays for them.

kwok (testworld) runs a pod for its annotation `testworld.trainforge.dev/run-seconds` and
then ends it with `testworld.trainforge.dev/exit-code`. Every pod template here says
`forever`, and the steps end pods by setting run-seconds 0 and an exit code on the same
pods of both sides, so both operators' pods live the same life. Job names are unique
across cases because all cases share the namespaces (they run at once); a second upstream
example with a name already taken gets `-2`.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controller.jobs.kinds import KINDS
from testworld.pytest_plugin import shared_dir

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = shared_dir() / "reference" / "upstream-examples"
RUN = "testworld.trainforge.dev/run-seconds"
EXIT = "testworld.trainforge.dev/exit-code"
TERMINATE = "testworld.trainforge.dev/terminate-seconds"


@dataclass
class Case:
    id: str
    docs: list[dict[str, Any]]
    job: dict[str, Any] = field(init=False)
    steps: list[tuple[str, Any]] = field(default_factory=list)  # ("patch", body) / ("delete-pod", index) / ...
    finishes: bool = False  # the lifecycle ends in a terminal condition
    note: str = ""          # where v1.8.1 and v1.9.4 differ for this case, and which one we follow

    def __post_init__(self) -> None:
        self.job = next(d for d in self.docs if d["kind"] in KINDS)

    @property
    def kind(self) -> str:
        return str(self.job["kind"])

    @property
    def name(self) -> str:
        return str(self.job["metadata"]["name"])


def replica_specs(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"][KINDS[job["kind"]].facts.replica_specs]


def _unique(docs: list[dict[str, Any]], taken: set[str]) -> None:
    job = next(d for d in docs if d["kind"] in KINDS)
    name = job["metadata"]["name"]
    while name in taken:
        name = f"{job['metadata']['name']}-{sum(1 for t in taken if t.startswith(job['metadata']['name'])) + 1}"
    job["metadata"]["name"] = name
    taken.add(name)


def upstream_examples(taken: set[str]) -> list[Case]:
    cases = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
        _unique(docs, taken)
        cases.append(Case(f"upstream-example/{path.stem}", docs))
    return cases


def compiled_examples(taken: set[str]) -> list[Case]:
    """`train-compile render examples/*.yaml`, one case per job with the objects beside it."""
    train_compile = Path(sys.executable).parent / "train-compile"
    out = subprocess.run([str(train_compile), "render", *map(str, sorted((REPO / "examples").glob("*.yaml")))],
                         cwd=REPO, check=True, capture_output=True, text=True).stdout
    docs = [d for d in yaml.safe_load_all(out) if d and d["kind"] != "Namespace"]
    cases = []
    for job in (d for d in docs if d["kind"] in KINDS):
        ns, name = job["metadata"].get("namespace"), job["metadata"]["name"]
        beside = [d for d in docs if d["kind"] not in KINDS and d["metadata"].get("namespace") == ns
                  and (d["metadata"]["name"] == name or d["metadata"]["name"].startswith(f"{name}-"))]
        group = [job, *beside]
        _unique(group, taken)
        cases.append(Case(f"compiled-example/{ns}/{name}", group))
    return cases


def lifecycle(job: dict[str, Any], run: float | None = None, exit_code: int = 0,
              per: dict[str, tuple[float | None, int]] | None = None) -> dict[str, Any]:
    """`job` with kwok's annotations on every replica template (`per` overrides by type)."""
    job = copy.deepcopy(job)
    for rtype, spec in replica_specs(job).items():
        r, code = (per or {}).get(rtype, (run, exit_code))
        ann = spec.setdefault("template", {}).setdefault("metadata", {}).setdefault("annotations", {})
        if r is not None:
            ann[RUN] = str(r)
            ann[EXIT] = str(code)
    return job


# ---------------------------------------------------------------------------------- scenarios
# Every pod starts with run-seconds `forever`; the steps end pods on both sides alike by
# setting run-seconds 0 and an exit code on them (kwok ends them at once), so each step
# is a point where both operators see exactly the same pods.
FOREVER = "forever"


def _container(name: str) -> dict[str, Any]:
    return {"name": name, "image": "registry.example/train:1", "command": ["python", "train.py"]}


def job(kind: str, name: str, replicas: dict[str, int], *, restart: str | None = None,
        run_policy: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A minimal job of `kind` with `replicas` per type, every pod annotated to run forever."""
    facts = KINDS[kind].facts
    specs = {}
    for rtype, count in replicas.items():
        rs: dict[str, Any] = {"replicas": count, "template": {
            "metadata": {"annotations": {RUN: FOREVER}}, "spec": {"containers": [_container(facts.container)]}}}
        if restart:
            rs["restartPolicy"] = restart
        specs[rtype] = rs
    body: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": name},
                            "spec": {facts.replica_specs: specs, **spec}}
    if kind == "MXJob":
        body["spec"].setdefault("jobMode", "MXTrain")
    if run_policy:
        body["spec"]["runPolicy"] = run_policy
    return body


def terminating(job: dict[str, Any], seconds: float) -> dict[str, Any]:
    """`job` whose deleted pods stay Terminating (still Running) for `seconds`, as a kubelet keeps them."""
    for spec in replica_specs(job).values():
        spec["template"]["metadata"]["annotations"][TERMINATE] = str(seconds)
    return job


TYPO_IMAGE = "registry.example/train:typo"  # the test world's kubelet fails to pull it (testworld.kubelet_rules)


def typo(job: dict[str, Any]) -> dict[str, Any]:
    """`job` whose every container names an image that cannot be pulled."""
    for spec in replica_specs(job).values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = TYPO_IMAGE
    return job


def forever(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`docs` with every job's pod templates annotated to run until a step ends them."""
    out = copy.deepcopy(docs)
    for doc in out:
        if doc["kind"] in KINDS:
            for spec in replica_specs(doc).values():
                meta = spec.setdefault("template", {}).setdefault("metadata", {})
                meta.setdefault("annotations", {})[RUN] = FOREVER
    return out


# Steps: ("running",) all pods Running; ("exit", SELECTOR, CODE) end the selected pods
# ("master", "worker-1", "worker", "all"; CODE may be a comma list); ("suspend", bool);
# ("delete-pod", SELECTOR); ("scale", N); ("gone",) the job deleted (TTL);
# ("past-deadline",) both jobs touched once 2 s past activeDeadlineSeconds;
# ("terminal",) wait for Succeeded/Failed; ("objects",) compare children once quiet;
# ("resume-while-terminating",) suspend the job and resume it while its pods still terminate,
# and play each side to its end (there the sides part: upstream fails the job, ours re-runs it);
# ("edit-while-running",) one more Worker and a new image while it runs, a retryable exit, then
# each side played to its end (there they part too: upstream mixes the two specs, ours does not);
# ("fix-before-start",) the job's pods cannot pull their image; a fixed image and one more Worker
# are synced (there they part: upstream's pods stay stuck beside a new one, ours are created again).
# The pods whose end decides success end last: with cleanPodPolicy Running, a pod ending
# in the same instant as the job would race its cleanup differently on each side.
FINISH = [("exit", "followers", "0"), ("exit", "all", "0")]
SUCCESS = [("running",), *FINISH, ("terminal",), ("objects",)]
DECIDERS = {"PyTorchJob": ("master",), "PaddleJob": ("master",), "XGBoostJob": ("master",),
            "TFJob": ("chief", "master"), "MPIJob": ("launcher",), "MXJob": ("scheduler",), "JAXJob": ()}
PT = {"Master": 1, "Worker": 2}


def scenarios() -> list[Case]:
    rows: list[tuple[str, dict[str, Any], list[tuple[Any, ...]], str]] = [
        ("success", job("PyTorchJob", "sc-success", PT), SUCCESS, ""),
        ("worker exits 1 under Never", job("PyTorchJob", "sc-never-fail", PT, restart="Never"),
         [("running",), ("exit", "worker-1", "1"), ("terminal",), ("objects",)], ""),
        ("ExitCode: 137 restarts, then 1 fails", job("PyTorchJob", "sc-exitcode", PT, restart="ExitCode"),
         [("running",), ("exit", "worker-0", "137"), ("running",), ("exit", "worker-0", "1"), ("terminal",),
          ("objects",)], ""),
        ("backoffLimit reached", job("PyTorchJob", "sc-backoff", PT, restart="OnFailure",
                                     run_policy={"backoffLimit": 2}),
         [("running",), ("exit", "worker-1", "1"), ("terminal",), ("objects",)],
         "v1.9.2 and older delete every pod on a backoff failure; v1.9.4 honours cleanPodPolicy (None here)"),
        # long enough for the running step to settle first (5 s quiet; with the whole table running,
        # the resume-while-terminating case included, 40 s had passed before step 1 in two full-table runs at load ~2)
        ("activeDeadlineSeconds", job("PyTorchJob", "sc-deadline", PT, run_policy={"activeDeadlineSeconds": 120}),
         [("running",), ("past-deadline",), ("terminal",), ("objects",)],
         "v1.9.2 and older delete every pod on a deadline failure; v1.9.4 honours cleanPodPolicy (None here); "
         "v1.9.4 fails the job only at the first event after the deadline (its delayed requeue is a no-op), "
         "so both jobs are touched once past it"),
        ("suspend and resume", job("PyTorchJob", "sc-suspend", PT),
         [("running",), ("suspend", True), ("objects",), ("suspend", False), ("running",), *FINISH,
          ("terminal",)], ""),
        ("created suspended", job("PyTorchJob", "sc-born-suspended", PT, run_policy={"suspend": True}),
         [("objects",), ("suspend", False), ("running",), *FINISH, ("terminal",)], ""),
        # Kueue's preemption, then re-admission while the evicted pods still stop (a kubelet
        # keeps them for their grace period; kwok here for 20 s)
        ("resumed while its pods terminate",
         terminating(job("PyTorchJob", "sc-resume-terminating", PT, restart="Never"), 20),
         [("running",), ("resume-while-terminating",)], ""),
        *[(f"cleanPodPolicy {p}", job("PyTorchJob", f"sc-clean-{p.lower()}", PT, run_policy={"cleanPodPolicy": p}),
           [("running",), ("exit", "master", "0"), ("terminal",), ("objects",)], "") for p in ("All", "Running", "None")],
        ("ttlSecondsAfterFinished", job("PyTorchJob", "sc-ttl", PT, run_policy={"ttlSecondsAfterFinished": 3}),
         [("running",), *FINISH, ("terminal",), ("gone",)], ""),
        # a GitOps sync of one more node and a new image onto a running job, then a retryable exit:
        # there the sides part (upstream mixes two specs among the live pods, ours holds the edit)
        ("nodes and image edited while running", job("PyTorchJob", "sc-edit-running", PT, restart="ExitCode"),
         [("running",), ("edit-while-running",)], ""),
        # the same sync onto a job none of whose containers ever ran (an image that cannot be pulled):
        # ours takes it, as nothing of the run is lost (foundation.runs.started)
        ("a typo'd image fixed before any container ran", typo(job("PyTorchJob", "sc-typo-fixed", PT)),
         [("fix-before-start",)], ""),
        ("pod deleted behind the operator's back", job("PyTorchJob", "sc-pod-deleted", PT),
         [("running",), ("delete-pod", "worker-0"), ("running",), *FINISH, ("terminal",)], ""),
        ("elastic PyTorchJob scaled up and down",
         job("PyTorchJob", "sc-elastic", {"Worker": 2}, elasticPolicy={"minReplicas": 1, "maxReplicas": 4}),
         [("running",), ("scale", 3), ("running",), ("objects",), ("scale", 1), ("objects",), *FINISH,
          ("terminal",)], ""),
    ]
    # the status rules differ per framework: success and a failing worker for every kind
    for kind, reps in (("TFJob", {"Chief": 1, "Worker": 2}), ("XGBoostJob", {"Master": 1, "Worker": 2}),
                       ("PaddleJob", {"Master": 1, "Worker": 2}), ("JAXJob", {"Worker": 2}),
                       ("MPIJob", {"Launcher": 1, "Worker": 2}),
                       ("MXJob", {"Scheduler": 1, "Server": 1, "Worker": 2})):
        short = kind.lower().removesuffix("job")
        rows.append((f"{kind} success", job(kind, f"sc-{short}-success", reps), SUCCESS, ""))
        rows.append((f"{kind} worker exits 1 under Never", job(kind, f"sc-{short}-fail", reps, restart="Never"),
                     [("running",), ("exit", "worker-1", "1"), ("terminal",), ("objects",)], ""))
    out = []
    for title, body, steps, note in rows:
        case = Case(f"scenario/{title}", [body], steps=steps, finishes=True, note=note)
        out.append(case)
    return out


# Where the two releases differ for a kind; v1.9.4 (kubeflow-v1-semantics.md) is the reference.
VERSION_NOTES = {
    "MPIJob": "v1.8.1 defaults the launcher's kubectl-delivery image to kubeflow/kubectl-delivery:latest, "
              "v1.9.4 to ghcr.io/kubeflow/training-v1/kubectl-delivery:latest; compared against v1.9.4",
    "MXJob": "MXJob exists only up to v1.8.1 (v1.9 dropped it); compared against v1.8.1",
    "JAXJob": "JAXJob is new in v1.9; compared against v1.9.4",
}


def all_cases() -> list[Case]:
    taken: set[str] = set()
    examples = upstream_examples(taken) + compiled_examples(taken)
    for case in examples:
        case.docs = forever(case.docs)
        case.__post_init__()
        case.steps = list(SUCCESS)
    cases = examples + scenarios()
    for case in cases:
        case.note = "; ".join(filter(None, [case.note, VERSION_NOTES.get(case.kind, "")]))
    return cases
