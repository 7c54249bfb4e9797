"""One World for the whole parity run: control plane, garbage collector, kube-scheduler,
kwok, the upstream operator (v1.9.4, and v1.8.1 for MXJob) and train-controller, each
operator watching a namespace of its own. Every case runs once, all at once, in the
session fixture `parity`; the tests then judge each case's result."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from testworld.controlplane import env_true

if TYPE_CHECKING:
    from parity_runner import Result

    from testworld.world import World

WORKERS = 4  # train-controller's default --workers; the upstream operator gets as many threads
QPS = ("--kube-api-qps=1000", "--kube-api-burst=2000")
LOGS = Path(tempfile.gettempdir()) / "trainforge-parity-logs"
# TRAINFORGE_TEST_UPSTREAM_ORDER=1 runs ours in upstream's order, as it does for tests/controller
ORDER = ("--no-pods-first",) if os.environ.get("TRAINFORGE_TEST_UPSTREAM_ORDER") == "1" else ()
# upstream's init containers (no securityContext), so the pods compare like with like: our
# default differs from them only in that securityContext, which tests/controller/
# test_restricted_pods.py holds (the difference is the one INIT_SECURITY_CONTEXT fact)
INIT = ("--upstream-init-containers",)


@dataclass
class Namespaces:
    """A part that creates the three namespaces before the operators start."""
    names: tuple[str, ...]
    name: str = "namespaces"

    def build(self) -> None:
        pass

    def start(self, world: World) -> None:
        for ns in self.names:
            world.kubectl("create", "namespace", ns)

    def stop(self) -> None:
        pass


@pytest.fixture(scope="session")
def parity_world() -> Iterator[tuple[World, object]]:
    if env_true("USE_EXISTING_CLUSTER"):
        pytest.skip("the parity test runs both operators in a world of its own")
    from parity_harness import Sides

    from testworld import upstream
    from testworld.kwok import POD_WORLD_NODES, Kwok, NodePool
    from testworld.train_controller import TrainController
    from testworld.world import World, WorldError

    # both sides' pods share the nodes: room for all of them twice over, so neither waits
    NODES = [NodePool(p.prefix, p.count * 6, cpu=p.cpu, memory=p.memory, pods=p.pods, gpus=p.gpus,
                      gpu_resource=p.gpu_resource, labels=p.labels, taints=p.taints) for p in POD_WORLD_NODES]
    sides = Sides(up="parity-upstream", up_mx="parity-upstream-mx", ours="parity-ours")
    # config_refs=False: the examples read Secrets and ConfigMaps nobody makes here; both sides' pods run
    world = World(["gc", "scheduler", Kwok(nodes=NODES, config_refs=False), Namespaces((sides.up, sides.up_mx, sides.ours)),
                   # its client's default 20 requests/s would make it minutes late on ~60 jobs
                   upstream.Operator(sides.up, version=upstream.PRIMARY, threads=WORKERS, extra_args=QPS),
                   upstream.Operator(sides.up_mx, version=upstream.MXJOB, threads=WORKERS),
                   TrainController(sides.ours, workers=WORKERS, extra_args=ORDER + INIT)])
    try:
        world.start()
    except WorldError as err:
        if env_true("TRAINFORGE_SKIP_CONTROLPLANE"):
            pytest.skip(f"TRAINFORGE_SKIP_CONTROLPLANE=1 and the parity world is unavailable: {err}")
        pytest.fail(f"the parity world did not start: {err}", pytrace=False)
    try:
        yield world, sides
    finally:
        shutil.rmtree(LOGS, ignore_errors=True)  # every part's log of the last run, for a failing case
        shutil.copytree(world.dir, LOGS, ignore=lambda d, names: [n for n in names if not n.endswith(".log")])
        world.stop()


@pytest.fixture(scope="session")
def parity(parity_world, request: pytest.FixtureRequest) -> dict[str, Result]:
    """Every case's result, from one concurrent run of all of them (of those selected, e.g.
    with `-k terminate`, unless the test that every known deviation is still seen runs)."""
    from parity_cases import all_cases
    from parity_deviations import explain
    from parity_harness import Harness
    from parity_runner import REPORT, Runner, report

    from foundation.cluster.kube import Client

    world, sides = parity_world
    client = Client.connect(str(world.kubeconfig), pool_size=32)  # one thread per case
    harness = Harness(client, sides)
    try:
        cases = all_cases()
        items = request.session.items
        if not any(item.name == "test_every_known_deviation_is_still_seen" for item in items):
            chosen = {item.callspec.params.get("case_id") for item in items if hasattr(item, "callspec")}
            cases = [c for c in cases if c.id in chosen]
        results = Runner(harness, explain).run_all(cases)
    finally:
        harness.stop()
        client.close()
    REPORT.write_text(report(results, explain))
    problem = world.dead()
    if problem:
        pytest.fail(f"a part of the parity world died during the run: {problem}", pytrace=False)
    return results
