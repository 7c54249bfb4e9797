"""The guard every benchmark shares: this run's ratios against the project's last recorded ones.

A ratio (ours / baseline, measured in the same run) moves with the code, and a little with
the machine's load; a change that made the compiler twice as slow went unnoticed once
because no figure was kept to compare with (issue 50). So a benchmark keeps its ratios in
`bench/baseline-<name>.json`, with the commit they were measured at and every recorded run,
and prints each ratio of a new run against them, saying plainly when one got worse by more
than the noise.

The noise of a figure is measured, never assumed: the spread of its ratio across the runs
recorded at that commit ((max - min) / median), or, if larger, the largest spread seen
within one run (ours' repeats and the baseline's, which a benchmark reports per row as
`Row.spread`). Record several runs (`--record-baseline`, once per run) for a noise worth the
name; a run at another commit starts the file again. The file is data in git: a change that
moves a ratio on purpose records the new figures with it.

Benchmarks never fail on timing, so neither does the guard: it prints.
"""

from __future__ import annotations

import datetime
import json
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from bench.report import Row

BENCH = Path(__file__).resolve().parent


def baseline_path(name: str) -> Path:
    return BENCH / f"baseline-{name}.json"


def commit() -> str:
    """The checkout's commit (short), `+changes` when its tracked files differ from it."""
    root = BENCH.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


@dataclass(frozen=True)
class Figure:
    """One ratio as recorded: every run's value and the spread within each run."""

    better: str  # "lower" or "higher"
    ratios: tuple[float, ...]
    spreads: tuple[float, ...]

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    @property
    def noise(self) -> Optional[float]:
        """Relative noise: across the recorded runs, or within one, whichever is larger; None
        when nothing measured it (one run, no repeats)."""
        across = (max(self.ratios) - min(self.ratios)) / self.ratio if len(self.ratios) > 1 and self.ratio else 0.0
        noise = max(across, *self.spreads, 0.0)
        return noise if noise > 0 or len(self.ratios) > 1 else None


@dataclass(frozen=True)
class Baseline:
    commit: str
    measured: str  # when the last run was recorded (UTC)
    machine: str
    figures: dict[str, Figure]

    @property
    def runs(self) -> int:
        return max((len(f.ratios) for f in self.figures.values()), default=0)


def load(path: Path) -> Optional[Baseline]:
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    figures = {name: Figure(f["better"], tuple(f["ratios"]), tuple(f["spreads"])) for name, f in data["figures"].items()}
    return Baseline(data["commit"], data["measured"], data["machine"], figures)


def record(rows: Sequence[Row], path: Path, *, machine: str, at: Optional[str] = None) -> Baseline:
    """Add this run's ratios to `path` (a file of another commit is started again)."""
    at = at or commit()
    old = load(path)
    keep = old.figures if old is not None and old.commit == at else {}
    figures = dict(keep)
    for row in rows:
        if row.ratio is None:
            continue
        before = keep.get(row.figure)
        figures[row.figure] = Figure(
            row.better,
            (*(before.ratios if before else ()), row.ratio),
            (*(before.spreads if before else ()), row.spread),
        )
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    baseline = Baseline(at, now, machine, figures)
    head = {"commit": baseline.commit, "measured": baseline.measured, "machine": baseline.machine}
    entries = [f"  {json.dumps(name)}: " + json.dumps({"better": f.better, "ratios": [round(r, 6) for r in f.ratios],
                                                     "spreads": [round(s, 4) for s in f.spreads]})
               for name, f in figures.items()]
    lines = [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()]
    path.write_text("{\n" + "\n".join(lines) + '\n "figures": {\n' + ",\n".join(entries) + "\n }\n}\n",
                    encoding="utf-8")
    return baseline


@dataclass(frozen=True)
class Verdict:
    figure: str
    ratio: float
    recorded: Figure
    change: float  # relative, positive = worse

    @property
    def worse(self) -> bool:
        noise = self.recorded.noise
        return noise is not None and self.change > noise

    @property
    def better(self) -> bool:
        noise = self.recorded.noise
        return noise is not None and -self.change > noise


def verdicts(rows: Sequence[Row], baseline: Baseline) -> list[Verdict]:
    out = []
    for row in rows:
        recorded = baseline.figures.get(row.figure)
        if row.ratio is None or recorded is None or not recorded.ratio:
            continue
        change = row.ratio / recorded.ratio - 1 if recorded.better == "lower" else recorded.ratio / row.ratio - 1
        out.append(Verdict(row.figure, row.ratio, recorded, change))
    return out


def _x(ratio: float) -> str:
    return f"{ratio:.4f}x" if ratio < 0.1 else f"{ratio:.3f}x"


def report(rows: Sequence[Row], path: Path) -> str:
    """What to print after the table: each guarded ratio against the recorded one."""
    baseline = load(path)
    if baseline is None:
        return f"\nno recorded figures in {path.name} yet: --record-baseline keeps this run's\n"
    found = verdicts(rows, baseline)
    lines = [f"\nthe ratios against {path.name}: commit {baseline.commit}, {baseline.runs} run(s) recorded, "
             f"the last at {baseline.measured}"]
    width = max((len(v.figure) for v in found), default=0)
    for v in found:
        noise = v.recorded.noise
        word = ("WORSE by more than the noise" if v.worse else "better by more than the noise" if v.better
                else "noise not measured (record another run)" if noise is None else "within the noise")
        delta = f"{abs(v.change):.1%} {'worse' if v.change > 0 else 'better'}"
        lines.append(f"  {v.figure.ljust(width)}  {_x(v.ratio):>9} now, {_x(v.recorded.ratio):>9} recorded: "
                     f"{delta}, noise {'?' if noise is None else f'{noise:.1%}'}: {word}")
    worse = [v.figure for v in found if v.worse]
    lines.append(f"  {len(worse)} ratio(s) got worse by more than the noise: {'; '.join(worse)}" if worse
                 else "  no ratio got worse by more than the noise")
    return "\n".join(lines) + "\n"
