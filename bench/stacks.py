"""Where a profiled process spent its CPU: the top frames of py-spy's collapsed stacks.

`make bench-scale --py-spy DIR` records train-controller with `py-spy record --format raw
--gil` (one line per distinct stack, `frame;frame;...;frame count`, only samples that held
the GIL). An issue's note asks for a profile's top entries before and after a change; this
reads such a file into those entries, so a before/after pair is two calls, not a notebook.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional


@dataclass(frozen=True)
class Top:
    samples: int
    own: list[tuple[str, float]]  # (frame, share of samples with it on top of the stack)
    inclusive: list[tuple[str, float]]  # (frame, share of samples with it anywhere in the stack)


def read(lines: Iterable[str], *, most: int = 12) -> Top:
    """The `most` frames by own and by inclusive share; threads' bootstrap frames left out of the latter."""
    total, own, inclusive = 0, Counter[str](), Counter[str]()
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = stack.split(";")
        total += n
        own[frames[-1]] += n
        for frame in set(frames):
            inclusive[frame] += n
    for boring in [f for f in inclusive if f.startswith(("Thread._bootstrap", "Thread.run ", "<module>"))]:
        del inclusive[boring]
    def share(counts: Counter[str]) -> list[tuple[str, float]]:  # ties by name: the same file, the same table
        ranked = sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))[:most]
        return [(frame, n / total) for frame, n in ranked] if total else []

    return Top(total, share(own), share(inclusive))


def lines_of(top: Top, label: str) -> list[str]:
    out = [f"{label}: {top.samples:,} samples holding the GIL", "  own time:"]
    out += [f"    {share:6.1%}  {frame}" for frame, share in top.own]
    out.append("  inclusive:")
    out += [f"    {share:6.1%}  {frame}" for frame, share in top.inclusive]
    return out


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.stacks", description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="py-spy raw (collapsed) stack files")
    parser.add_argument("--most", type=int, default=12, help="frames listed per table (default 12)")
    args = parser.parse_args(argv)
    for path in args.files:
        try:
            text = path.read_text()
        except OSError as exc:
            print(f"bench.stacks: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return 1
        print("\n".join(lines_of(read(text.splitlines(), most=args.most), str(path))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
