"""Drift in the spec's terms: `nodes 2 -> 3` at its line, where the job says `Worker.replicas 1 -> 2`.

A drift (`compiler.cli.live.drift`) is found in the compiled job's fields; the user wrote the
spec. Each field that the spec's own fields lowered to is said as that spec field, with its
value on each side and its line in the spec (the environment's override where it sets it):

- a replica count of the kind's main roles (the ones `nodes` counts: the adapter's
  `main_roles`) -> `spec.nodes`, the sum of those types' replicas on each side; an extra
  role's -> `spec.roles.<role>.replicas`;
- the program container's image, GPUs (`*/gpu`), env entries, command and args ->
  `spec.image`, `spec.resources.gpu`, `spec.env.<NAME>`, `spec.command`, `spec.args`, or the
  replica type's role's own (`spec.roles.<type>.image` ...) where the role sets it;
- the job's labels and annotations -> `metadata.labels.<key>` and so on.

Fields of several replica types that one spec field makes (the image of Master and Worker)
are one line when their values agree. Anything else keeps the job's path, at the spec's
first line. Pure: the drift, the three objects and the compiled spec in, lines out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional

from compiler.cli.live.drift import Drift, Path, dotted

if TYPE_CHECKING:
    from compiler.cli.live.specs import SpecJob


@dataclass(frozen=True)
class FieldDrift:
    field: str  # in the spec's terms (spec.nodes, spec.image ...), or the job's path when none fits
    line: int  # in the spec's file
    git: Any
    job: Any  # the job object's value (the cluster's, as `status` has called it)
    run: Any  # what the run runs (None: not known, or nothing to say)
    why: str
    message: str
    paths: tuple[str, ...] = field(default=())  # the job's fields it stands for


def in_spec_terms(drifts: list[Drift], spec: "SpecJob", *, live: dict[str, Any],
                  record: Optional[dict[str, Any]]) -> list[FieldDrift]:
    """`drifts` as spec fields (module docstring), in the order first found."""
    from foundation.frameworks import BY_KIND

    adapter = BY_KIND.get(spec.kind)
    out: dict[tuple[Any, ...], FieldDrift] = {}
    for d in drifts:
        term = _term(d.at, adapter, spec, live) if adapter is not None and spec.target is not None else None
        if term is None:
            entry = FieldDrift(d.path, spec.line, d.git, d.cluster, d.run, d.why, d.message, (d.path,))
        elif term[0] == "spec.nodes":
            objects = (spec.compiled, live, record)
            git, job, ran = (_nodes(o, adapter) if o else None for o in objects)
            entry = FieldDrift("spec.nodes", term[1], git, job, ran if d.run is not None else None, d.why,
                               d.message, (d.path,))
        else:
            entry = FieldDrift(term[0], term[1], d.git, d.cluster, d.run, d.why, d.message, (d.path,))
        key = (entry.field, _json(entry.git), _json(entry.job), _json(entry.run), entry.why)
        if key in out:
            old = out[key]
            out[key] = FieldDrift(old.field, old.line, old.git, old.job, old.run, old.why, old.message,
                                  (*old.paths, d.path))
        else:
            out[key] = entry
    return list(out.values())


def _term(at: Path, adapter: Any, spec: "SpecJob", live: dict[str, Any]) -> Optional[tuple[str, int]]:
    """(spec field, its line) for the job's field `at`, None when no spec field stands for it."""
    target = spec.target
    if at[:1] == ("metadata",) and len(at) == 3:
        return dotted(at), target.doc.position(at)[0]
    rs = adapter.facts.replica_specs
    if len(at) < 3 or at[:2] != ("spec", rs):
        return None
    rtype, rest = str(at[2]), at[3:]
    if rest in ((), ("replicas",)):
        role = rtype.lower()
        if role in adapter.facts.main_roles:
            return _at(target, ("nodes",))
        return _at(target, ("roles", role, "replicas")) if role in adapter.facts.allowed_roles else None
    if len(rest) < 5 or rest[:3] != ("template", "spec", "containers") or not isinstance(rest[3], int):
        return None
    container = _name(live, spec.compiled, at[:7])  # ("spec", rs, type, "template", "spec", "containers", i)
    tail = rest[4:]
    if container != adapter.facts.container:
        return None
    if tail == ("image",) or (tail and tail[0] in ("command", "args")):
        return _at(target, field_of(spec, rtype, tail[0]))
    if tail[:1] == ("resources",) and len(tail) == 3 and str(tail[2]).endswith("/gpu"):
        return _at(target, field_of(spec, rtype, "resources", "gpu"))
    if tail[:1] == ("env",) and len(tail) >= 2 and isinstance(tail[1], int):
        name = _name(live, spec.compiled, (*at[:7], "env", tail[1]))
        return _at(target, field_of(spec, rtype, "env", name)) if name else None
    return None


def field_of(spec: "SpecJob", rtype: str, *loc: Any) -> tuple[Any, ...]:
    """The spec field that sets `loc` for a replica type's pods: its role's (`spec.roles.<type>`,
    each field given there replaces the job's) where the role sets it, else the job's own."""
    roles = getattr(spec.target.spec, "roles", None) if spec.target is not None else None
    role = (roles or {}).get(rtype.lower())
    value: Any = role
    for step in loc:
        value = value.get(step) if isinstance(value, dict) else getattr(value, str(step), None)
    return ("roles", rtype.lower(), *loc) if role is not None and value is not None else tuple(loc)


def locate(spec: "SpecJob", loc: tuple[Any, ...]) -> tuple[Optional[str], Optional[int]]:
    """A spec field (a loc under `spec`) as diagnostics name it, and its line (the environment's
    override where it sets it, else the nearest enclosing key, else the document's first line)."""
    if spec.target is None:
        return None, None
    return _at(spec.target, loc)


def _at(target: Any, loc: tuple[Any, ...]) -> tuple[str, int]:
    line, _ = target.view.position(loc)
    return target.view.display(loc), line


def _name(live: dict[str, Any], compiled: dict[str, Any], at: Path) -> Optional[str]:
    for obj in (live, compiled):
        item = _get(obj, at)
        if isinstance(item, dict) and item.get("name"):
            return str(item["name"])
    return None


def _get(obj: Any, at: Path) -> Any:
    for step in at:
        if isinstance(obj, dict):
            obj = obj.get(step)
        elif isinstance(obj, list) and isinstance(step, int) and 0 <= step < len(obj):
            obj = obj[step]
        else:
            return None
    return obj


def _nodes(obj: dict[str, Any], adapter: Any) -> Optional[int]:
    """The pods `nodes` makes in `obj` (a job, or a run spec under `spec`): the replica counts of
    the kind's main roles, summed (a missing count is 1, as upstream defaults it)."""
    specs = (obj.get("spec") or {}).get(adapter.facts.replica_specs)
    if not isinstance(specs, dict):
        return None
    return sum(1 if (r or {}).get("replicas") is None else int(r["replicas"])
               for rtype, r in specs.items() if rtype.lower() in adapter.facts.main_roles)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, separators=(",", ":"))
