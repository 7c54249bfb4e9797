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


def _leaves(value: Any, loc: Loc) -> list[Loc]:
    if isinstance(value, dict) and value:
        return [leaf for k in value for leaf in _leaves(value[k], loc + (k,))]
    if _items(value):
        return [leaf for i, item in enumerate(value) for leaf in _leaves(item, loc + (i,))]
    return [loc]


def _items(value: Any) -> bool:
    """A non-empty list of mappings: compared item by item."""
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) for i in value)


def changed(old: Any, new: Any, loc: Loc = ()) -> list[Loc]:
    """The leaves that differ between `old` and `new` (either side's, where one lacks them)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[Loc] = []
        for key in list(new) + [k for k in old if k not in new]:
            if key not in old:
                out += _leaves(new[key], loc + (key,))
            elif key not in new:
                out += _leaves(old[key], loc + (key,))
            else:
                out += changed(old[key], new[key], loc + (key,))
        return out
    if _items(old) and _items(new):
        out = []
        for i in range(max(len(old), len(new))):
            if i >= len(old):
                out += _leaves(new[i], loc + (i,))
            elif i >= len(new):
                out += _leaves(old[i], loc + (i,))
            else:
                out += changed(old[i], new[i], loc + (i,))
        return out
    return [] if old == new else [loc]


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
