"""Fixtures for the controller tests: an in-process controller per test namespace."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from controller.kube import Client
from controller.manager import Manager
from controller_kit import PODS_FIRST, Cluster, running_manager

logging.getLogger("controller").setLevel(logging.INFO)


@pytest.fixture
def cluster(control_plane, namespace: str) -> Iterator[Cluster]:
    client = Client.connect(str(control_plane.kubeconfig))
    try:
        yield Cluster(client, namespace)
    finally:
        client.close()


@pytest.fixture
def manager(control_plane, namespace: str) -> Iterator[Manager]:
    """The controller, running in this process, watching only the test's namespace.

    In train-controller's default order, --pods-first (controller.burst), unless
    `TRAINFORGE_TEST_UPSTREAM_ORDER=1` (--no-pods-first); `make test` runs this folder in both."""
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=PODS_FIRST) as mgr:
        yield mgr

