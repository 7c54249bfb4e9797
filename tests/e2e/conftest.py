"""The GitOps world for the end-to-end scenarios: one per session, both engines in it.

Starting it costs about a minute (control plane, kube-scheduler, kwok with 14 GPU nodes,
the garbage collector, the git server, Flux, Argo CD with redis, train-controller), so
the scenarios share it and run in file order, each one commit further along the same
repository (the way a team's history grows). Binaries come from the gobuild cache
(`make e2e` builds them first; cold here they would outlast pytest's per-test timeout).
Every engine log is in the world's dir, which a failing run prints.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e_kit import JOBS, MAIN, running

from testworld import gitops



@pytest.fixture(scope="session")
def world() -> Iterator[gitops.World]:
    with running(gitops.make_world(), "the GitOps world") as world:
        yield world


@pytest.fixture(scope="session")
def loop(world, tmp_path_factory) -> gitops.Loop:
    return gitops.Loop(world)


@pytest.fixture(scope="session")
def sources(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """engine -> {"main": TrainJob folder, "waiting": TrainJob folder}, namespaces prefixed."""
    root = tmp_path_factory.mktemp("sources")
    return {engine: {"main": gitops.engine_sources(MAIN, engine, root / engine / "main"),
                     "waiting": gitops.engine_sources([JOBS / "waiting.yaml"], engine, root / engine / "waiting")}
            for engine in gitops.ENGINES}
