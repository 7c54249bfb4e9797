"""The six jobs of issue 48's walk-through, built for real: what `status` must fit on one screen.

A new user synced five spec files (six jobs) to the test world with train-controller and
read `status`: one healthy job, one whose change (`nodes: 2 -> 3`) was synced while it ran
and is held for its next run, one whose image has a typo (the test world's kubelet fails to
pull it), one asking for more GPUs per node than any node has (kube-scheduler says so), one
reading a Secret nobody created (the kubelet's CreateContainerConfigError), and one whose
program failed (exit 1 under restartPolicy Never). The healthy one had an earlier run stuck
on a typo'd image, fixed in git and resumed, so its job carries that run's Warning Events.

`build` makes them with the controller's stuck threshold `STUCK` (status is read with the
same) and returns once each has reached the state the walk-through saw.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from status_kit import apply, cli, project, spec, write

from testworld import stages

STUCK = "2s"  # the controller's --stuck-pod-threshold and status's, in these tests
FOREVER = {stages.RUN_SECONDS: "forever"}


def specs() -> dict[str, list[dict[str, Any]]]:
    """file name -> its specs, as first committed."""
    return {
        "bert.yaml": [spec("bert-finetune", nodes=2, gpu=8, gpu_type="a100", pod=FOREVER)],
        "t5.yaml": [spec("t5-finetune", image="ghcr.io/acme/t5:typo", pod=FOREVER)],
        "llama.yaml": [spec("llama-pretrain", nodes=2, gpu=16, pod=FOREVER)],
        "tokens.yaml": [spec("tokenize", pod=FOREVER, extra={"env": {"HF_TOKEN": {"secret": "hf-token", "key": "token"}}}),
                        spec("eval-nightly", restart="Never", pod={stages.RUN_SECONDS: "1", stages.EXIT_CODE: "1"})],
        "resnet.yaml": [spec("resnet", image="ghcr.io/acme/resnet:typo", pod=FOREVER)],
    }


def build(world: Any, root: Path, namespace: str) -> Path:
    """The six jobs in `namespace`, from a repository under `root`; their specs' folder.
    train-controller must run for `namespace` with --stuck-pod-threshold=STUCK."""
    jobs = project(root, namespace)
    first = specs()
    for name, docs in first.items():
        write(jobs, name, *docs)
    apply(world, jobs)
    running = _until(world, jobs, lambda doc: _state(doc, "bert-finetune") == "Running"
                     and _state(doc, "eval-nightly") == "Failed" and _stuck_said(doc, "resnet")
                     and {"ImagePullBackOff", "CreateContainerConfigError", "Unschedulable"} <= _reasons(doc),
                     "the first sync")
    assert running
    # the user fixes resnet's typo in git and restarts it (suspend, then resume), and grows bert
    write(jobs, "resnet.yaml", spec("resnet", image="ghcr.io/acme/resnet:1.0", pod=FOREVER,
                                    extra={"policy": {"restart": "OnFailure", "backoffLimit": 0, "suspend": True}}))
    apply(world, jobs)
    _until(world, jobs, lambda doc: _state(doc, "resnet") == "Suspended", "resnet suspended")
    write(jobs, "resnet.yaml", spec("resnet", image="ghcr.io/acme/resnet:1.0", pod=FOREVER))
    write(jobs, "bert.yaml", spec("bert-finetune", nodes=3, gpu=8, gpu_type="a100", pod=FOREVER))
    apply(world, jobs)
    _until(world, jobs, lambda doc: _state(doc, "resnet") == "Running"
           and any(e["reason"] == "PyTorchJobSpecChangeHeld" for e in _job(doc, "bert-finetune")["events"]),
           "resnet running again and bert's change held")
    return jobs


def _until(world: Any, jobs: Path, check: Any, what: str, timeout: float = 180) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        outcome = cli(world, "status", jobs, "--format", "json", "--stuck-pod-threshold", STUCK)
        if check(outcome.json):
            return outcome.json
        assert time.monotonic() < deadline, f"{what}: {outcome.stdout}"
        time.sleep(0.5)


def _job(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(j for j in doc["jobs"] if j["name"] == name)


def _state(doc: dict[str, Any], name: str) -> str:
    return str(_job(doc, name)["state"])


def _reasons(doc: dict[str, Any]) -> set[str]:
    return {w["reason"] for j in doc["jobs"] for w in j.get("waiting", [])}


def _stuck_said(doc: dict[str, Any], name: str) -> bool:
    return any(e["reason"] == "PyTorchJobPodStuck" for e in _job(doc, name).get("events", []))
