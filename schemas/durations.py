"""Durations: one reader for every place a person writes one, one writer per purpose.

At the bottom (below the spec's types) because the spec reads durations, and the CLI and the
controller read them too; it imports nothing, so `train-compile --help` and
`train-controller --help` stay light. Three places take a duration, each in the spelling its
users know and its tests pin, all read by `Spelling.seconds` from one unit table:

- `SPEC`: a spec field (`activeDeadline: 24h`): one whole number with s, m, h or d, or whole
  seconds; its pattern is the JSON Schema's;
- `GO`: `status --timeout`, Go's `time.ParseDuration` as kubectl's `--timeout` takes it
  (`90s`, `1h30m`, `500ms`; a unit is required);
- `FLAG`: the controller's flags, Go durations as upstream's and controller-runtime's same
  flags take them (`15s`, `1m30s`, `300ms`), and a plain number of seconds; status's
  `--stuck-pod-threshold` too, as the controller's flag of that name.

Written three ways, one per purpose: `prose` in the plan's sentences ("deleted 1 h 30 min
after it finishes"); `age`, how long a job or an Event has been so, to the two units that
matter as kubectl's AGE column (`45s`, `3m12s`, `2h5m`, `3d4h`), the same in `status` and
`plan --live`; `go`, a configured duration exactly as its flag takes it (`3m`, `1m30s`, `25h`),
as an Event quoting `--stuck-pod-threshold`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Optional

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
WHOLE = r"\d+"
DECIMAL = r"\d+(?:\.\d*)?|\.\d+"


@dataclass(frozen=True)
class Spelling:
    """What one place accepts: terms of a number and a unit; how many, and what may stand alone."""

    number: str  # a term's number, a regex (WHOLE or DECIMAL)
    units: tuple[str, ...]  # of UNITS
    bare: bool = False  # a plain number alone is seconds
    compound: bool = False  # several terms: 1h30m
    spaced: bool = False  # white space around and inside the terms (typed in a shell)

    @cached_property
    def _units(self) -> str:
        if all(len(unit) == 1 for unit in self.units):
            return "[" + "".join(self.units) + "]"
        return "|".join(sorted(self.units, key=len, reverse=True))  # `ms` before `m`

    @cached_property
    def pattern(self) -> str:
        """The whole text as a regex (the spec's is its JSON Schema pattern)."""
        sp = r"\s*" if self.spaced else ""
        if not self.compound:
            return f"^{sp}({self.number}){sp}({self._units}{'?' if self.bare else ''}){sp}$"
        terms = f"(?:{sp}(?:{self.number}){sp}(?:{self._units}))+{sp}"
        return f"^(?:{terms}|{sp}(?:{self.number}){sp})$" if self.bare else f"^{terms}$"

    def seconds(self, text: str) -> Optional[float]:
        """The seconds `text` says in this spelling; None when it is not one."""
        if not re.match(self.pattern, text):
            return None
        sp = r"\s*" if self.spaced else ""
        terms = re.findall(f"({self.number}){sp}({self._units})?", text)
        return sum(float(number) * UNITS[unit or "s"] for number, unit in terms)


SPEC = Spelling(WHOLE, ("s", "m", "h", "d"), bare=True)
GO = Spelling(DECIMAL, ("ms", "s", "m", "h"), compound=True, spaced=True)
FLAG = Spelling(DECIMAL, ("ms", "s", "m", "h"), bare=True, compound=True, spaced=True)


def flag(text: str) -> float:
    """Seconds of a duration flag's value (`FLAG`: train-controller's flags, and status's
    `--stuck-pod-threshold` named after one); ValueError naming the spelling."""
    seconds = FLAG.seconds(text)
    if seconds is None:
        raise ValueError(f"{text!r} is not a duration like 15s, 1.5s, 300ms or 1m30s")
    return seconds


def prose(seconds: int) -> str:
    """`90` -> 1 min 30 s, `86400` -> 24 h: how a sentence of the plan says a TTL or a deadline."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else "", f"{secs} s" if secs else ""]
    return " ".join(p for p in parts if p) or "0 s"


def age(seconds: float) -> str:
    """How long something has been so, to the second or the two units that matter: `45s`,
    `3m12s`, `2h5m`, `3d4h` (as kubectl's AGE column)."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60}m" if s % 3600 // 60 else f"{s // 3600}h"
    return f"{s // 86400}d{s % 86400 // 3600}h" if s % 86400 // 3600 else f"{s // 86400}d"


def go(seconds: float) -> str:
    """A duration as a Go duration flag takes it, to the second: `3m`, `90` -> `1m30s`, `25h`."""
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"
