"""A small strategic-merge patch for pod templates (the `podTemplate` escape hatch).

Kubernetes merges lists in a pod spec by key (containers by `name`, ports by
`containerPort`, ...) rather than replacing them. kubectl's implementation lives in Go
and no maintained Python port exists, so this covers the pod-template subset the spec
needs: maps merge recursively, `null` deletes a key, keyed lists merge item by item,
other lists are replaced. The patch is applied in the compiler, so the output in git
is the final job with no patch left for reviewers to evaluate in their heads.
"""

from __future__ import annotations

import copy
from typing import Any

# field name -> merge key, for list fields of PodTemplateSpec (and its containers)
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
    "topologySpreadConstraints": "topologyKey",
}


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """Return `base` with `patch` merged in; neither argument is modified."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = merge(out[key], value, key)
            else:
                out[key] = copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        return _merge_list(base, patch, MERGE_KEYS[field])
    return copy.deepcopy(patch)


def _merge_list(base: list[Any], patch: list[Any], key: str) -> list[Any]:
    out = copy.deepcopy(base)
    index = {item.get(key): i for i, item in enumerate(out) if isinstance(item, dict)}
    for item in patch:
        if isinstance(item, dict) and item.get(key) in index:
            pos = index[item[key]]
            out[pos] = merge(out[pos], item)
        else:
            index[item.get(key) if isinstance(item, dict) else None] = len(out)
            out.append(copy.deepcopy(item))
    return out
