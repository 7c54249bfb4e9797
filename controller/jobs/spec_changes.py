"""What changed between a run's spec and the job's spec, in words for an Event.

The Events that say a change is held (a running job) or will not run (a finished one) must
name the change, so a user reading `kubectl describe` knows which edit they are about:
`Worker.replicas 2 -> 3`, `Worker.template.spec.containers[pytorch].image "a:1" -> "a:2"`.
Paths are the job's spec fields with the replica-spec map's name left out; list items with
a `name` (containers, env, volumes, ports) are keyed by it, other lists are one value. A
long list of changes is cut after `LIMIT` entries, so an Event stays one readable line.
"""

from __future__ import annotations

from typing import Any

import orjson

from foundation.jsondiff import ABSENT, leaves

LIMIT = 6
VALUE = 40  # characters of a value shown before it is cut


def describe(old: dict[str, Any], new: dict[str, Any], *, replica_specs: str) -> str:
    """`old -> new` of two run specs (foundation.runs.spec.run_spec) as one line."""
    found: list[str] = []
    if old.get("restartScope") != new.get("restartScope"):
        found.append(f"restart scope {old.get('restartScope')} -> {new.get('restartScope')}")
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    _walk(old_spec.get(replica_specs), new_spec.get(replica_specs), (), found)
    for key in sorted(set(old_spec) | set(new_spec)):
        if key != replica_specs:
            _walk(old_spec.get(key, ABSENT), new_spec.get(key, ABSENT), (key,), found)
    if not found:
        return "no field of the run's shape"  # the Event's words as shipped ("shape": the run spec)
    more = len(found) - LIMIT
    return "; ".join(found[:LIMIT]) + (f"; and {more} more" if more > 0 else "")


def _show(value: Any) -> str:
    if value is ABSENT or value is None:
        return "(none)"
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= VALUE else text[:VALUE - 3] + "..."


def _named(items: list[Any]) -> dict[str, Any] | None:
    """A list whose items are all objects with distinct names, by name; else None."""
    if not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    by_name = {i["name"]: i for i in items}
    return by_name if len(by_name) == len(items) else None


class _Named(str):
    """A list item's name in a path: written `[name]`."""


def _descend(old: Any, new: Any) -> list[tuple[Any, Any, Any]] | None:
    """Mappings key by key (sorted), lists of named items by name; an added or removed subtree
    is one entry."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [(key, old.get(key, ABSENT), new.get(key, ABSENT)) for key in sorted(set(old) | set(new), key=str)]
    if isinstance(old, list) and isinstance(new, list) and old and new:
        before, after = _named(old), _named(new)
        if before is not None and after is not None:
            return [(_Named(key), before.get(key, ABSENT), after.get(key, ABSENT))
                    for key in [*before, *(k for k in after if k not in before)]]
    return None


def _path(steps: tuple[Any, ...]) -> str:
    """`Worker.template.spec.containers[pytorch].image`: keys dotted, named items bracketed."""
    out = ""
    for step in steps:
        out += f"[{step}]" if isinstance(step, _Named) else (f".{step}" if out else str(step))
    return out


def _walk(old: Any, new: Any, path: tuple[Any, ...], found: list[str]) -> None:
    for steps, before, after in leaves(old, new, _descend, path):
        where = _path(steps)
        if before is ABSENT:
            found.append(f"{where} added")
        elif after is ABSENT:
            found.append(f"{where} removed")
        elif isinstance(before, (dict, list)) or isinstance(after, (dict, list)):
            found.append(f"{where} changed")
        else:
            found.append(f"{where} {_show(before)} -> {_show(after)}")
