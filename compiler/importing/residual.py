"""What the first-class fields leave over: a strategic-merge patch from one pod template to another.

The importer lifts every field of a job it has a spec field for, compiles that spec and
compares each compiled pod template with the manifest's (both in `sameness.canonical`
form). What still differs has no field of its own, and becomes `podTemplate`: the patch
that turns the compiled template into the manifest's, in the directives `compiler/strategic.py`
applies (maps merge, `null` deletes, keyed lists merge item by item, `$patch: delete` takes
an item out, a `- $patch: replace` item replaces a list whose order the merge could not
reach). Values are written as the manifest wrote them, without the pod defaults the
canonical form filled in (`shown`: the manifest's template with `poddefaults.strip`); a value
that is only a default is a `null`, which leaves the default to the API server.

A patch for several replica types at once is `common`: what each of them says alike, so a
`podTemplate` that all roles share is written once and each role's own patch keeps the rest.
"""

from __future__ import annotations

from typing import Any, Optional

from compiler.importing.sameness import UNORDERED, keyed, plain, same
from compiler.strategic import MERGE_KEYS, PATCH

Obj = dict[str, Any]
_NOTHING = object()
KEYED_MAPS = ("labels", "annotations")


def patch(base: Obj, target: Obj, shown: Obj) -> Obj:
    """The patch that turns pod template `base` into `target` ({} when they are the same);
    `shown` is `target` as it is written (defaults left out). A template's `metadata` and
    `spec` are never deleted whole (a podTemplate must not null them): their fields are."""
    out = _map(base, target, shown)
    for part in ("metadata", "spec"):
        if part in out and out[part] is None:
            out[part] = _map(base[part], {}, {})
    return out


def _map(base: Obj, target: Obj, shown: Any) -> Obj:
    shown = shown if isinstance(shown, dict) else {}
    out: Obj = {}
    for key, want in target.items():
        if key not in base and key not in shown:
            continue  # a default the manifest's other fields imply (a hostNetwork pod's hostPort)
        if key not in base or not same(base[key], want):
            value = _value(base.get(key, _NOTHING), want, shown.get(key, _NOTHING), str(key))
            if value not in ({}, []) or not isinstance(base.get(key), (dict, list)):
                out[key] = value
    for key in base:
        if key not in target:
            # a label or annotation map loses its keys one by one: each reads as the job's own
            out[key] = {k: None for k in base[key]} if key in KEYED_MAPS and isinstance(base[key], dict) else None
    return out


def _value(have: Any, want: Any, shown: Any, field: str) -> Any:
    if shown is _NOTHING:  # the manifest's value is the default: delete what the spec wrote
        return None
    if isinstance(have, dict) and isinstance(want, dict):
        return _map(have, want, shown)
    if isinstance(have, list) and isinstance(want, list) and field in MERGE_KEYS:
        key = keyed(field, have)
        if key is not None and keyed(field, want) == key and keyed(field, shown) == key:
            return _list(have, want, shown, field, key)
    return plain(shown)


def _list(have: list[Obj], want: list[Obj], shown: list[Obj], field: str, key: str) -> list[Obj]:
    old = {str(i[key]): i for i in have}
    new = {str(i[key]): i for i in want}
    written = {str(i[key]): i for i in shown}
    merged = [n for n in old if n in new] + [n for n in new if n not in old]
    if field not in UNORDERED and merged != list(new):
        return [{PATCH: "replace"}, *(plain(i) for i in shown)]
    items: list[Obj] = []
    for name, item in new.items():
        if name not in old:
            items.append(plain(written[name]))
        elif not same(old[name], item) and (changed := _map(old[name], item, written[name])):
            items.append({key: plain(item[key]), **changed})
    items += [{key: plain(old[name][key]), PATCH: "delete"} for name in old if name not in new]
    return items


def common(patches: list[Obj]) -> Obj:
    """What every patch of `patches` writes alike: maps by key, items of keyed lists by their
    key (a container's fields one by one), anything else as a whole value."""
    if not patches:
        return {}
    first, rest = patches[0], patches[1:]
    out: Obj = {}
    for key, value in first.items():
        if not all(key in p for p in rest):
            continue
        others = [p[key] for p in rest]
        if isinstance(value, dict) and all(isinstance(o, dict) for o in others) and PATCH not in value:
            shared = common([value, *others])
            if shared:
                out[key] = shared
        elif (items := _keyed_items(str(key), [value, *others])) is not None:
            shared_items = _common_items(*items)
            if shared_items:
                out[key] = shared_items
        elif all(same(value, o) for o in others):
            out[key] = value
    return out


def _keyed_items(field: str, lists: list[Any]) -> Optional[tuple[str, list[dict[str, Obj]]]]:
    """(merge key, each list as key -> item) when every list merges by key item by item."""
    key = MERGE_KEYS.get(field)
    if key is None or not all(isinstance(v, list) and all(isinstance(i, dict) and key in i and PATCH not in i
                                                          for i in v) for v in lists):
        return None
    return key, [{str(i[key]): i for i in v} for v in lists]


def _common_items(key: str, lists: list[dict[str, Obj]]) -> list[Obj]:
    out = []
    for name, item in lists[0].items():
        if all(name in other for other in lists[1:]):
            shared = common([item, *(other[name] for other in lists[1:])])
            if shared and set(shared) != {key}:
                out.append({key: item[key], **{k: v for k, v in shared.items() if k != key}})
    return out


def without(patch_: Obj, shared: Obj) -> Obj:
    """`patch_` less what `shared` already writes (`common`'s remainder)."""
    out: Obj = {}
    for key, value in patch_.items():
        if key not in shared:
            out[key] = value
        elif isinstance(value, dict) and isinstance(shared[key], dict) and PATCH not in value:
            rest = without(value, shared[key])
            if rest:
                out[key] = rest
        elif (items := _keyed_items(str(key), [value, shared[key]])) is not None:
            merge_key, (mine, theirs) = items
            rest_items = []
            for name, item in mine.items():
                left = without(item, theirs[name]) if name in theirs else item
                if set(left) - {merge_key}:
                    rest_items.append({merge_key: item[merge_key], **left})
            if rest_items:
                out[key] = rest_items
    return out
