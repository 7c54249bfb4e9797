"""A claim that grows: whether the API server lets the engine apply it.

A PersistentVolumeClaim's spec is immutable once created, except for a larger storage
request: the API server's validation allows it on a bound claim only, and its
PersistentVolumeClaimResize admission only when the claim's StorageClass (the same before
and after) has `allowVolumeExpansion: true`. Any other change of the spec, and a smaller
size, is refused (hazard `sync-refused`, `compiler.plan.hazards`). Offline the plan cannot
know whether the claim is bound or what its class allows: it assumes the growth is allowed,
and says so in the sentence. Under `--live` it reads the claim and its StorageClass and
decides (`verdict`); a claim the cluster does not have yet is created with the new size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from schemas import quantity

KIND, CLASS_KIND = "PersistentVolumeClaim", "StorageClass"
ALLOWED, ABSENT = "allowed", "absent"


@dataclass(frozen=True)
class Growth:
    """A claim whose only change is a larger storage request."""

    name: str
    namespace: str
    storage_class: Optional[str]  # as compiled (None: the cluster's default class)
    before: str
    after: str


def _storage(obj: dict[str, Any]) -> Any:
    return (((obj.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")


def growth(old: dict[str, Any], new: dict[str, Any]) -> Optional[Growth]:
    """The growth from `old` to `new`, two compiled claims of one name; None when anything but a
    larger size changed (the API server refuses that whatever the claim's state)."""
    before, after = _storage(old), _storage(new)
    try:
        larger = before is not None and after is not None and \
            quantity.parse(after).amount > quantity.parse(before).amount
    except ValueError:
        return None
    rest = [{**(o.get("spec") or {}), "resources": {}} for o in (old, new)]
    if not larger or rest[0] != rest[1]:
        return None
    meta = new.get("metadata") or {}
    return Growth(meta.get("name", ""), meta.get("namespace", ""), (new.get("spec") or {}).get("storageClassName"),
                  str(before), str(after))


def verdict(grown: Growth, live: dict[tuple[str, str, str], dict[str, Any]]) -> str:
    """`ALLOWED`, `ABSENT` (created with the new size) or why the API server refuses the growth,
    from the claim and its StorageClass as `--live` read them."""
    claim = live.get((KIND, grown.namespace, grown.name))
    if claim is None:
        return ABSENT
    if (claim.get("status") or {}).get("phase") != "Bound":
        return f"claim {grown.name} is not bound ({(claim.get('status') or {}).get('phase') or 'Pending'}): only a" \
               " bound claim can grow"
    name = (claim.get("spec") or {}).get("storageClassName")
    if not name:
        return f"claim {grown.name} has no StorageClass: only a dynamically provisioned claim can grow"
    if grown.storage_class is not None and grown.storage_class != name:
        return f"claim {grown.name} is of StorageClass {name}, not {grown.storage_class}"
    found = live.get((CLASS_KIND, "", name))
    if found is None:
        return f"its StorageClass {name} is not in the cluster"
    if found.get("allowVolumeExpansion") is not True:
        return f"its StorageClass {name} does not set allowVolumeExpansion: true"
    return ALLOWED
