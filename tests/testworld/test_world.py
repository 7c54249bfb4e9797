"""World's lifecycle promises: parts start in order and stop in reverse, a part that fails
to start takes the whole world down (no process left behind, the logs kept), and parts
are found by name."""

from __future__ import annotations

import os
from typing import Any

import pytest

from testworld.controlplane import ControlPlane
from testworld.part import PartError, ProcessPart
from testworld.world import PARTS, World, WorldError, make_part


def alive(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie waiting for its reaper is not alive
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


class Exits(ProcessPart):
    """A part whose process exits at once, as a misconfigured engine does."""

    name = "exits"

    def argv(self, world: Any) -> list[str]:
        return ["sh", "-c", "echo 'fatal: bad flag' >&2; exit 3"]

    def ready(self) -> bool:
        return False


class Recorder:
    """A part that only records the calls it gets."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def build(self) -> None:
        self.log.append(f"build {self.name}")

    def start(self, world: World) -> None:
        assert world.kubeconfig.exists()
        self.log.append(f"start {self.name}")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")


def test_parts_start_in_order_and_stop_in_reverse_after_a_build_of_all(envtest_assets):
    calls: list[str] = []
    with World([Recorder("a", calls), Recorder("b", calls)], upstream_crds=False,
               plane=ControlPlane(assets=envtest_assets)) as world:
        assert world.kubectl("get", "namespace", "default", "-o", "name").stdout.strip() == "namespace/default"
    assert calls == ["build a", "build b", "start a", "start b", "stop b", "stop a"]


def test_a_part_that_fails_to_start_stops_the_parts_before_it_and_the_plane(envtest_assets):
    world = World(["scheduler", Exits()], upstream_crds=False, plane=ControlPlane(assets=envtest_assets))
    with pytest.raises(WorldError, match=r"part exits failed to start: exits exited with code 3") as err:
        world.start()
    assert "fatal: bad flag" in str(err.value)
    scheduler = world.part("scheduler")
    assert scheduler.proc is not None and not alive(scheduler.proc.pid)
    assert not alive(world.plane.apiserver_pid) and not alive(world.plane.etcd_pid)
    assert world.plane.dir is not None and not world.plane.dir.exists()
    assert world.failed_logs_dir is not None
    kept = {p.name for p in world.failed_logs_dir.iterdir()}
    assert {"exits.log", "scheduler.log", "kube-apiserver.log"} <= kept


def test_a_part_is_found_by_name_and_an_unknown_name_is_refused():
    assert {"scheduler", "kwok", "gc"} <= set(PARTS)
    assert make_part("kwok").name == "kwok"
    with pytest.raises(WorldError, match=r"unknown part 'kubelet'; known: .*kwok"):
        World(["kubelet"])
    with pytest.raises(WorldError, match="given twice"):
        World(["kwok", "kwok"])


def test_process_part_reports_a_process_that_never_turns_ready(tmp_path):
    class Sleeper(ProcessPart):
        name = "sleeper"
        start_timeout = 0.5

        def argv(self, world: Any) -> list[str]:
            return ["sleep", "30"]

        def ready(self) -> bool:
            return False

    class FakeWorld:
        dir = tmp_path

    part = Sleeper()
    with pytest.raises(PartError, match=r"sleeper: no sleeper ready within 0s|sleeper: no sleeper ready within 1s"):
        part.start(FakeWorld())  # type: ignore[arg-type]
    part.stop()
    assert part.proc is not None and not alive(part.proc.pid)
