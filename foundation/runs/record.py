"""A run's record as the cluster holds it: the names train-controller writes, and `plan` and `status` read.

train-controller keeps each run's run spec (`foundation.runs.spec`) in an `apps/v1`
ControllerRevision owned by the job (controller.jobs.run_record says why and how), labelled
like the job's pods, and names it on every pod it builds from it; whether the run has started
(`foundation.runs.started`) is read from the same objects. So the wire names are here, below
both products, once.
"""

from __future__ import annotations

from typing import Any

PREFIX = "train-controller.trainforge.dev/"
RECORD = PREFIX + "revision"  # on each pod: the name of the run record it was built from (wire name)
ENDED = PREFIX + "run-ended"  # on the record: its run ended ("suspended"); the next pass starts a new one
STARTED = PREFIX + "run-started"  # on a pod created for a started run, or on the run's record: "true"
PREVIOUS = PREFIX + "deleted-for"  # on a pod taken away from its run before its delete (controller.jobs.runs)


def number(record: dict[str, Any]) -> int:
    """The record's `revision` number (the newest run's is the highest)."""
    return int(record.get("revision") or 0)
