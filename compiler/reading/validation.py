"""Turn pydantic validation errors into positioned, teaching diagnostics.

pydantic reports a `loc` tuple and an error type; users need `file:line:col`, a field
path they can search for, what is wrong and how to fix it. The `loc` can contain union
tags and validator names that are not keys of the document, so it is walked against
the data to find the real path. Messages of our own validators already carry a fix
after "; "; pydantic's built-in types get theirs from the table below, with a
did-you-mean for misspelled field names and choices. A misspelled required field is one
mistake and one diagnostic: the unknown key's, whose did-you-mean names the field. A key
written one level too high (`queue` beside `scheduling`) is pointed to the child object it
belongs in.
"""

from __future__ import annotations

import typing
from typing import Any, Callable, Optional

from pydantic import BaseModel, ValidationError

from compiler.diagnostics import Diagnostic, closest, split_message
from schemas.loader import Document, Loc


def data_path(data: Any, loc: Loc) -> Loc:
    """The part of pydantic's `loc` that names real keys/indices of `data`."""
    path: list[Any] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:
            path.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and not _is_tag(part):
            path.append(part)  # a missing or unknown key still belongs to the path
            node = None
    return tuple(path)


# Union tags of schemas/trainjob.py; pydantic puts them in `loc` but they are not keys.
_TAGS = frozenset({
    "env:value", "env:secret", "env:configMap", "switch", "object", "auto", "count", "runtime:name", "runtime:ref",
})
# Our own discriminated unions: their message lists the accepted shapes, we add what was given.
_UNION_ERRORS = frozenset({"env_value", "gang_value", "processes_value", "runtime_value"})


def _is_tag(part: str) -> bool:
    return part in _TAGS or "[" in part


def format_path(path: Loc) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def describe_value(value: Any) -> str:
    """How a diagnostic names a value it did not expect ("the string 'x'", "a mapping")."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"the string '{value}'"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _model_at(model: type[BaseModel], path: Loc) -> Optional[type[BaseModel]]:
    """The model class that owns the last key of `path`, for did-you-mean suggestions."""
    current: Any = model
    keyed = False  # the previous field was a mapping: this part is one of its keys
    for part in path[:-1]:
        if isinstance(part, int) or keyed:
            keyed = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        info = current.model_fields.get(str(part))
        if info is None:
            return None
        keyed = _is_mapping(info.annotation)
        current = _unwrap(info.annotation)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _is_mapping(annotation: Any) -> bool:
    """dict[K, V] or Optional[dict[K, V]] (environments, roles): the next path part is a key."""
    if typing.get_origin(annotation) is dict:
        return True
    return any(typing.get_origin(arg) is dict for arg in typing.get_args(annotation))


def _unwrap(annotation: Any) -> Any:
    """Optional[X], list[X], dict[K, X], Annotated unions -> the first model class inside."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin is dict and len(args) == 2:
        return _unwrap(args[1])
    for arg in args:
        found = _unwrap(arg)
        if isinstance(found, type) and issubclass(found, BaseModel):
            return found
    return annotation


def _suggest(word: str, choices: list[str]) -> str:
    close = closest(word, choices)
    return f"did you mean '{close}'?" if close else ""


def _is_collection(annotation: Any) -> bool:
    """A list or a mapping of values (storage, roles, environments), Optional or not."""
    kinds = (dict, list)
    return typing.get_origin(annotation) in kinds or any(typing.get_origin(a) in kinds for a in typing.get_args(annotation))


def _moved(field: str, owner: type[BaseModel]) -> str:
    """`did you mean 'scheduling.queue'?` for a key written one level too high: a field of one
    of the owner's own child objects (lists and maps of objects left out: their next level
    is an index or a name, not the field)."""
    homes = [
        f"'{name}.{field}'" for name, info in owner.model_fields.items()
        if not _is_collection(info.annotation)
        and isinstance(child := _unwrap(info.annotation), type) and issubclass(child, BaseModel)
        and field in child.model_fields
    ]
    return f"did you mean {' or '.join(homes)}?" if homes else ""


def _explain(error: dict[str, Any], path: Loc, root: type[BaseModel]) -> tuple[str, str]:
    kind = error["type"]
    key_error = bool(error["loc"]) and error["loc"][-1] == "[key]"  # a mapping key, not its value
    value = error.get("input")
    ctx = error.get("ctx") or {}
    field = str(path[-1]) if path else "document"
    if kind == "missing":
        return "is required", f"add '{field}'"
    if kind == "invalid_key" or (kind == "string_type" and key_error):
        return f"the key {value!r} is not a string", "quote the key"
    if kind in _UNION_ERRORS:
        what, fix = split_message(error["msg"])
        return f"{what}, not {describe_value(value)}", fix
    if kind == "extra_forbidden":
        owner = _model_at(root, path)
        known = sorted(owner.model_fields) if owner else []
        hint = _suggest(field, known) or (_moved(field, owner) if owner else "")
        allowed = f"allowed here: {', '.join(known)}" if known else "remove it"
        return f"unknown field '{field}'", f"{hint} {allowed}".strip() if hint else allowed
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        choices = [c.strip().strip("'") for c in expected.replace(" or ", ", ").split(",")]
        hint = _suggest(str(value), choices) if isinstance(value, str) else ""
        return (
            f"{describe_value(value)} is not allowed",
            f"{hint + ' ' if hint else ''}use one of {', '.join(choices)}",
        )
    if kind in {"int_type", "int_from_float", "int_parsing"}:
        return f"expected a whole number, got {describe_value(value)}", "write a number without quotes, e.g. 4"
    if kind in {"string_type", "str_type"}:
        return f"expected a string, got {describe_value(value)}", "quote the value"
    if kind == "bool_type":
        return f"expected true or false, got {describe_value(value)}", "write true or false without quotes"
    if kind in {"model_type", "dict_type", "model_attributes_type"}:
        return f"expected a mapping, got {describe_value(value)}", "write key: value pairs under it"
    if kind == "list_type":
        return f"expected a list, got {describe_value(value)}", "write it as a YAML list ([a, b] or - items)"
    if kind in {"greater_than_equal", "greater_than"}:
        bound = ctx.get("ge", ctx.get("gt"))
        op = ">=" if kind == "greater_than_equal" else ">"
        return f"{value} is too small", f"use a value {op} {bound}"
    if kind in {"less_than_equal", "less_than"}:
        bound = ctx.get("le", ctx.get("lt"))
        op = "<=" if kind == "less_than_equal" else "<"
        return f"{value} is too large", f"use a value {op} {bound}"
    if kind == "too_short":
        return "must not be empty", "add at least one entry"
    if kind == "string_too_short":
        return "must not be empty", "give a value"
    if kind == "value_error":
        return split_message(str(ctx.get("error", error["msg"])))
    return split_message(error["msg"])


def _misspelled(errors: list[tuple[dict[str, Any], Loc]], root: type[BaseModel]) -> set[Loc]:
    """Paths of required fields that an unknown key in the same mapping misspells (`framwork`
    for `framework`): one mistake, so one diagnostic, the unknown key's, whose did-you-mean
    already names the field."""
    out = set()
    for error, path in errors:
        if error["type"] == "extra_forbidden" and path:
            owner = _model_at(root, path)
            meant = closest(str(path[-1]), sorted(owner.model_fields)) if owner else None
            if meant is not None:
                out.add(path[:-1] + (meant,))
    return out


def diagnostics_from(
    exc: ValidationError,
    doc: Document,
    *,
    root: type[BaseModel],
    data: Any = None,
    position: Optional[Callable[[Loc, bool], tuple[int, int]]] = None,
    display: Optional[Callable[[Loc], str]] = None,
) -> list[Diagnostic]:
    """Diagnostics for every error in `exc`, positioned through `doc` (or `position`)."""
    data = doc.data if data is None else data
    out = []
    errors = [(error, data_path(data, error["loc"])) for error in exc.errors(include_url=False)]
    misspelled = _misspelled(errors, root)
    for error, path in errors:
        if error["type"] == "missing" and path in misspelled:
            continue  # the unknown key beside it is reported, with this field as its did-you-mean
        what, fix = _explain(error, path, root)
        # a missing field is reported at the object that lacks it
        at = path[:-1] if error["type"] == "missing" else path
        prefer_key = error["type"] in {"missing", "extra_forbidden", "invalid_key"} or (
            bool(error["loc"]) and error["loc"][-1] == "[key]"
        )
        if position is not None:
            line, col = position(at, prefer_key)
        else:
            line, col = doc.position(at, prefer_key=prefer_key)
        shown = display(path) if display else format_path(path)
        out.append(Diagnostic(doc.file, line, col, shown, what, fix))
    return out
