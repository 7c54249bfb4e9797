"""Each podTemplate field checked against Kubernetes' own schema, as the API server would.

`schemas/podtemplate.schema.json` is kube-apiserver v1.32's PodTemplateSpec turned into the
schema of a strategic-merge patch (schemas/podtemplate.py says how). The jsonschema library
walks a podTemplate's `metadata` and `spec` through it (the job's and each role's, and the
affinities `scheduling` and a role's placement write, as the pod field they become); this
module only turns each of its errors into the project's diagnostic: the field's line (in the spec, or in the environment
override that wrote it), its path, what is wrong in the user's words and a fix (did-you-mean
for an unknown field, the allowed values of an enum, the shape a list or a quantity takes).
One thing JSON Schema cannot say is checked beside it: items of a list the server keys by
fields (`x-kubernetes-list-map-keys`: containers and volumes by name, ports by number and
protocol) are unique.

Cost: jsonschema's import and the 270 kB schema are paid once per process, and only by a run
whose spec has a podTemplate (`check` returns before touching either); the CLI's own import
stays free of both (tests/compiler/cli/test_cli_startup.py).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterator

from compiler.diagnostics import Diagnostic, closest
from compiler.reading.resolve import Target
from compiler.reading.validation import describe_value

FORMAT = "x-trainforge-format"  # schemas.podtemplate.FORMAT, without importing the schema module early
PARTS = {"metadata": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "spec": "io.k8s.api.core.v1.PodSpec"}
QUANTITY_FIX = "write an amount such as 4, 500m or 16Gi"
NAME_FIXES = {
    "dns-label": ("is not a DNS label", "use at most 63 lower-case letters, digits and '-', starting and ending"
                  " with a letter or digit"),
    "iana-svc-name": ("is not an IANA service name (what a port name must be)", "use at most 15 lower-case letters,"
                      " digits and '-', with at least one letter and no '--', e.g. metrics"),
}
_TYPE_WORDS = {"object": "a mapping", "array": "a list", "string": "a string", "integer": "a whole number",
               "number": "a number", "boolean": "true or false"}
_TYPE_FIXES = {"object": "write key: value pairs under it", "array": "write it as a YAML list ([a, b] or - items)",
               "integer": "write a number without quotes, e.g. 4", "number": "write a number without quotes",
               "boolean": "write true or false without quotes"}


@functools.cache
def _schema() -> dict[str, Any]:
    from schemas.podtemplate import load

    return load()


@functools.cache
def _validators() -> dict[str, Any]:
    """One validator per podTemplate part, sharing the schema (built once per process)."""
    from jsonschema import Draft202012Validator

    root = _schema()
    return {part: Draft202012Validator({**root, "$ref": f"#/$defs/{name}"}) for part, name in PARTS.items()}


def check(target: Target) -> Iterator[Diagnostic]:
    """Every field-level problem of the job's pod template patches (its podTemplate and each role's)
    and of the affinities the spec writes (registered in `rules.RULES`). The top level of a patch
    (only metadata and spec, each a mapping) is `rules._pod_template`'s."""
    for place, patch in _sites(target):
        for part in PARTS:
            value = patch.get(part)
            if isinstance(value, dict):
                part_schema = {"$ref": f"#/$defs/{PARTS[part]}"}
                if not _part_conforms(part, value, part_schema):  # jsonschema says what and where
                    for error in _validators()[part].iter_errors(value):
                        yield from _explain(target, place, (part, *error.absolute_path), error)
                yield from _unique_keys(target, place, (part,), value, part_schema)


Place = Callable[[tuple[Any, ...]], tuple[Any, ...]]  # a loc in the checked pod template -> the spec's


def _sites(target: Target) -> list[tuple[Place, dict[str, Any]]]:
    """(place, patch) to check: each pod template patch where it is written, and each affinity the
    spec writes, checked as the pod field it becomes (`{spec: {affinity: ...}}`)."""
    from compiler.targets.roles import all_pod_patches

    spec = target.spec
    out: list[tuple[Place, dict[str, Any]]] = [(_under(at), patch) for at, patch in all_pod_patches(spec)]
    placements = [(("scheduling",), spec.scheduling.affinity)] + [
        (("roles", name, "scheduling"), role.scheduling.affinity) for name, role in spec.roles.items()
        if role.scheduling is not None]
    for at, affinity in placements:
        if affinity is not None:
            out.append((_affinity_of(at), {"spec": {"affinity": affinity}}))
    return out


def _under(at: tuple[Any, ...]) -> Place:
    return lambda loc: (*at, *loc)


def _affinity_of(at: tuple[Any, ...]) -> Place:
    return lambda loc: (*at, *loc[1:])  # ("spec", "affinity", ...) -> at + ("affinity", ...)


# --- the common case, without jsonschema's import --------------------------------------------

MAX_VERDICTS = 4096  # podTemplate parts remembered by `_part_conforms`
_VERDICTS: dict[str, bool] = {}


def _part_conforms(part: str, value: dict[str, Any], schema: dict[str, Any]) -> bool:
    """`conforms`, remembered per part and value: a repository's jobs repeat a few podTemplates
    (a team's sidecar, a port), and walking each again through the schema made this rule a
    visible part of a build (bench/README.md, "Figures the compiler's code cites"). The key
    is the value's `repr`: the loader's plain data (dicts, lists, str, int, float, bool,
    None), whose repr tells `1`, `1.0`, `True` and `"1"` apart."""
    key = f"{part}:{value!r}"
    verdict = _VERDICTS.get(key)
    if verdict is None:
        verdict = conforms(value, schema)
        if len(_VERDICTS) < MAX_VERDICTS:
            _VERDICTS[key] = verdict
    return verdict


_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def conforms(value: Any, schema: dict[str, Any]) -> bool:
    """Whether `value` is valid against `schema`, for the keywords schemas/podtemplate.py writes.

    Importing jsonschema (with attrs, referencing and its meta-schemas) costs more CPU than the
    whole review of a thousand specs, and nearly every podTemplate is valid; so a valid one is
    recognised here, and jsonschema is imported to report the errors of the others, and is
    the authority on them (a spec this finds wrong and jsonschema does not gets no error).
    test_pod_template_schema.py holds the two to the same verdict on the whole table."""
    ref = schema.get("$ref")
    if ref is not None and not conforms(value, _schema()["$defs"][ref.rsplit("/", 1)[-1]]):
        return False  # and the keywords beside $ref apply too (a list item's `not: null`)
    types = schema.get("type")
    if types is not None and not any(_is(value, t) for t in (types if isinstance(types, list) else [types])):
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "not" in schema and conforms(value, schema["not"]):
        return False
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < schema.get("minimum", value):
        return False
    if isinstance(value, list):
        items = schema.get("items")
        return items is None or all(conforms(item, items) for item in value)
    if isinstance(value, dict):
        return _object_conforms(value, schema)
    return True


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number"):
        return isinstance(value, int if kind == "integer" else (int, float)) and not isinstance(value, bool) \
            or (kind == "integer" and isinstance(value, float) and value.is_integer())
    return isinstance(value, _TYPES[kind])


def _object_conforms(value: dict[Any, Any], schema: dict[str, Any]) -> bool:
    if "else" in schema and "$patch" not in value and not all(r in value for r in schema["else"]["required"]):
        return False
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    patterns = schema.get("patternProperties", {})
    for key, item in value.items():
        if key in props:
            sub = props[key]
        elif any(re.search(p, key) for p in patterns):
            sub = next(patterns[p] for p in patterns if re.search(p, key))
        elif extra is False:
            return False
        elif isinstance(extra, dict):
            sub = extra
        else:
            continue
        if not conforms(item, sub):
            return False
    return True


# --- one jsonschema error -> diagnostics ----------------------------------------------------

def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = _schema()["$defs"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _explain_path(loc: tuple[Any, ...]) -> str:
    """`kubectl explain` for the field: the pod's own field names, list indexes left out."""
    return "pod." + ".".join(str(p) for p in loc if not isinstance(p, int))


def _suggest(word: str, choices: list[str]) -> str:
    close = closest(word, choices)
    return f"did you mean '{close}'? " if close else ""


def _unknown(key: Any, schema: dict[str, Any]) -> bool:
    """A key the object's schema does not know, as `_explain` reports it (directives are strategic.py's)."""
    return not str(key).startswith("$") and key not in schema.get("properties", {}) \
        and not any(re.match(p, str(key)) for p in schema.get("patternProperties", {}))


def _misspells(value: Any, loc: tuple[Any, ...], field: str) -> bool:
    """Whether the object `value` at `loc` (("spec", "securityContext")) holds an unknown key whose
    did-you-mean is `field`: `check` reports that key with `field` as its fix, which is also the
    fix for `field` being absent, so the absence is not reported a second time."""
    if not isinstance(value, dict) or not loc or loc[0] not in PARTS or field in value:
        return False
    schema = _resolve({"$ref": f"#/$defs/{PARTS[loc[0]]}"})
    for step in loc[1:]:
        schema = _resolve(schema.get("items", {}) if isinstance(step, int) else schema.get("properties", {}).get(step, {}))
    known = sorted(k for k in schema.get("properties", {}) if not k.startswith("$"))
    return any(_unknown(key, schema) and closest(str(key), known) == field for key in value)


def misspelled(pod_template: dict[str, Any], loc: tuple[Any, ...]) -> bool:
    """Whether the podTemplate misspells the field at `loc` (("spec", "securityContext",
    "runAsNonRoot")), an unknown key beside where it belongs: a rule that finds the field
    missing (compiler/review/policy.py) leaves it to this module's did-you-mean."""
    node: Any = pod_template
    for step in loc[:-1]:
        if isinstance(node, dict) and step in node:
            node = node[step]
        elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
            node = node[step]
        else:
            return False
    return _misspells(node, loc[:-1], str(loc[-1]))


def _explain(target: Target, place: Place, loc: tuple[Any, ...], error: Any) -> Iterator[Diagnostic]:
    at = place(loc)
    kind, value, schema = error.validator, error.instance, error.schema
    if kind == "additionalProperties":
        known = sorted(k for k in schema.get("properties", {}) if not k.startswith("$"))
        for key in value:
            if str(key).startswith("$"):
                continue  # directives, known or not: compiler/strategic.py says which act as written
            if _unknown(key, schema):
                listed = f"allowed here: {', '.join(known)}" if len(known) <= 12 else \
                    f"see `kubectl explain {_explain_path(loc)}` for the fields"
                yield target.view.error(at + (key,), f"unknown field '{key}'", _suggest(str(key), known) + listed,
                                        prefer_key=True)
    elif kind == "required":
        for field in error.validator_value:
            if field not in value and not _misspells(value, loc, field):
                yield target.view.error(at + (field,), f"is required (the API server refuses {_owner(loc)} without it)",
                                        f"add {field}", prefer_key=True)
    elif kind == "type":
        if not (isinstance(value, dict) and "$patch" in value):  # a directive in a list's place: strategic.py's
            yield target.view.error(at, *_wrong_type(loc, value, schema))
    elif kind == "enum":
        choices = [c for c in error.validator_value if c is not None]
        hint = _suggest(str(value), choices) if isinstance(value, str) else ""
        yield target.view.error(at, f"{describe_value(value)} is not one of the values Kubernetes allows here",
                                f"{hint}use one of {', '.join(choices)}")
    elif kind in ("pattern", "minimum") and schema.get(FORMAT) == "quantity":
        yield target.view.error(at, _not_a_quantity(loc, value), QUANTITY_FIX)
    elif kind == "pattern" and schema.get(FORMAT) in NAME_FIXES:
        what, fix = NAME_FIXES[schema[FORMAT]]
        yield target.view.error(at, f"'{value}' {what}", fix)
    elif kind == "not":
        yield target.view.error(at, "a list item is empty (null)", "remove the empty item or write its fields")
    else:  # a keyword the schema does not use today: jsonschema's own words
        yield target.view.error(at, error.message, f"see `kubectl explain {_explain_path(loc)}`")


def _owner(loc: tuple[Any, ...]) -> str:
    named = [p for p in loc if not isinstance(p, int)]
    return f"a {named[-1]} item" if named and isinstance(loc[-1], int) else f"{named[-1]}" if named else "the pod"


def _not_a_quantity(loc: tuple[Any, ...], value: Any) -> str:
    shown = repr(value) if isinstance(value, str) and value != value.strip() else f"'{value}'"
    if len(loc) >= 3 and loc[-2] in ("requests", "limits") and loc[-3] == "resources":
        return f"{loc[-1]} {loc[-2][:-1]} {shown} is not a Kubernetes quantity"
    return f"{shown} is not a Kubernetes quantity"


def _wrong_type(loc: tuple[Any, ...], value: Any, schema: dict[str, Any]) -> tuple[str, str]:
    types = [t for t in (schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")])
             if t != "null"]
    if schema.get(FORMAT) == "quantity":
        return _not_a_quantity(loc, value), QUANTITY_FIX
    if schema.get("x-kubernetes-int-or-string"):
        return f"expected a whole number or a string, got {describe_value(value)}", "write e.g. 8080 or http"
    expected = " or ".join(_TYPE_WORDS.get(t, t) for t in types)
    fix = _TYPE_FIXES.get(types[0], "quote the value") if types else "see the field's type"
    if types == ["string"] and isinstance(value, (bool, int, float)):
        fix = f'quote it: "{str(value).lower() if isinstance(value, bool) else value}"'
    elif types == ["array"] and isinstance(value, dict) and schema.get("x-kubernetes-patch-merge-key") == "name":
        if "name" in value:  # one item written without its '- '
            fix = f"write it as a list: - name: {value['name']} (the items merge by name)"
        else:  # NAME: value pairs, as spec.env takes them
            first = next(iter(value.items()), ("NAME", "value"))
            item = f"{{name: {first[0]}, value: {first[1]}}}" if loc[-1] == "env" else f"{{name: {first[0]}, ...}}"
            fix = f"write it as a list of items with a name, e.g. - {item}"
    return f"expected {expected}, got {describe_value(value)}", fix


# --- list-map keys: unique items --------------------------------------------------------------

def _unique_keys(target: Target, place: Place, loc: tuple[Any, ...], value: Any,
                 schema: dict[str, Any]) -> Iterator[Diagnostic]:
    """Walk the patch beside its schema; a keyed list (`x-kubernetes-list-map-keys`) holding two
    items with one key is refused by the API server (and merges unpredictably)."""
    schema = _resolve(schema)
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if props else (extra if isinstance(extra, dict) else None)
            if sub is not None and isinstance(item, (dict, list)):
                yield from _unique_keys(target, place, loc + (key,), item, sub)
    elif isinstance(value, list):
        items = schema.get("items") or {}
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:
            yield from _duplicates(target, place, loc, value, keys, _resolve(items))
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                yield from _unique_keys(target, place, loc + (i,), item, items)


def _duplicates(target: Target, place: Place, loc: tuple[Any, ...], items: list[Any], keys: list[str],
                item_schema: dict[str, Any]) -> Iterator[Diagnostic]:
    defaults = {k: (item_schema.get("properties", {}).get(k) or {}).get("default") for k in keys}
    seen: dict[tuple[Any, ...], int] = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "$patch" in item:
            continue  # directives: compiler/strategic.py judges them
        ident = tuple(item.get(k, defaults[k]) for k in keys)
        if ident in seen:
            shown = ", ".join(f"{k} {v!r}" for k, v in zip(keys, ident) if v is not None)
            yield target.view.error(place((*loc, i, keys[0])),
                                    f"{loc[-1]} has two items with {shown} (items {seen[ident]} and {i});"
                                    " the API server refuses a pod with both",
                                    f"merge them into one item, or give each its own {' and '.join(keys)}")
        else:
            seen[ident] = i

