"""The one table every benchmark prints: figure, ours, baseline, ratio (and the target).

Benchmarks measure; they never fail on timing. Each row compares one figure of ours
with the same figure of what a user would otherwise run, measured in the same run on
the same machine, so the ratio stays meaningful on a busy or slow machine where the
absolute numbers do not. `ratio` is always ours / baseline; the figure's name says
whether lower or higher is better. The machine line (date, CPU, cores, load) goes with
every table because a figure without it cannot be compared with anything.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence


@dataclass(frozen=True)
class Row:
    figure: str
    ours: Optional[float]
    baseline: Optional[float] = None
    unit: str = ""
    target: str = ""
    spread: float = 0.0  # relative spread of the ratio within this run: ours' repeats and the baseline's (its noise)

    @property
    def ratio(self) -> Optional[float]:
        if self.ours is None or not self.baseline:
            return None
        return self.ours / self.baseline


def _num(value: Optional[float], unit: str) -> str:
    if value is None:
        return "n/a"
    if abs(value) >= 100:
        text = f"{value:,.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    elif abs(value) >= 0.1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3f}"
    return f"{text} {unit}".rstrip()


def _ratio(row: Row) -> str:
    ratio = row.ratio
    if ratio is None:
        return "-"
    return f"{ratio:.3f}x" if ratio < 0.1 else f"{ratio:.2f}x"


def cells(rows: Sequence[Row]) -> list[list[str]]:
    header = ["figure", "ours", "baseline", "ratio", "target"]
    body = [[r.figure, _num(r.ours, r.unit), _num(r.baseline, r.unit) if r.baseline is not None else "-",
             _ratio(r), r.target or "-"] for r in rows]
    return [header] + body


def text_table(rows: Sequence[Row]) -> str:
    table = cells(rows)
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    lines = []
    for n, line in enumerate(table):
        padded = (c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths)))
        lines.append("  ".join(padded).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def markdown_table(rows: Sequence[Row]) -> str:
    table = cells(rows)
    out = ["| " + " | ".join(table[0]) + " |", "|" + "|".join(["---"] + ["---:"] * (len(table[0]) - 1)) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in line) + " |" for line in table[1:]]
    return "\n".join(out) + "\n"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def tool_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "n/a"
    return " ".join(out.split())[:80] or "n/a"


def machine(extra: Sequence[str] = ()) -> str:
    """One line saying when and where the figures were taken."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    parts = [
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        f"{_cpu_model()}, {os.cpu_count()} cores",
        f"Python {platform.python_version()}",
        f"load {load:.1f} at start",
        *extra,
    ]
    return "; ".join(parts)


def emit(title: str, rows: Sequence[Row], *, machine_line: str, notes: Sequence[str] = (),
         markdown: Optional[Path] = None) -> None:
    """Print the table (and write it as markdown when asked)."""
    sys.stdout.write(f"\n{title}\n{machine_line}\n\n{text_table(rows)}")
    for note in notes:
        sys.stdout.write(f"  * {note}\n")
    if markdown is not None:
        text = f"### {title}\n\n_{machine_line}_\n\n{markdown_table(rows)}"
        if notes:
            text += "\n" + "".join(f"- {note}\n" for note in notes)
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(text, encoding="utf-8")
        sys.stdout.write(f"\nwrote {markdown}\n")
