"""Applying a bundle's JSON6902 patches to its job, as `train-compile render` prints it.

`jsonpatch` is the reference (kustomize applies the same RFC 6902 operations), but it parses
every path into a `JsonPointer` object twice and deep-copies every value, which made
applying the patches most of rendering a repository of jobs (bench/README.md, "Figures the
compiler's code cites"). The overlays write one kind of operation only: `add` at a path
whose parents exist, ending in a mapping key or `-` (append to a list), and the tree puts a
`test` before a path through a list position (`guarded`). Those are applied here directly,
with the same meaning (the value copied, a key replaced if present; a test that holds
changes nothing); any other operation, or a path that does not walk cleanly, goes to
`jsonpatch` itself, one operation at a time and on the same document, so its result and its
errors stay exactly the library's. It sits beside schemas/bundle.py because
`Bundle.rendered_job()` is what applies patches, and overlays must not reach into compiler/
for it.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from schemas.bundle import JsonObject
from schemas.jsoncopy import json_copy

# What names a list item, in the order looked for: a container, volume or replicated job by
# its `name`, a Trainer v2 runtimePatches entry by its `manager`.
IDENTITY_KEYS = ("name", "manager")
# Where a path may step into a list item by position: a token that starts with a digit, first
# in the path from its second character on (what the walk below splits) or after a '/'.
_POSITION = re.compile(r"/[0-9]")


def guarded(job: Any, operations: Iterable[JsonObject]) -> list[JsonObject]:
    """`operations` with a `test` before the first one that walks through each list item by
    position, asserting that item's name (`.../containers/0/name` is `pytorch`). The patch
    then says which container or replicated job it means, for the reviewer, and kustomize
    refuses it (the test fails) rather than patching another item if the list has changed."""
    out: list[JsonObject] = []
    tested: set[str] = set()
    walked: set[str] = set()  # parents walked already: walking one again finds nothing new to test
    for operation in operations:
        parent = operation["path"].rpartition("/")[0]
        if parent in walked:  # overlays add many items under one parent (what it saves: bench/README.md)
            out.append(operation)
            continue
        walked.add(parent)
        path = operation["path"]
        if not path[1:2].isdigit() and _POSITION.search(path, 1) is None:  # no list position on the
            out.append(operation)  # way, so nothing to test: most parents (walking them anyway was
            continue  # measurable: bench/README.md)
        node, prefix = job, ""
        for token in path[1:].split("/")[:-1]:
            prefix += "/" + token
            if node.__class__ is dict:
                node = node.get(_unescape(token))
            elif node.__class__ is list and _index(token, len(node)):
                node = node[int(token)]
                key = next((k for k in IDENTITY_KEYS if node.__class__ is dict and k in node), None)
                if key is not None and prefix not in tested:
                    tested.add(prefix)
                    out.append({"op": "test", "path": f"{prefix}/{key}", "value": node[key]})
            else:
                break
        out.append(operation)
    return out


def apply(doc: Any, operations: Iterable[JsonObject]) -> Any:
    """`jsonpatch.apply_patch(doc, operations, in_place=True)`: `doc` is changed and returned."""
    for operation in operations:
        if not (_add(doc, operation) or _passes(doc, operation)):
            import jsonpatch

            doc = jsonpatch.apply_patch(doc, [operation], in_place=True)
    return doc


def applied(doc: Any, operations: Iterable[JsonObject]) -> Any:
    """`apply` on a document shared with others, which stays as it is: each `add` copies the
    mappings and lists on its way (each once) instead of the whole document, and the rest is
    shared with `doc`. Rendering copied every job whole before its patches touched a few
    paths of it (what that cost: bench/README.md). Before anything goes to `jsonpatch`, the
    document is copied whole and patched in place from then on."""
    own: dict[int, Any] = {}  # the containers that are this call's copies, by id (held, so ids stay unique)
    whole = False
    for operation in operations:
        if whole:
            doc = apply(doc, [operation])
        elif not _passes(doc, operation):
            doc, done = _add_copying(doc, operation, own)
            if not done:
                doc, whole = apply(json_copy(doc), [operation]), True
    return doc


def _add_copying(doc: Any, operation: JsonObject, own: dict[int, Any]) -> tuple[Any, bool]:
    """`_add` through copies of the containers on the path; (the document, whether it applied)."""
    path = operation.get("path")
    if operation.get("op") != "add" or "value" not in operation or path.__class__ is not str or path[:1] != "/":
        return doc, False
    *parents, last = [_unescape(token) for token in path[1:].split("/")]
    if _walk(doc, parents) is _NOWHERE:
        return doc, False
    doc = _owned(doc, own)
    node = doc
    for token in parents:
        key = token if node.__class__ is dict else int(token)
        node[key] = node = _owned(node[key], own)
    if node.__class__ is dict:
        node[last] = json_copy(operation["value"])
    elif node.__class__ is list and last == "-":
        node.append(json_copy(operation["value"]))
    else:
        return doc, False
    return doc, True


def _owned(node: Any, own: dict[int, Any]) -> Any:
    """`node` if it is one of this call's copies, else a shallow copy of it (then one of them)."""
    if id(node) in own or node.__class__ not in (dict, list):
        return node
    copied = dict(node) if node.__class__ is dict else list(node)
    own[id(copied)] = copied
    return copied


def _add(doc: Any, operation: JsonObject) -> bool:
    """Apply one `add` whose path walks through existing mappings and list items; False
    (and `doc` untouched) for anything else."""
    path = operation.get("path")
    if operation.get("op") != "add" or "value" not in operation or path.__class__ is not str or path[:1] != "/":
        return False
    *parents, last = [_unescape(token) for token in path[1:].split("/")]
    node = _walk(doc, parents)
    if node is _NOWHERE:
        return False
    if node.__class__ is dict:
        node[last] = json_copy(operation["value"])
    elif node.__class__ is list and last == "-":
        node.append(json_copy(operation["value"]))
    else:
        return False  # an insert by index, or not a container: the library decides
    return True


def _passes(doc: Any, operation: JsonObject) -> bool:
    """A `test` that holds (nothing to do); False for anything else, a failing test
    included, which the library then reports."""
    path = operation.get("path")
    if operation.get("op") != "test" or "value" not in operation or path.__class__ is not str or path[:1] != "/":
        return False
    node = _walk(doc, (_unescape(t) for t in path[1:].split("/")))
    return node is not _NOWHERE and node == operation["value"] and node.__class__ is operation["value"].__class__


_NOWHERE = object()  # what `_walk` returns for a path that does not walk


def _walk(doc: Any, tokens: Iterable[str]) -> Any:
    """The node at `tokens` (unescaped) through existing mappings and list items, or _NOWHERE."""
    node = doc
    for token in tokens:
        if node.__class__ is dict and token in node:
            node = node[token]
        elif node.__class__ is list and _index(token, len(node)):
            node = node[int(token)]
        else:
            return _NOWHERE
    return node


def _unescape(token: str) -> str:
    # jsonpointer's order: ~1 first, so that ~01 stays ~1
    return token.replace("~1", "/").replace("~0", "~") if "~" in token else token


def _index(token: str, length: int) -> bool:
    """A list index jsonpointer accepts (no sign, no leading zero) inside the list."""
    return token.isdigit() and token.isascii() and (token == "0" or token[0] != "0") and int(token) < length
