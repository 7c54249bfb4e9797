"""What a World runs: the ``Part`` interface and ``ProcessPart``, a part that is one child process.

Why it is shaped so: every engine the test world starts (kube-scheduler, kwok, the garbage
collector, and the GitOps engines and upstream operator other modules add) is a binary
from ``gobuild`` run against the world's API server on loopback. They differ only in argv,
a readiness probe and what they set up first, so ``ProcessPart`` does the rest once: the
child gets PR_SET_PDEATHSIG (it dies with the Python process, even a SIGKILLed one; see
``controlplane.ManagedProcess``), its own session (Ctrl-C reaches the World, which stops
parts in reverse order), its log in the world's dir, and a start that fails with the log's
tail when the process exits or never turns ready.

A part is anything with ``name``, ``build()`` (find or build its binaries; may take
minutes cold, does nothing warm), ``start(world)`` and ``stop()`` (idempotent, safe after
a failed or no start).
"""

from __future__ import annotations

import os
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from . import gobuild
from .controlplane import LOOPBACK, ManagedProcess, free_port

if TYPE_CHECKING:
    from .world import World

__all__ = ["LOOPBACK", "Part", "PartError", "ProcessPart", "component_flags", "free_port", "http_ok"]


class PartError(RuntimeError):
    """A part could not be built or started; the message says which and why."""


class Part(Protocol):
    name: str

    def build(self) -> None: ...

    def start(self, world: World) -> None: ...

    def stop(self) -> None: ...


def build_rows(part: str, builds: tuple[gobuild.Build | str, ...]) -> None:
    """Build (or find) every row a part needs; a failure names the part."""
    for entry in builds:
        try:
            gobuild.build(entry)
        except gobuild.BuildError as err:
            raise PartError(f"{part}: {err}") from err


def http_ok(url: str, timeout: float = 2.0) -> bool:
    """GET ``url`` (https without verification: a probe of our own loopback child)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ctx))
    try:
        with opener.open(url, timeout=timeout) as resp:
            return 200 <= int(resp.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def component_flags(world: World, port: int) -> list[str]:
    """What a Kubernetes component (kube-scheduler, kube-controller-manager) needs to run
    against a World: its admin kubeconfig as client and for delegated authn/authz, no
    leader election, HTTPS on ``port`` of the loopback only."""
    kubeconfig = str(world.kubeconfig)
    return [
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={port}",
    ]


class ProcessPart:
    """A part that is one child process. Subclasses set ``name`` and ``builds`` (rows of
    ``gobuild.BUILDS``) and implement ``argv(world)`` and ``ready()``; ``before(world)``
    and ``after(world)`` run around the launch (e.g. write a config, create nodes)."""

    name = "process"
    builds: tuple[str, ...] = ()
    start_timeout = 90.0
    stop_timeout = 10.0

    def __init__(self) -> None:
        self.proc: ManagedProcess | None = None
        self.log_path: Path | None = None

    def build(self) -> None:
        build_rows(self.name, self.builds)

    def binary(self, entry: str, exe: str | None = None) -> str:
        try:
            return str(gobuild.binary(entry, exe))
        except gobuild.BuildError as err:
            raise PartError(f"{self.name}: {err}") from err

    def argv(self, world: World) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        return True

    def env(self, world: World) -> dict[str, str] | None:
        """Extra environment for the child (None: inherit ours)."""
        return None

    def before(self, world: World) -> None:
        """Runs before the launch."""

    def after(self, world: World) -> None:
        """Runs once the process is ready."""

    def start(self, world: World) -> None:
        self.before(world)
        self.log_path = world.dir / f"{self.name}.log"
        self.proc = ManagedProcess(self.name, self.argv(world), self.log_path, world.dir, env=self.env(world))
        self.proc.start()
        self.wait(self.ready, f"{self.name} ready")
        self.after(world)

    def wait(self, check: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        """Poll ``check`` until true; fail early with the log's tail if the process exits."""
        deadline = time.monotonic() + (timeout or self.start_timeout)
        delay = 0.05
        while not check():
            code = self.proc.exited() if self.proc else None
            if code is not None:
                raise PartError(f"{self.name} exited with code {code} before {what}; last log lines:\n"
                                f"{self.proc.tail() if self.proc else ''}\nsee {self.log_path}")
            if time.monotonic() > deadline:
                tail = self.proc.tail() if self.proc else ""
                raise PartError(f"{self.name}: no {what} within {timeout or self.start_timeout:.0f}s; "
                                f"last log lines:\n{tail}\nsee {self.log_path}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def stats(self) -> tuple[float, float]:
        """(user + system CPU seconds, resident MB) of the running process, from /proc."""
        pid = self.proc.pid if self.proc else None
        if pid is None:
            raise PartError(f"{self.name} is not running")
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            rss = next((int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:")), 0.0)
        return cpu, rss

    def dead(self) -> str | None:
        """A description of the process if it exited on its own, else None."""
        if self.proc is not None and (code := self.proc.exited()) is not None:
            return f"{self.name} exited unexpectedly with code {code}; see {self.log_path}"
        return None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(self.stop_timeout)
