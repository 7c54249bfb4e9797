"""Times as `status` and `logs` print and read them: `3m12s` ages, `10m` timeouts.

Kubernetes writes times as RFC 3339 (`2026-11-28T07:01:02Z`, read by `foundation.runs.clock`);
a person reads an age, so every time shown is one (`Running for 3m12s`: `schemas.durations.age`),
and `--timeout` takes the spelling Go's `time.ParseDuration` does (`90s`, `10m`, `1h30m`:
`schemas.durations.GO`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Optional

from foundation.runs.clock import parse_time
from schemas import durations


def age(since: Optional[str], now: datetime) -> str:
    """How long ago `since` was, to the second or the unit that matters (`45s`, `3m12s`,
    `2h5m`, `3d4h`); `?` for a missing or unreadable time."""
    then = parse_time(since)
    if then is None:
        return "?"
    return durations.age(max(0.0, (now - then).total_seconds()))


def parse_duration(text: str) -> float:
    """Seconds in `text` (`90s`, `10m`, `1h30m`, `500ms`); ValueError naming what is accepted."""
    seconds = durations.GO.seconds(text)
    if seconds is None:
        raise ValueError(f"'{text}' is not a duration; write e.g. 90s, 10m or 1h30m")
    return seconds


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
