"""Times as the API server writes them: RFC 3339, read once and written twice.

Below both products because both read the cluster's times: the controller its conditions'
and status' times and the pods' (stuck), the compiler a live job's conditions (`plan --live`)
and every time `status` shows as an age. Reading is lenient on purpose: `metav1.Time` is whole
seconds with `Z`, but a `MicroTime`, another client's fractions or an explicit offset are the
same instant, and a time without an offset is taken as UTC (the API server's zone), so every
reading is comparable with `datetime.now(timezone.utc)`. Writing follows the two wire forms
exactly: `timestamp` for `metav1.Time` (conditions, start and completion times, Events) and
`micro_time` for `metav1.MicroTime` (a Lease's acquire and renew times).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Optional


def parse(text: Any) -> Optional[datetime]:
    """The instant `text` names (aware, UTC when it gives no offset); None when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)  # Python 3.11: `Z`, fractions and offsets
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def timestamp(now: datetime) -> str:
    """metav1.Time's JSON form: RFC 3339, UTC, whole seconds."""
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(when: datetime) -> str:
    """metav1.MicroTime's JSON form (a Lease's times): RFC 3339 with microseconds, UTC."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
