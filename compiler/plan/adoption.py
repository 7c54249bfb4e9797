"""A job git creates that the cluster runs already: adopted, not created, when it is the same job.

A team brings a running job into git with `train-compile import` (docs/import.md): the spec is
new on the head side, so the plan pairs it as a `create`, yet the engine's sync only adopts
the job the cluster has, the same job, and nothing of its run changes. Under `--live` such a
pair reads `unchanged` (with the sentence that says why); "the same job" is the importer's
contract (`compiler.importing.sameness`: equal after what the cluster does to any job). A
live job of that name that is another job stays a `create`, with a clause naming what the
sync would change in it.
"""

from __future__ import annotations

from typing import Any, Optional

from compiler.importing.kinds import kind_of
from compiler.importing.sameness import differences
from compiler.plan.matching import Pair

ADOPTS = "adopts the job the cluster runs already, the same job: nothing of its run changes"


def live_job(pair: Pair, states: Optional[dict[tuple[str, str, str], dict[str, Any]]]) -> Optional[dict[str, Any]]:
    """The live job of the same kind, namespace and name as a `create`'s, under --live."""
    if pair.change != "create" or states is None or pair.new is None:
        return None
    return states.get((pair.new.kind, pair.new.namespace, pair.new.name))


def adopted(pair: Pair, live: dict[str, Any]) -> tuple[Pair, list[str]]:
    """The pair as the sync will treat it, and the clauses that say so."""
    assert pair.new is not None
    found = differences(live, pair.new.rendered, kind_of(pair.new.rendered))
    if not found:
        return Pair("unchanged", None, pair.new), [ADOPTS]
    shown = ", ".join(d.path for d in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
    return pair, [f"the cluster runs a job of this name already, which the sync changes: {shown}"]
