"""pytest fixtures for the real control plane (``control_plane``, ``namespace``, ``k8s_client``)
and for test worlds with real parts (``pod_world``, ``pod_namespace``, ``world_factory``).

Why it is shaped so: starting etcd + kube-apiserver and installing the upstream
CRDs costs seconds, so there is ONE control plane per session, and isolation
between tests comes from a fresh namespace each (``namespace``). Nothing is
auto-used; a test opts in by requesting a fixture (tests that do are also given
the ``controlplane`` marker, so ``-m "not controlplane"`` deselects them).

Missing binaries are a FAILURE with the reason, never a silent skip, so CI
cannot go green without exercising the server. ``TRAINFORGE_SKIP_CONTROLPLANE=1``
is the explicit escape hatch: then nothing is built, and the tests skip unless
the binaries are already at hand (``KUBEBUILDER_ASSETS`` or the cache).

Worlds (``testworld.world.World``) have control planes of their own, never the session
one, because the controller tests on the session plane write pod status by hand:

* ``pod_world`` (session): kube-controller-manager's garbage collector and namespace
  controller, kube-scheduler, and kwok with ``kwok.POD_WORLD_NODES`` (GPU nodes labelled
  as the examples select them); upstream CRDs installed. Pods run, exit and restart as
  the annotations in ``testworld.stages`` say, wait as a kubelet makes them wait for an
  image that does not exist or a Secret or ConfigMap that does not (``testworld.kubelet``),
  and have a log. Share it; isolate with ``pod_namespace``.
* ``pod_namespace``: a fresh namespace in ``pod_world``, deleted (for real) afterwards.
* ``world_factory``: ``world_factory(["scheduler", Kwok(nodes=...)], crds=...)`` starts a
  World of the test's own, stopped when the test ends.
"""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from . import gobuild
from .assets import Assets, AssetsError, find_assets
from .controlplane import ControlPlane, ControlPlaneError, KubectlError, env_true
from .paths import UPSTREAM_CRD_DIRS, shared_dir, upstream_crd_dirs
from .world import World, WorldError

__all__ = ["UPSTREAM_CRD_DIRS", "shared_dir", "upstream_crd_dirs"]  # re-exported: tests import them from here

# and the module worlds of tests/e2e and tests/parity, named ``world`` and ``parity_world`` there
_FIXTURES = {"control_plane", "namespace", "k8s_client", "envtest_assets", "pod_world", "pod_namespace",
             "world_factory", "world", "parity_world"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("controlplane") is None:
            item.add_marker(pytest.mark.controlplane)


def _unavailable(what: str, err: BaseException) -> NoReturn:
    if env_true("TRAINFORGE_SKIP_CONTROLPLANE"):
        pytest.skip(f"TRAINFORGE_SKIP_CONTROLPLANE=1 and {what} unavailable: {err}")
    pytest.fail(f"{what} unavailable: {err}", pytrace=False)


@pytest.fixture(scope="session")
def envtest_assets() -> Assets:
    """Paths of kube-apiserver/etcd/kubectl, built on first use (fails, never skips,
    unless TRAINFORGE_SKIP_CONTROLPLANE=1). For tests that start their own ControlPlane."""
    try:
        return find_assets(build=not env_true("TRAINFORGE_SKIP_CONTROLPLANE"))
    except AssetsError as err:
        _unavailable("control plane binaries", err)


@pytest.fixture(scope="session")
def control_plane(request: pytest.FixtureRequest) -> Iterator[ControlPlane]:
    """One etcd + kube-apiserver per session with the upstream CRDs installed."""
    if env_true("USE_EXISTING_CLUSTER"):
        plane = ControlPlane(use_existing=True)
    else:
        plane = ControlPlane(assets=request.getfixturevalue("envtest_assets"))
    try:
        plane.start()
    except (AssetsError, ControlPlaneError, OSError) as err:
        _unavailable("test control plane", err)
    try:
        crd_dirs = upstream_crd_dirs(Path(str(request.config.rootpath)))
        missing = [str(d) for d in crd_dirs if not d.is_dir()]
        if missing:
            pytest.fail(f"upstream CRD dirs missing: {missing} (set TRAINFORGE_SHARED)", pytrace=False)
        plane.install_crds(crd_dirs)
    except BaseException:
        plane.stop()
        raise
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def k8s_client(control_plane: ControlPlane) -> Iterator[Any]:
    """An admin ``kubernetes.client.ApiClient`` for the session control plane."""
    client = control_plane.api_client()
    try:
        yield client
    finally:
        client.close()


def _slug(text: str, limit: int) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].strip("-") or "test"


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test (deleted after; with no namespace controller it
    only turns Terminating, which still blocks new objects in it)."""
    name = f"t-{_slug(request.node.name, 45)}-{uuid.uuid4().hex[:6]}"
    control_plane.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        try:
            control_plane.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", timeout=30)
        except (KubectlError, subprocess.TimeoutExpired):
            pass  # e.g. a fault test left the API server down; the session stop cleans all


def _start_world(world: World) -> World:
    if env_true("TRAINFORGE_SKIP_CONTROLPLANE"):  # the escape hatch: build nothing, skip what is missing
        missing = [b for part in world.parts.values() for b in getattr(part, "builds", ()) if gobuild.find(b) is None]
        if missing:
            pytest.skip(f"TRAINFORGE_SKIP_CONTROLPLANE=1 and not built: {', '.join(missing)}")
    try:
        return world.start()
    except WorldError as err:
        _unavailable("test world", err)


@pytest.fixture(scope="session")
def pod_world(envtest_assets: Assets) -> Iterator[World]:
    """One World per session with gc, scheduler and kwok (GPU nodes): pods really run."""
    world = _start_world(World(["gc", "scheduler", "kwok"], plane=ControlPlane(assets=envtest_assets)))
    try:
        yield world
    finally:
        world.stop()


@pytest.fixture
def pod_namespace(pod_world: World, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace in ``pod_world``; its deletion is real (the namespace controller runs)."""
    name = f"w-{_slug(request.node.name, 45)}-{uuid.uuid4().hex[:6]}"
    pod_world.kubectl("create", "namespace", name)
    try:
        yield name
    finally:
        pod_world.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False, timeout=30)


@pytest.fixture
def world_factory(envtest_assets: Assets) -> Iterator[Callable[..., World]]:
    """Start Worlds of the test's own: ``world_factory(parts, **World kwargs)``; all stopped at teardown."""
    worlds: list[World] = []

    def make(parts: Iterable[Any] = (), **kwargs: Any) -> World:
        kwargs.setdefault("plane", ControlPlane(assets=envtest_assets))
        world = World(parts, **kwargs)
        worlds.append(world)
        return _start_world(world)

    try:
        yield make
    finally:
        for world in reversed(worlds):
            world.stop()
