"""What changed between a run's shape and the job's spec, in words for an Event.

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

LIMIT = 6
VALUE = 40  # characters of a value shown before it is cut


def describe(old: dict[str, Any], new: dict[str, Any], *, replica_specs: str) -> str:
    """`old -> new` of two shapes (controller.jobs.revisions.shape) as one line."""
    found: list[str] = []
    if old.get("restartScope") != new.get("restartScope"):
        found.append(f"restart scope {old.get('restartScope')} -> {new.get('restartScope')}")
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    _walk(old_spec.get(replica_specs), new_spec.get(replica_specs), "", found)
    for key in sorted(set(old_spec) | set(new_spec)):
        if key != replica_specs:
            _walk(old_spec.get(key, _ABSENT), new_spec.get(key, _ABSENT), key, found)
    if not found:
        return "no field of the run's shape"
    more = len(found) - LIMIT
    return "; ".join(found[:LIMIT]) + (f"; and {more} more" if more > 0 else "")


class _Absent:
    def __repr__(self) -> str:
        return "absent"


_ABSENT = _Absent()


def _show(value: Any) -> str:
    if value is _ABSENT or value is None:
        return "(none)"
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= VALUE else text[:VALUE - 3] + "..."


def _named(items: list[Any]) -> dict[str, Any] | None:
    """A list whose items are all objects with distinct names, by name; else None."""
    if not all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        return None
    by_name = {i["name"]: i for i in items}
    return by_name if len(by_name) == len(items) else None


def _walk(old: Any, new: Any, path: str, found: list[str]) -> None:
    if old == new:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            _walk(old.get(key, _ABSENT), new.get(key, _ABSENT), f"{path}.{key}" if path else str(key), found)
        return
    if isinstance(old, list) and isinstance(new, list) and old and new:
        before, after = _named(old), _named(new)
        if before is not None and after is not None:
            for key in [*before, *(k for k in after if k not in before)]:
                _walk(before.get(key, _ABSENT), after.get(key, _ABSENT), f"{path}[{key}]", found)
            return
    if old is _ABSENT:
        found.append(f"{path} added")
    elif new is _ABSENT:
        found.append(f"{path} removed")
    elif isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
        found.append(f"{path} changed")
    else:
        found.append(f"{path} {_show(old)} -> {_show(new)}")
