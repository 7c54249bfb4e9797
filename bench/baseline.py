"""The project's last recorded benchmark ratios, and a plain word when a run got worse than them.

A benchmark's ratios (ours / what a user would otherwise run, both measured in the same run)
are comparable between machines and loads where its absolute figures are not; what nothing
did was compare them with the last ones: the controller's CPU per pod went from 0.42x to 0.48x
of upstream's between two weeks' runs, and only a person reading both tables could see it. So
each benchmark keeps the ratios it guards in `bench/recorded/<bench>.json`: the commit they
were measured at, when, the machine line, and each ratio's noise, how far it moved between
runs where the code did not change (measured, and how is said in `noise_how`). After its table
a benchmark prints each guarded ratio beside the recorded one and says `WORSE` where it moved
the wrong way by more than that noise (`compare`); it never fails on it. `--record` (a person
decides that a run is one to keep: an idle machine, its figures in bench/README.md) writes the
run's ratios as the new record with the commit checked out (`record`), keeping the noise.

Shared by `make bench-scale` and `make bench-compiler`: a benchmark names its figures with
stable keys (`Guarded`) and calls `report_against`.
"""

from __future__ import annotations

import datetime
import json
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "recorded"
NOISE_FLOOR = 0.05  # no ratio is read more finely than 5%, whatever two runs showed


@dataclass(frozen=True)
class Guarded:
    key: str  # stable across runs: what the record is keyed by
    label: str  # how the lines name it
    ratio: float  # this run's ours / baseline
    lower_is_better: bool = True


@dataclass
class Recorded:
    commit: str
    when: str
    machine: str
    ratios: dict[str, float]
    noise: dict[str, float] = field(default_factory=dict)  # key -> relative noise (0.1: 10% of the ratio)
    noise_how: str = ""

    def noise_of(self, key: str) -> float:
        return max(self.noise.get(key, NOISE_FLOOR), NOISE_FLOOR)


def path_of(bench: str, directory: Path = RECORDED) -> Path:
    return directory / f"{bench}.json"


def load(bench: str, directory: Path = RECORDED) -> Optional[Recorded]:
    path = path_of(bench, directory)
    if not path.exists():
        return None
    return Recorded(**json.loads(path.read_text()))


def verdict(figure: Guarded, recorded: Recorded) -> Optional[str]:
    """`better`, `worse` (past the noise) or `same` against the record; None if it has no such ratio."""
    before = recorded.ratios.get(figure.key)
    if before is None or before <= 0:
        return None
    change = (figure.ratio - before) / before
    if not figure.lower_is_better:
        change = -change
    noise = recorded.noise_of(figure.key)
    return "worse" if change > noise else "better" if change < -noise else "same"


def compare(figures: list[Guarded], recorded: Optional[Recorded]) -> list[str]:
    """One line per guarded ratio against the record; a line for each that got worse opens with WORSE."""
    if recorded is None:
        return ["no recorded figures to compare with (bench/recorded/; --record writes them)"]
    lines = [f"against the last recorded figures (commit {recorded.commit}, {recorded.when}; noise: "
             f"{recorded.noise_how or 'not measured, ' + format(NOISE_FLOOR, '.0%') + ' assumed'}):"]
    worse = []
    for figure in figures:
        said = verdict(figure, recorded)
        if said is None:
            lines.append(f"  {figure.label}: {figure.ratio:.3g}x (not recorded)")
            continue
        line = (f"{figure.label}: {figure.ratio:.3g}x, recorded {recorded.ratios[figure.key]:.3g}x "
                f"(noise +-{recorded.noise_of(figure.key):.0%}): {said}")
        lines.append(("WORSE: " if said == "worse" else "  ") + line)
        if said == "worse":
            worse.append(figure.label)
    lines.append(f"WORSE than recorded by more than the noise: {', '.join(worse)}" if worse
                 else "no ratio worse than recorded by more than the noise")
    return lines


def commit(repo: Path = HERE.parent) -> str:
    """The commit checked out, short, `+dirty` when the work tree has changes."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def record(bench: str, figures: list[Guarded], *, machine: str, directory: Path = RECORDED,
           noise: Optional[dict[str, float]] = None, noise_how: str = "", at: Optional[str] = None) -> Path:
    """Write this run's ratios as `bench`'s record; the noise is the previous record's unless given."""
    before = load(bench, directory)
    rec = Recorded(commit=at or commit(), when=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                   machine=machine, ratios={f.key: round(f.ratio, 4) for f in figures},
                   noise=noise if noise is not None else (before.noise if before else {}),
                   noise_how=noise_how or (before.noise_how if before else ""))
    path = path_of(bench, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(rec), indent=2, sort_keys=True) + "\n")
    return path


def report_against(bench: str, figures: list[Guarded], *, machine: str, write: bool = False,
                   directory: Path = RECORDED) -> list[str]:
    """The comparison lines (printed by the caller); with `write` the run becomes the record."""
    lines = compare(figures, load(bench, directory))
    if write:
        lines.append(f"recorded as the new figures: {record(bench, figures, machine=machine, directory=directory)}")
    return lines
