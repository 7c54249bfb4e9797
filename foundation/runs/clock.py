"""Times as the API server writes them (RFC 3339), read once for every rule on runs.

Conditions, pod states and container exits carry `2026-11-28T07:01:02Z`, sometimes with
fractions or an offset; a rule that compares them (the newest condition, how long a pod has
waited) compares instants, never strings. Pure and tiny, so the CLI's start-up can afford it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional


def parse_time(text: Any) -> Optional[datetime]:
    """An RFC 3339 time (`...Z`, fractions of any length, an offset), always aware; None when
    absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def duration(seconds: int) -> str:
    """`90` -> 1 min 30 s, `86400` -> 24 h: how a sentence says a TTL, an age or an ETA (the plan's
    and the progress words alike)."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h" if hours else "", f"{minutes} min" if minutes else "", f"{secs} s" if secs else ""]
    return " ".join(p for p in parts if p) or "0 s"
