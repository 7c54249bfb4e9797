"""The spec fields a change touched, in the diagnostics' path syntax, with their head positions.

Compared is the spec as resolved for the environment (the job's `spec` with its
`environments.<env>` override merged in, as `compiler.reading.resolve` merges them), plus the
job's labels and annotations, so an override of `nodes` for prod reads `spec.nodes`. Leaves
of mappings are compared one by one and lists of mappings item by item
(`spec.storage[0].size`); a list of plain values (`args`, `command`) is one value. A project
file change that reaches the job reads `project.<path>` (the project's defaults, its policy,
and this environment's entry). Each field's position is in the head spec (the environment's
override where it sets the field; the nearest enclosing key when the head removed it), or
in the head project file.
"""

from __future__ import annotations

from typing import Any, Optional

from compiler.plan.model import Position
from compiler.plan.sides import Job
from compiler.reading.resolve import deep_merge
from compiler.reading.validation import format_path
from foundation.jsondiff import ABSENT, leaves
from schemas.loader import Document, Loc


def resolved(job: Job) -> dict[str, Any]:
    """The job's spec for its environment and its labels and annotations, as raw data."""
    data = job.doc.data
    spec = {k: v for k, v in data["spec"].items() if k != "environments"}
    override = (data["spec"].get("environments") or {}).get(job.env)
    if override:
        spec = {k: v for k, v in deep_merge(spec, override).items() if v is not None}
    meta = data.get("metadata") or {}
    return {"metadata": {k: meta[k] for k in ("labels", "annotations") if meta.get(k)}, "spec": spec}


def _items(value: Any) -> bool:
    """A non-empty list of mappings: compared item by item."""
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) for i in value)


def _descend(old: Any, new: Any) -> Optional[list[tuple[Any, Any, Any]]]:
    """Mappings key by key (the head's order, then what only the base has), lists of mappings item
    by item; a side that lacks a subtree is walked down the other's, so every leaf of it counts."""
    if isinstance(old, dict) and isinstance(new, dict) or (
            old is ABSENT and isinstance(new, dict) and new) or (new is ABSENT and isinstance(old, dict) and old):
        before, after = ({} if old is ABSENT else old), ({} if new is ABSENT else new)
        keys = list(after) + [k for k in before if k not in after]
        return [(k, before.get(k, ABSENT), after.get(k, ABSENT)) for k in keys]
    if (_items(old) or old is ABSENT) and (_items(new) or new is ABSENT):
        before, after = ([] if old is ABSENT else old), ([] if new is ABSENT else new)
        return [(i, before[i] if i < len(before) else ABSENT, after[i] if i < len(after) else ABSENT)
                for i in range(max(len(before), len(after)))]
    return None


def changed(old: Any, new: Any, loc: Loc = ()) -> list[Loc]:
    """The leaves that differ between `old` and `new` (either side's, where one lacks them)."""
    return [path for path, _, _ in leaves(old, new, _descend, loc)]


def spec_fields(old: Job, new: Job) -> list[Position]:
    """The changed leaves of the job's resolved spec and metadata, positioned in the head spec."""
    out = []
    for loc in changed(resolved(old), resolved(new)):
        if loc[0] == "spec":
            line, col = new.target.view.position(loc[1:])
        else:
            line, col = new.doc.position(loc)
        out.append(Position(format_path(loc), new.origin, line, col))
    return out


def project_fields(old: Optional[Document], new: Optional[Document], env: str) -> list[Position]:
    """The changed leaves of the project file that reach jobs of `env`, positioned in the head's."""
    if new is None or old is None:
        return []
    reach = ("defaults", "policy")
    o, n = old.data or {}, new.data or {}
    out = []
    for loc in changed({k: o.get(k) for k in reach}, {k: n.get(k) for k in reach}) + [
            ("environments", env, *loc) for loc in changed(
                (o.get("environments") or {}).get(env), (n.get("environments") or {}).get(env))]:
        line, col = new.position(loc)
        out.append(Position("project." + format_path(loc), new.origin or new.file, line, col))
    return out
