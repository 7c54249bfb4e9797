"""`--also CHECKOUT`: another commit's train-compile measured in the same run, on the same specs.

A before/after figure is only worth comparing when both sides ran on the same machine at the
same moment (a busy shared machine moves absolute figures by several times between runs:
bench/README.md). So `make bench-compiler` can run a second compiler beside this checkout's,
interleaved repeat by repeat, as `make bench-scale --also` runs a second controller: a
checkout of the other commit (`git worktree add --detach /tmp/old COMMIT`) run by the same
interpreter (`python -P -m compiler.cli.main` with the checkout first on PYTHONPATH). A change
meant to be output-neutral must write the same tree and print the same render stream, byte
for byte (`same_tree`, `same_file`).

The interpreter and its site-packages are this checkout's venv: a commit whose dependencies
differ from it is not measured faithfully (the run fails loudly if one is missing).
"""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from bench.measure import Run, spread
from bench.report import Row

PACKAGES = ("schemas", "foundation", "compiler", "overlays")  # what train-compile runs, beside bench/


@dataclass
class Reference:
    """Another commit's train-compile (`--also`), measured beside this checkout's."""

    ref: str  # the checkout's commit, as `bench.baseline.commit` says it
    argv: list[str]
    env: dict[str, str]
    build: Optional[Run] = None
    render: Optional[Run] = None
    differing: Optional[list[str]] = None  # tree files whose bytes differ from this checkout's
    same_render: Optional[bool] = None
    plan: Optional[Run] = None
    plan_build: Optional[Run] = None


def command(checkout: Path) -> tuple[list[str], dict[str, str]]:
    """argv prefix and environment that run `checkout`'s train-compile, its modules byte-compiled
    first (as a wheel install does; the benchmark does the same for this checkout's)."""
    checkout = checkout.resolve()
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    *(str(checkout / p) for p in PACKAGES if (checkout / p).is_dir())], check=True)
    path = os.pathsep.join([str(checkout), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return [sys.executable, "-P", "-m", "compiler.cli.main"], {**os.environ, "PYTHONPATH": path}


def same_tree(ours: Path, theirs: Path) -> list[str]:
    """The files of two output folders that are not in both with the same bytes."""
    differing: list[str] = []

    def walk(cmp: filecmp.dircmp, prefix: str) -> None:
        differing.extend(prefix + name for name in cmp.left_only + cmp.right_only + cmp.funny_files)
        _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
        differing.extend(prefix + name for name in mismatch + errors)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{prefix}{name}/")

    walk(filecmp.dircmp(ours, theirs), "")
    return sorted(differing)


def same_file(ours: Path, theirs: Path) -> bool:
    return filecmp.cmp(ours, theirs, shallow=False)


def has_command(ref: Reference, name: str) -> bool:
    """Whether the commit's train-compile has command `name` (`plan` came after some commits
    one may measure against)."""
    return subprocess.run([*ref.argv, name, "--help"], env=ref.env, capture_output=True).returncode == 0


def rows(ref: Reference, build: Run, render: Run, plan: Optional[Run], kustomize: Optional[Run], *, n: int,
         plan_changed: int) -> list[Row]:
    """The commit's own ratios (against the same kustomize run) and this checkout's CPU against its."""
    out = []
    for what, mine, theirs in (("build", build, ref.build), ("render", render, ref.render)):
        if theirs is None:
            continue
        out.append(Row(f"{ref.ref}: {what} CPU, N={n} (s)", theirs.cpu, kustomize.cpu if kustomize else None, "s",
                       spread=spread(theirs, kustomize)))
        out.append(Row(f"{what} CPU, N={n}, this checkout vs {ref.ref} (s)", mine.cpu, theirs.cpu, "s",
                       spread=spread(mine, theirs)))
    if ref.plan and ref.plan_build and plan:
        out.append(Row(f"{ref.ref}: plan CPU, N={n} with {plan_changed} changed specs (s; baseline: its build)",
                       ref.plan.cpu, ref.plan_build.cpu, "s", spread=spread(ref.plan, ref.plan_build)))
        out.append(Row(f"plan CPU, N={n} with {plan_changed} changed specs, this checkout vs {ref.ref} (s)",
                       plan.cpu, ref.plan.cpu, "s", spread=spread(plan, ref.plan)))
    return out
