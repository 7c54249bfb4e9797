"""Where a compiled object came from, as the cluster sees it: the `trainforge.dev/source` annotation.

Every object a job puts in the cluster (the job, and its ServiceAccount, Role, RoleBinding,
PersistentVolumeClaim and PodGroup) carries the spec's path from the git repository's root
(the path given, outside a repository) in its own metadata, so `plan --live`, `status` and
`logs` match live objects to specs. Never on pod templates: moving a spec file changes the
job's metadata, not its pods. No line number: an edit elsewhere in the file is no drift.
The Namespaces of the tree carry none: several specs share one.

Stamped here, while emitting, rather than in lowering, so the one place that knows the
path (`Document.origin`, set by compiler/reading/sources.py) reaches every object the tree
and the render stream write, whichever overlay made it, and the overlays' patches (computed
against the lowered job) never see it. The copies are shallow: only the metadata and
annotation maps are new, the rest is shared with the bundle, which is never mutated.
"""

from __future__ import annotations

from typing import Any

from schemas.bundle import Bundle
from schemas.marks import SOURCE


def source_of(bundle: Bundle) -> str:
    """The spec's path from the repository root (or as given): the annotation's value."""
    doc = bundle.target.doc
    return doc.origin or doc.file


def stamped(obj: dict[str, Any], source: str) -> dict[str, Any]:
    """`obj` with the source annotation in its own metadata (a shallow copy; `obj` is untouched)."""
    meta = obj.get("metadata") or {}
    return {**obj, "metadata": {**meta, "annotations": {**(meta.get("annotations") or {}), SOURCE: source}}}


def bundle_objects(bundle: Bundle) -> list[dict[str, Any]]:
    """Every object the bundle puts in the cluster, as `render` and the tree write them. They
    share what they do not change with the bundle (`Bundle.objects(shared=True)`): read them,
    never change them (copying every job whole was a large part of rendering: bench/README.md)."""
    source = source_of(bundle)
    return [stamped(obj, source) for obj in bundle.objects(shared=True)]
