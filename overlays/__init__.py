"""Overlay steps, applied to every lowered bundle in this one declared order.

Each step is a pure function `apply(bundle) -> bundle` that computes its own kustomize
Component from the base job (`bundle.job`) and the target, and adds (or replaces) it by
name; applying a step twice equals applying it once, and no step mutates its input. The
order matters only for reading the output: rbac, storage, scheduling. A step that adds
an object the job needs first puts it in an earlier Argo CD sync wave (`overlays.waves`).

The patch helpers live here, above the step imports, because all three steps share one
rule for writing JSON6902 against a base that may or may not have a field yet: a
missing map or list is added whole, an existing map gets its keys added one by one, an
existing list gets items appended with `/-`, and an existing scalar is left alone (it
was set through `podTemplate`, the user's escape hatch, which has the last word).
"""

from __future__ import annotations

from typing import Any, Callable

from schemas.bundle import Bundle, JsonObject, escape
from schemas.jsoncopy import json_copy

Step = Callable[[Bundle], Bundle]
MISSING = object()


def lookup(doc: Any, pointer: str) -> Any:
    """The value at a JSON pointer in `doc`, or `MISSING` when any part is absent."""
    node = doc
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return MISSING
    return node


def merge_ops(doc: JsonObject, pointer: str, value: Any) -> list[JsonObject]:
    """JSON6902 operations that deep-merge `value` into `doc` at `pointer`.

    `doc` is only read. Lists are merged by appending the items not already present, so
    a toleration the pod template already has is not written twice.
    """
    ops: list[JsonObject] = []
    _merge(lookup(doc, pointer), pointer, value, ops)
    return ops


def _merge(current: Any, pointer: str, value: Any, ops: list[JsonObject]) -> None:
    if current is MISSING:
        ops.append({"op": "add", "path": pointer, "value": json_copy(value)})
    elif isinstance(current, dict) and isinstance(value, dict):
        for key, item in value.items():
            _merge(current.get(key, MISSING), f"{pointer}/{escape(str(key))}", item, ops)
    elif isinstance(current, list) and isinstance(value, list):
        ops += (
            {"op": "add", "path": f"{pointer}/-", "value": json_copy(item)}
            for item in value
            if item not in current
        )
    # else: an existing scalar (or a shape clash) was written by podTemplate: it wins


def container_index(job: JsonObject, template_spec: str, name: str) -> int:
    """Index of the framework container (by name) in one pod template of the base job."""
    containers = lookup(job, f"{template_spec}/containers")
    for i, container in enumerate(containers if isinstance(containers, list) else []):
        if container.get("name") == name:
            return i
    return 0  # lowering always writes the framework container first


from overlays import rbac, scheduling, storage  # noqa: E402  (they use the helpers above)

STEPS: tuple[Step, ...] = (rbac.apply, storage.apply, scheduling.apply)
