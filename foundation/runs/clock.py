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

