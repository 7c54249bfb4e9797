"""`strategic.merge` copies its base once and merges into the copy in place (compiler/strategic.py
says why): the result must still share no map or list with the base or the patch, and neither
argument may change, or a later overlay writing into one replica type's template would write
into another's, or into the spec. `lowering.pod_template` hands out copies of a merged template
for the same reason."""

from __future__ import annotations

import copy
from typing import Any, Iterator

import pytest
from test_strategic_directives import API_SERVER_CASES, BASE, KUSTOMIZE_CASES

from compiler import strategic


def _containers(value: Any) -> Iterator[Any]:
    """Every map and list inside `value`, itself included."""
    if isinstance(value, (dict, list)):
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _containers(item)


CASES = [patch for _, patch in KUSTOMIZE_CASES] + [case[1] for case in API_SERVER_CASES]


@pytest.mark.parametrize("patch", CASES)
def test_merge_shares_nothing_and_changes_nothing(patch: Any) -> None:
    base, before = copy.deepcopy(BASE), copy.deepcopy(BASE)
    patch_before = copy.deepcopy(patch)
    merged = strategic.merge(base, patch)
    assert base == before and patch == patch_before
    theirs = {id(c) for c in (*_containers(base), *_containers(patch))}
    assert not [c for c in _containers(merged) if id(c) in theirs]


def test_merging_twice_gives_equal_independent_results() -> None:
    patch = CASES[0]
    first, second = strategic.merge(BASE, patch), strategic.merge(BASE, patch)
    assert first == second
    assert not {id(c) for c in _containers(first)} & {id(c) for c in _containers(second)}


def test_pod_template_hands_out_a_fresh_copy_of_the_merged_template(tmp_path) -> None:
    from compiler_builders import compile_docs, job_doc

    from foundation.frameworks import adapter
    from compiler.targets.lowering import pod_template

    doc = job_doc("pytorch", nodes=2, podTemplate={"spec": {"containers": [
        {"name": "pytorch", "ports": [{"containerPort": 9090, "name": "metrics"}]},
        {"name": "sidecar", "image": "busybox:1.36"}]}})
    result = compile_docs(tmp_path, doc)
    assert result.ok, [d.text() for d in result.diagnostics]
    target = result.bundles["default"][0].target
    fw = adapter("pytorch")
    plan = fw.plan(target.spec)[-1]
    first = pod_template(target.spec, plan, fw.facts, target)
    expected = copy.deepcopy(first)
    first["spec"]["containers"].append({"name": "added-by-a-rule"})  # callers own what they get
    first["spec"]["containers"][0]["ports"].clear()
    second = pod_template(target.spec, plan, fw.facts, target)
    assert second == expected
    assert [c["name"] for c in second["spec"]["containers"]] == ["pytorch", "sidecar"]
