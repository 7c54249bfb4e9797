"""Plain JSON values as the controller holds them: copied fast, cached small.

The informer caches hold every job, pod and service of the cluster as parsed JSON, and
`json.loads` makes a fresh string for every key of every object: hundreds of MB at a
thousand jobs, half of it `metadata.managedFields` (server-side apply bookkeeping nothing
here reads; the figures: bench/README.md, "Figures the controller's code cites"). So before an object enters a cache it is trimmed to
what the controller reads (`managedFields` never; a pod's or service's `spec` never: the
reconcile reads their labels, owner, deletion mark and pod status only) and compacted:
short strings (names, labels, phases, timestamps) become interned strings shared by every
object (keys are shared by orjson's parser already), a fraction of the memory for a little
CPU per object at watch time. Cached objects are shared and read-only; `copy` is the plain-JSON deep copy a
reconcile takes before it changes one (`schemas.jsoncopy`, the one rendering uses too).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from schemas.jsoncopy import json_copy as copy  # `jsondata.copy`, as the controller calls it

Transform = Callable[[dict[str, Any]], dict[str, Any]]
SHORT = 64  # longest string interned: names and label values are <= 63 characters


def compact(value: Any, _intern: Callable[[str], str] = sys.intern) -> Any:
    """The same JSON value with its short strings interned (equal, smaller). Keys are kept as
    they are: orjson, which parses everything the caches hold, already gives equal keys one
    string object (its key cache), and interning them again was ~40% of this walk's time."""
    cls = value.__class__
    if cls is dict:
        return {key: compact(item) for key, item in value.items()}
    if cls is list:
        return [compact(item) for item in value]
    if cls is str and len(value) <= SHORT:
        return _intern(value)
    return value


def cached(obj: dict[str, Any]) -> dict[str, Any]:
    """Any object as a cache keeps it: without managedFields, compacted."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return compact(obj)


def cached_without_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """A child whose spec the controller never reads (pods, services): metadata and status."""
    obj.pop("spec", None)
    return cached(obj)
