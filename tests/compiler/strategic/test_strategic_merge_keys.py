"""The merge keys `compiler.strategic` uses, held to the API server's own OpenAPI.

kube-apiserver v1.32 publishes each field's patch strategy (`x-kubernetes-patch-strategy`)
and merge key (`x-kubernetes-patch-merge-key`) in /openapi/v2; kubectl and kustomize merge
by them. This walks every definition a PodTemplateSpec reaches and compares: each list
the server merges by a key is in MERGE_KEYS with that key, each name in MERGE_KEYS is
keyed wherever it occurs, each name in ATOMIC_LISTS is a list the server replaces, and
each name in SETS a list of strings it merges as a set.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

from compiler import strategic

pytestmark = pytest.mark.controlplane
ROOT = "io.k8s.api.core.v1.PodTemplateSpec"


def list_fields(definitions: dict[str, Any]) -> dict[str, set[tuple[str, str]]]:
    """field name -> {(patch strategy, merge key)} over every field a PodTemplateSpec reaches
    (a field that is no list: ("not a list", ""))."""
    seen, todo, out = set(), [ROOT], defaultdict(set)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for field, prop in definitions[name].get("properties", {}).items():
            items = prop.get("items", {})
            if prop.get("type") == "array":
                out[field].add((prop.get("x-kubernetes-patch-strategy", ""), prop.get("x-kubernetes-patch-merge-key", "")))
            else:
                out[field].add(("not a list", ""))
            for ref in (prop.get("$ref"), items.get("$ref"), (prop.get("additionalProperties") or {}).get("$ref")):
                if ref:
                    todo.append(ref.rsplit("/", 1)[-1])
    return out


@pytest.fixture(scope="module")
def server_lists(control_plane) -> dict[str, set[tuple[str, str]]]:
    status, body = control_plane.request("GET", "/openapi/v2")
    assert status == 200, body
    return list_fields(body["definitions"])


def test_every_list_the_server_merges_by_key_is_merged_by_that_key(server_lists):
    keyed = {field: {key for strategy, key in found if "merge" in strategy and key}
             for field, found in server_lists.items()}

    assert {f: k for f, k in keyed.items() if k} == {f: {k} for f, k in strategic.MERGE_KEYS.items()}


def test_every_merge_key_field_is_keyed_wherever_it_occurs(server_lists):
    for field in strategic.MERGE_KEYS:
        assert all("merge" in strategy and key for strategy, key in server_lists[field]), (field, server_lists[field])


def test_the_atomic_lists_are_lists_the_server_replaces(server_lists):
    for field in strategic.ATOMIC_LISTS:
        assert server_lists.get(field), f"{field} is no list of a pod template"
        assert {strategy for strategy, key in server_lists[field]} <= {""}, (field, server_lists[field])


def test_the_sets_are_lists_the_server_merges_without_a_key(server_lists):
    merged = {field for field, found in server_lists.items()
              if any("merge" in strategy and not key for strategy, key in found)}

    assert merged == set(strategic.SETS)
