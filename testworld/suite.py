"""``python -m testworld suite``: ``make test``'s order, so a cold run builds and tests at once.

Why it is shaped so: a cold ``make test`` on 2 cores spent 56 min 40 s building the world
one part after another before the first test ran (2026-11-27, load 2-6), then ~36 min on
tests that mostly wait on API servers, not on the CPU: 1 h 35 min, over the 75 minutes
aimed at. The tests that need only the control plane, the scheduler, the garbage collector
and kwok (``CORE``) are two thirds of the suite, so the engines only the admission, bench,
GitOps and parity tests start (``LATER``: Flux, Argo CD, Trainer v2 + JobSet, both Kueues,
the upstream operator, the mpi-operator) are built in the background while those tests run:

1. ``CORE`` is built (or found) in the foreground;
2. ``LATER`` is built by a ``nice -n 19``, ``ionice -c3`` child from the very start (how
   it shares the CPU is said where it is started);
3. every test outside ``LATE_DIRS`` runs (phase "first"), then the controller tests again
   in upstream's order (phase "upstream-order"); during both, ``TRAINFORGE_DEFERRED_BUILDS``
   makes a build of a ``LATER`` part an error that names this module, warm cache or cold,
   so a test that needs one outside ``LATE_DIRS`` fails in every run instead of waiting on
   the background child past pytest's timeout in a cold one;
4. once the child is done, the tests in ``LATE_DIRS`` run (phase "late"), two files at a
   time (``LATE_WORKERS``).

A warm run builds nothing and only splits the suite in three pytest runs. The exit code
is 1 if any phase or the background build failed; every test phase runs regardless, so one
failure does not hide the others.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .gobuild import DEFERRED_ENV
from .paths import REPO_ROOT, cache_root

CORE = ("k8s", "kube-scheduler", "kube-controller-manager", "kwok", "kustomize")
LATER = ("training-operator", "source-controller", "kustomize-controller", "redis-server", "argocd",
         "training-operator-mxjob", "jobset", "trainer", "kueue", "mpi-operator", "kueue-0.19")
# tests/testworld/engines: the test world's own checks of the late engines (mpi-operator, both Kueues)
LATE_DIRS = ("tests/admission", "tests/bench", "tests/e2e", "tests/gitops", "tests/parity", "tests/testworld/engines")
# --durations: each phase names its ten slowest steps, where a slower `make test` shows first
PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not fault", "--durations=10")
# The late phase runs its files on two pytest-xdist workers, a file (so a module's world) to one
# worker. Its tests wait on the engines' intervals, syncs and pods far more than they compute:
# run alone, the late phase kept a load average of about 1 on two cores for 40 minutes.
# Every world has its own control plane, ports, directories and fixed-path isolation, so two
# run side by side as they already do within one process.
LATE_WORKERS = ("-n", "2", "--dist", "loadfile")


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def _log(name: str) -> Path:
    """A file of the suite's in the cache's logs folder (each run writes over the last)."""
    return cache_root() / "logs" / name


def _phase(label: str, args: list[str], env: dict[str, str], failed: list[str]) -> None:
    """One pytest run; its label joins ``failed`` when it fails.

    Each run also leaves a JUnit report (``logs/suite-<label>.xml`` in the cache), the time of
    every test with its fixtures, so the files behind a slower ``make test`` can be summed.
    """
    _say(f"--- {label}: pytest {' '.join(args)}")
    started = time.monotonic()
    junit = _log(f"suite-{label}.xml")
    code = subprocess.call([*PYTEST, f"--junitxml={junit}", *args], cwd=REPO_ROOT, env=env)
    _say(f"--- {label}: exit {code} in {_clock(time.monotonic() - started)}")
    if code:
        failed.append(label)


def _background(log: Path) -> subprocess.Popen[bytes]:
    """``python -m testworld build LATER`` at the lowest CPU and I/O priority, output to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    io_idle = ["ionice", "-c3"] if shutil.which("ionice") else []  # util-linux; without it, CPU priority only
    with open(log, "wb") as out:
        # a session of its own, stopped as one group. Under the kernel's autogroup scheduling
        # (sched_autogroup_enabled=1, Debian's default) a session is a CPU group of its own, so the
        # background and the tests share the cores half and half whatever the nice (it orders
        # only processes within a group); that is how the cold run in docs/development.md (Tests)
        # went: kube-apiserver's build took 760 s instead of ~484 s, and the background was done
        # 48 s after the first two phases. Without autogroup the nice makes it yield to the tests.
        return subprocess.Popen([*io_idle, "nice", "-n", "19", sys.executable, "-m", "testworld", "build", *LATER],
                                cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def run() -> int:
    """The whole suite in the order above; returns the exit code."""
    from .cli import build_named

    started = time.monotonic()
    log = _log("suite-background-build.log")
    child = _background(log)
    failed: list[str] = []
    try:
        _say(f"building (or finding) {', '.join(LATER)} in the background at nice 19: {log}")
        if build_named(CORE) != 0:
            failed.append("core build")
            return 1
        _say(f"--- the world's core is ready after {_clock(time.monotonic() - started)}")
        early = dict(os.environ, **{DEFERRED_ENV: ",".join(LATER)})
        _phase("first", [f"--ignore={d}" for d in LATE_DIRS], early, failed)
        # the controller tests that start train-controller, again in upstream's order (--no-pods-first)
        _phase("upstream-order", ["tests/controller"], dict(early, TRAINFORGE_TEST_UPSTREAM_ORDER="1"), failed)
        waited = time.monotonic()
        if child.poll() is None:
            _say("--- waiting for the background build")
        if child.wait() != 0:
            failed.append("background build")
        _say(f"--- background build (exit {child.returncode}, waited {_clock(time.monotonic() - waited)}):\n"
             + log.read_text(errors="replace").rstrip())
        _phase("late", [*LATE_WORKERS, *LATE_DIRS], dict(os.environ), failed)
        return 1 if failed else 0
    finally:
        if child.poll() is None:  # interrupted: stop the builds (each renames into place only when done)
            os.killpg(child.pid, 15)
            child.wait()
        _say(f"--- make test: {'failed: ' + ', '.join(failed) if failed else 'passed'} "
             f"in {_clock(time.monotonic() - started)}")
