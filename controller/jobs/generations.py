"""Answers about a job's spec kept per (uid, generation): the spec changes only with its generation.

A pass runs for every change of a job's pods (several per pod in a lifecycle), and the answers
that depend on the job's spec alone (malformed fields, upstream's admission rules) would
otherwise be computed again each time (bench/README.md, "Figures the controller's code cites").
What is kept is bounded (least recently used dropped first); a job without uid or generation
(a test's object) is answered afresh.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

KEPT = 8192  # answers kept per memo (a few hundred bytes each)


class PerGeneration:
    """One kind of answer, kept per (uid, generation) of the job it is about."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[Hashable, ...], tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, job: dict[str, Any], compute: Callable[[], list[str]], *extra: Hashable) -> list[str]:
        meta = job.get("metadata") or {}
        key = (meta.get("uid"), meta.get("generation"), *extra)
        if key[0] is None or key[1] is None:
            return compute()
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return list(found)
        answer = tuple(compute())
        with self._lock:
            self._kept[key] = answer
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return list(answer)
