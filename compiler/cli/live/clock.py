"""Durations as `status` and `logs` print and read them: `3m12s` ages, `10m` timeouts.

Kubernetes writes times as RFC 3339 (`2026-11-28T07:01:02Z`); a person reads an age, so
every time shown is one (`Running for 3m12s`), and `--timeout` takes the same spelling
Go's `time.ParseDuration` does for the units a wait needs (`90s`, `10m`, `1h30m`).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Optional

from foundation.rfc3339 import parse as parse_time

_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
_TERM = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def age(since: Optional[str], now: datetime) -> str:
    """How long ago `since` was, to the second or the unit that matters (`45s`, `3m12s`,
    `2h5m`, `3d4h`); `?` for a missing or unreadable time."""
    then = parse_time(since)
    if then is None:
        return "?"
    return span(max(0.0, (now - then).total_seconds()))


def span(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s" if s % 60 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60}m" if s % 3600 // 60 else f"{s // 3600}h"
    return f"{s // 86400}d{s % 86400 // 3600}h" if s % 86400 // 3600 else f"{s // 86400}d"


def parse_duration(text: str) -> float:
    """Seconds in `text` (`90s`, `10m`, `1h30m`, `500ms`); ValueError naming what is accepted."""
    compact = text.strip().replace(" ", "")
    terms = _TERM.findall(compact)
    if not compact or "".join(f"{n}{u}" for n, u in terms) != compact:
        raise ValueError(f"'{text}' is not a duration; write e.g. 90s, 10m or 1h30m")
    return sum(float(n) * _UNITS[u] for n, u in terms)


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
