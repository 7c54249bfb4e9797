"""Paths and small readers for the GitOps end-to-end scenarios (jobs by engine, waits on jobs)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from foundation.frameworks import BY_KIND
from controller.jobs.kinds import KINDS, job_resource
from testworld import gitops
from testworld.watching import Missing, wait_for
from testworld.world import World, WorldError

REPO_ROOT = Path(__file__).resolve().parents[2]
# Every example except kitchen-sink (suspended until Kueue admits it, on a claim and a
# PriorityClass no cluster here has: it can never finish), plus the scenario jobs.
EXAMPLES = sorted(p for p in (REPO_ROOT / "examples").glob("*.yaml") if p.stem != "kitchen-sink")
JOBS = Path(__file__).with_name("jobs")
MAIN = [*EXAMPLES, JOBS / "gang-rbac.yaml"]
WAITING = "Waiting for the training operator to report status"


@contextmanager
def running(world: World, what: str) -> Iterator[World]:
    """``world`` started for a fixture (a failed start fails the test with the world's
    error), stopped afterwards, its log dir printed."""
    try:
        world.start()
    except WorldError as err:
        pytest.fail(f"{what} did not start: {err}", pytrace=False)
    try:
        yield world
    finally:
        print(f"\n{what} logs: {world.dir}")
        world.stop()


def jobs_in(paths: list[Path]) -> set[tuple[str, str]]:
    """(kind, name) of the job each TrainJob file compiles to."""
    kind_of = {adapter.facts.name: kind for kind, adapter in BY_KIND.items()}
    docs = [yaml.safe_load(p.read_text()) for p in paths]
    return {(kind_of[d["spec"]["framework"]], d["metadata"]["name"]) for d in docs}


def names(paths: list[Path]) -> set[str]:
    return {name for _, name in jobs_in(paths)}


def active(job: dict[str, Any]) -> set[str]:
    """The condition types whose status is "True"."""
    return {c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"}


def get_job(loop: gitops.Loop, kind: str, namespace: str, name: str) -> dict[str, Any]:
    return loop.world.client.get(job_resource(KINDS[kind]), namespace, name)


def wait_jobs(loop: gitops.Loop, engine: str, want: Callable[[dict[str, Any]], bool],
              wanted: set[tuple[str, str]], what: str, timeout: float = 240) -> None:
    """Each (kind, name) job of the engine exists and satisfies ``want`` (a watch per kind)."""
    for kind in sorted({k for k, _ in wanted}):
        names_ = {n for k, n in wanted if k == kind}

        def check(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
            mine = {k[1]: o for k, o in objects.items() if k[0].startswith(f"{engine}-") and k[1] in names_}
            bad = [f"{n}: {sorted(active(o))}" for n, o in mine.items() if not want(o)]
            bad += [f"{n}: missing" for n in sorted(names_ - set(mine))]
            return Missing(", ".join(bad)) if bad else True
        wait_for(loop.world.client, job_resource(KINDS[kind]), check, timeout=timeout, what=f"{engine} {kind}s {what}")


def wait_gone(loop: gitops.Loop, kind: str, namespace: str, name: str, timeout: float = 120) -> None:
    """The job is deleted and so are its pods (the garbage collector follows ownerReferences)."""
    def gone(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        return True if (namespace, name) not in objects else Missing(f"{namespace}/{name} still there")
    wait_for(loop.world.client, job_resource(KINDS[kind]), gone, namespace=namespace, timeout=timeout,
             what=f"{kind} {namespace}/{name} pruned")

    def no_pods(objects: dict[tuple[str, str], dict[str, Any]]) -> Any:
        left = [k[1] for k, p in objects.items()
                if (p["metadata"].get("labels") or {}).get("training.kubeflow.org/job-name") == name]
        return Missing(f"pods left: {left}") if left else True
    from testworld.watching import RESOURCES

    wait_for(loop.world.client, RESOURCES["Pod"], no_pods, namespace=namespace, timeout=timeout,
             what=f"the pods of {namespace}/{name} garbage-collected")


def app_resources(app: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    """name -> the Application's record of each managed resource of ``kind``."""
    return {r["name"]: r for r in (app.get("status") or {}).get("resources") or [] if r.get("kind") == kind}
