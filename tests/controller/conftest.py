"""Fixtures for the controller tests: an in-process controller per test namespace."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from controller_kit import PODS_FIRST, Cluster, running_manager

from controller.manager import Manager
from foundation.cluster.kube import Client

logging.getLogger("controller").setLevel(logging.INFO)

# Managers built in this process, counted so a test that starts one unmarked is caught (below).
_BUILT = [0]
_manager_init = Manager.__init__


def _counting_init(self: Manager, *args, **kwargs) -> None:
    _BUILT[0] += 1
    _manager_init(self, *args, **kwargs)


Manager.__init__ = _counting_init  # type: ignore[method-assign]


def _in_both_orders(item: pytest.Item) -> bool:
    """Whether the test's outcome can depend on train-controller's order (--pods-first or
    upstream's): it starts the controller, through the `manager` fixture or, marked
    `both_orders`, any other way."""
    return "manager" in getattr(item, "fixturenames", ()) or item.get_closest_marker("both_orders") is not None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In upstream's order (`TRAINFORGE_TEST_UPSTREAM_ORDER=1`, make test's second pass) only
    the tests that start the controller run again: the pure functions and the client, queue
    and CLI tests cannot change with the order."""
    if PODS_FIRST:
        return
    dropped = [item for item in items if not _in_both_orders(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if _in_both_orders(item)]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    item.stash[_BUILT_BEFORE] = _BUILT[0]
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A test that built a Manager but is not selected for upstream's order fails: the second
    pass would silently leave it out."""
    outcome = yield
    report = outcome.get_result()
    built = _BUILT[0] > item.stash.get(_BUILT_BEFORE, _BUILT[0])
    if report.when == "call" and report.passed and built and not _in_both_orders(item):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} starts train-controller but is not marked both_orders: mark it "
                           "(pytestmark = pytest.mark.both_orders) so make test also runs it in upstream's order")


_BUILT_BEFORE = pytest.StashKey[int]()


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

    In train-controller's default order, --pods-first (controller.runtime.burst), unless
    `TRAINFORGE_TEST_UPSTREAM_ORDER=1` (--no-pods-first); `make test` runs this folder in both."""
    with running_manager(str(control_plane.kubeconfig), namespace, pool_size=48, pods_first=PODS_FIRST) as mgr:
        yield mgr

