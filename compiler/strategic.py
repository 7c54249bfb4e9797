"""A strategic-merge patch for pod templates (the `podTemplate` escape hatch), directives included.

Kubernetes merges lists in a pod spec by key (containers by `name`, ports by
`containerPort`, ...) rather than replacing them. kubectl's implementation lives in Go
and no maintained Python port exists, so this covers the pod-template subset the spec
needs: maps merge recursively, `null` deletes a key, keyed lists merge item by item
(new items after the template's own, so a podTemplate env var can refer to spec.env
ones), metadata.finalizers merge as a set, other lists are replaced. The patch is applied in the compiler, so the output in
git is the final job with no patch left for reviewers to evaluate in their heads.

Directives are the ones kustomize (`kubectl kustomize`, what users check a patch with)
and the API server's strategic merge agree on, and `$retainKeys`: `$patch: delete` on a
map or on a keyed list's item (every item with that key goes), `$patch: replace` on a
map or as an item of a keyed list (`- $patch: replace`: the list is the patch's items),
`$retainKeys: [fields]` (the map keeps only those) and `$deleteFromPrimitiveList/finalizers`
(the API server honours both, kustomize writes them out as fields). Everything else starting with `$` is refused by `problems`
with the reason (kustomize and the API server disagree on it, or write it into the
object), so nothing here is ever copied into the output. tests/compiler/strategic/
test_strategic_directives.py holds `merge` to `kubectl kustomize` and `kubectl patch`,
test_strategic_merge_keys.py the key tables to the API server's OpenAPI.
"""

from __future__ import annotations

from typing import Any, Iterator, NamedTuple

from schemas.jsoncopy import json_copy

# field name -> merge key, for list fields of PodTemplateSpec (and its containers), as the
# v1.32 API types tag them (patchStrategy merge); every other list is replaced as a whole
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "topologySpreadConstraints": "topologyKey",
    "ownerReferences": "uid",
}
# lists of strings the API types merge as sets (ObjectMeta's finalizers): union, template's first
SETS = frozenset({"finalizers"})
# the pod template's other list fields (replaced as a whole), for the one check that needs to
# know a field is a list: kustomize refuses a `{$patch: ...}` map written in its place (names
# that are a list everywhere in a pod template: not dnsConfig.options, flexVolume's is a map)
ATOMIC_LISTS = frozenset({
    "tolerations", "args", "command", "envFrom", "readinessGates", "sysctls", "supplementalGroups",
    "nameservers", "searches", "resizePolicy", "claims", "add", "drop", "nodeSelectorTerms",
    "matchExpressions", "matchFields", "preferredDuringSchedulingIgnoredDuringExecution", "items", "sources",
    "matchLabelKeys", "values",
})
PATCH, RETAIN, DELETE_FROM = "$patch", "$retainKeys", "$deleteFromPrimitiveList/"
_SCALARS = frozenset((str, int, float, bool))  # immutable: merged in as they are, never copied


def _directive(value: Any) -> Any:
    return value.get(PATCH) if isinstance(value, dict) else None


def _is_marker(item: Any) -> bool:
    """`- $patch: replace` as an item of a keyed list."""
    return isinstance(item, dict) and item.get(PATCH) == "replace" and len(item) == 1


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """Return `base` with `patch` merged in; neither argument is modified. Directives are
    applied, never copied (`problems` refuses the ones this does not apply).

    `base` is copied once here and the patch merged into that copy in place: copying the
    map at every level again (`copy.deepcopy`, as this did) made merging a large part of a
    build whose jobs have podTemplates (each template is merged once per replica type, for the
    review rules and for lowering; bench/README.md, "Figures the compiler's code cites")."""
    return _merge(json_copy(base), patch, field)


def _merge(base: Any, patch: Any, field: str) -> Any:
    """`merge` on a `base` the caller owns: changed in place where it is a map or keyed list."""
    if isinstance(patch, dict):
        out = base if isinstance(base, dict) and patch.get(PATCH) != "replace" else {}
        # A scalar value is written inline and the directive passes run only for a map that
        # has a `$` key, which few have (what it saved: bench/README.md).
        directed = False
        for key, value in patch.items():
            if isinstance(key, str) and key.startswith("$"):
                directed = True
                continue
            if value.__class__ in _SCALARS:  # replaces what was there, as the last line below
                out[key] = value
            elif value is None or _directive(value) == "delete":
                out.pop(key, None)
            else:
                out[key] = _merge(out.get(key), value, key)
        if not directed:
            return out
        for key, gone in patch.items():
            named = key[len(DELETE_FROM):] if isinstance(key, str) and key.startswith(DELETE_FROM) else None
            if named in SETS and isinstance(out.get(named), list) and isinstance(gone, list):
                out[named] = [v for v in out[named] if v not in gone]
        retain = patch.get(RETAIN)
        if isinstance(retain, list):
            out = {k: v for k, v in out.items() if k in retain}
        return out
    if isinstance(patch, list) and field in MERGE_KEYS:
        if any(_is_marker(item) for item in patch):
            return [_merge(None, item, "") for item in patch if not _is_marker(item)]
        return _merge_list(base if isinstance(base, list) else [], patch, MERGE_KEYS[field])
    if isinstance(patch, list) and field in SETS:
        have = list(base) if isinstance(base, list) else []
        return have + [v for i, v in enumerate(patch) if v not in have and v not in patch[:i]]
    return json_copy(patch)


def _merge_list(out: list[Any], patch: list[Any], key: str) -> list[Any]:
    for item in patch:
        if not isinstance(item, dict) or _is_marker(item):
            continue  # `problems` refuses both
        same = [i for i, have in enumerate(out) if isinstance(have, dict) and have.get(key) == item.get(key)]
        if _directive(item) == "delete":
            out = [have for i, have in enumerate(out) if i not in same]
        elif same:
            out[same[0]] = _merge(out[same[0]], item, "")
        else:
            out.append(_merge(None, item, ""))
    return out


def written(patch: Any) -> Any:
    """What the patch writes, for rules that read the patch itself: directive keys dropped,
    `$patch` items (deletions, replace markers) turned into None so list indexes still
    match the patch's positions."""
    if isinstance(patch, dict):
        return {k: written(v) for k, v in patch.items()
                if not (isinstance(k, str) and k.startswith("$")) and _directive(v) != "delete"}
    if isinstance(patch, list):
        return [None if _directive(item) is not None else written(item) for item in patch]
    return patch


def directives(patch: Any, loc: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Where the patch has a directive (a `$` key), relative to the patch."""
    if isinstance(patch, dict):
        for key, value in patch.items():
            if isinstance(key, str) and key.startswith("$"):
                yield loc + (key,)
            else:
                yield from directives(value, loc + (key,))
    elif isinstance(patch, list):
        for i, item in enumerate(patch):
            yield from directives(item, loc + (i,))


# --- directives the merge does not apply: refused where they are written --------------------

class Problem(NamedTuple):
    loc: tuple[Any, ...]  # relative to podTemplate
    message: str
    fix: str


_WHOLE = "the pod template lowering writes (the framework container, its image, ports and env)"


def problems(patch: Any) -> Iterator[Problem]:
    """Every directive in a podTemplate that `merge` would not apply as kustomize does."""
    if not isinstance(patch, dict):
        return  # keys at the top (`$patch` included) are rules._pod_template's: only metadata, spec
    spec = patch.get("spec")
    for key in (PATCH, RETAIN):
        if isinstance(spec, dict) and key in spec:
            yield Problem(("spec", key), f"{key} on podTemplate.spec would drop {_WHOLE}",
                          "put it on the field it is about, e.g. spec.securityContext or a container")
    for key, value in patch.items():
        if isinstance(value, dict):
            yield from _map((key,), value, literal="", skip=(PATCH, RETAIN) if key == "spec" else ())


def _map(loc: tuple[Any, ...], node: dict[Any, Any], literal: str, skip: tuple[str, ...] = (),
         item_key: str = "") -> Iterator[Problem]:
    """One map of the patch. `literal` says why directives are taken as written here (the
    map is inside a replaced map or list); `item_key` is the merge key when it is a keyed
    list's item."""
    directive = None if PATCH in skip else node.get(PATCH)  # refused on podTemplate.spec
    for key, value in node.items():
        if key in skip or not (isinstance(key, str) and key.startswith("$")):
            continue
        if literal:
            yield Problem(loc + (key,), f"{key} is not applied inside {literal}",
                          "write it as it should be, without directives: it replaces what was there")
        elif key == PATCH:
            yield from _patch_value(loc, node, item_key)
        elif key == RETAIN:
            yield from _retain(loc, node, value)
        elif key.startswith(DELETE_FROM) and key[len(DELETE_FROM):] in SETS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                yield Problem(loc + (key,), f"{key} must be a list of the values to remove", "write e.g. [example.com/x]")
        else:
            yield from _unknown(loc + (key,), key)
    inner = literal or ("a map with $patch: replace" if directive == "replace" else "")
    for key, value in node.items():
        if isinstance(key, str) and key.startswith("$") or directive == "delete":
            continue
        if isinstance(value, dict) and PATCH in value and not inner and key in (*MERGE_KEYS, *ATOMIC_LISTS, *SETS):
            yield Problem(loc + (key, PATCH), f"{key} is a list, and kustomize refuses a $patch map in its place",
                          f"write {key}: null to remove it, or {key}: [{{$patch: replace}}] to empty it"
                          if key in MERGE_KEYS else f"write {key}: null to remove it, or {key}: [] to empty it")
        elif isinstance(value, dict):
            yield from _map(loc + (key,), value, inner)
        elif isinstance(value, list):
            yield from _list(loc + (key,), str(key), value, inner)


def _patch_value(loc: tuple[Any, ...], node: dict[Any, Any], item_key: str) -> Iterator[Problem]:
    value = node[PATCH]
    if value == "delete":
        extra = [k for k in node if k not in (PATCH, item_key)]
        if extra:
            keep = f"{item_key} and $patch" if item_key else "$patch"
            yield Problem(loc + (extra[0],), f"$patch: delete removes this {'item' if item_key else 'map'},"
                          f" so '{extra[0]}' beside it would be ignored", f"keep only {keep}")
    elif value == "replace" and item_key:
        yield Problem(loc + (PATCH,), "$patch: replace on one item of a keyed list is not applied alike"
                      " (kustomize ignores the item, the API server empties the whole list)",
                      "set the fields the item must lose to null beside the new ones (e.g. emptyDir: null),"
                      " or replace the whole list with a `- $patch: replace` item")
    elif value not in ("delete", "replace"):
        hint = "maps and keyed lists merge by default; remove it" if value == "merge" else "use delete or replace"
        yield Problem(loc + (PATCH,), f"unknown $patch value {value!r}", hint)


def _retain(loc: tuple[Any, ...], node: dict[Any, Any], value: Any) -> Iterator[Problem]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        yield Problem(loc + (RETAIN,), "$retainKeys must be a list of field names", "write e.g. [fsGroup]")
        return
    dropped = [k for k in node if not str(k).startswith("$") and k not in value and node[k] is not None]
    if dropped:
        yield Problem(loc + (dropped[0],), f"'{dropped[0]}' is set here but not listed in $retainKeys,"
                      " which clears every field it does not list", f"add {dropped[0]} to $retainKeys")


def _unknown(loc: tuple[Any, ...], key: str) -> Iterator[Problem]:
    name, _, field = key.partition("/")
    if name == "$setElementOrder":
        yield Problem(loc, f"$setElementOrder is not supported: the compiler keeps the template's order and"
                      f" appends new items (kustomize writes the directive out as a field)",
                      f"to set the order of {field or 'a list'}, list all of it in that order with a"
                      " `- $patch: replace` item")
    elif name == "$deleteFromPrimitiveList":
        yield Problem(loc, f"$deleteFromPrimitiveList is only for metadata.finalizers: podTemplate replaces"
                      f" {field or 'this list'} as a whole", f"write {field or 'the list'} as it should be")
    else:
        yield Problem(loc, f"unknown directive '{key}' (no pod field starts with $)",
                      "use $patch: delete, $patch: replace or $retainKeys")


def _list(loc: tuple[Any, ...], field: str, items: list[Any], literal: str) -> Iterator[Problem]:
    key = MERGE_KEYS.get(field)
    if key is None and not literal:
        literal = f"{field}, which podTemplate replaces as a whole"
    replaced = key is not None and any(_is_marker(item) for item in items)
    deleted = {str(item.get(key)) for item in items if _directive(item) == "delete" and key in item} if key else set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        if literal:
            yield from _map(loc + (i,), item, literal)
        elif _is_marker(item):
            continue
        elif item.get(PATCH) == "delete" and key not in item:
            yield Problem(loc + (i, PATCH), f"$patch: delete in {field} needs the item's {key}",
                          f"add {key}: <the item to delete>")
        elif item.get(PATCH) is None and key in item and str(item[key]) in deleted:
            yield Problem(loc + (i, key), f"{field} deletes and sets {key} {item[key]!r} in one patch, which"
                          " kustomize and the API server do not apply in order (a delete after the item keeps it)",
                          "keep one of them; to swap an item's fields, set the old ones to null beside the new"
                          " (e.g. emptyDir: null)")
        else:
            yield from _map(loc + (i,), item, "a list with a `- $patch: replace` item" if replaced else "",
                            item_key=key or "")
