"""`compiler.importing.residual`: the podTemplate patch that turns a compiled pod template into the
manifest's. Held to the compiler's own merge: merging the patch gives the manifest's template."""

from __future__ import annotations

import copy

import pytest

from compiler import strategic
from compiler.importing import residual
from compiler.importing.sameness import canonical_template, diff, pruned
from foundation import poddefaults


def template(**spec) -> dict:
    containers = spec.pop("containers", [{"name": "pytorch", "image": "a:1", "env": [{"name": "A", "value": "1"}]}])
    return {"metadata": spec.pop("metadata", {}), "spec": {"containers": containers, **spec}}


def canon(value: dict) -> dict:
    out = copy.deepcopy(value)
    canonical_template(out)
    return pruned(out)


def patch_for(compiled: dict, manifest: dict) -> dict:
    target = canon(manifest)
    return residual.patch(canon(compiled), target, poddefaults.strip(copy.deepcopy(target)))


CASES = [
    ("a pod field the spec has none for", template(), template(hostNetwork=True, dnsPolicy="ClusterFirstWithHostNet"),
     {"spec": {"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"}}),
    ("a second container, written without its defaults", template(),
     template(containers=[{"name": "pytorch", "image": "a:1", "env": [{"name": "A", "value": "1"}]},
                          {"name": "sidecar", "image": "b:latest"}]),
     {"spec": {"containers": [{"name": "sidecar", "image": "b:latest"}]}}),
    ("a label the pods lack", template(metadata={"labels": {"team": "x"}}), template(),
     {"metadata": {"labels": {"team": None}}}),
    ("an env variable after the spec's", template(),
     template(containers=[{"name": "pytorch", "image": "a:1", "env": [
         {"name": "A", "value": "1"}, {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]),
     {"spec": {"containers": [{"name": "pytorch", "env": [
         {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}]}]}}),
    ("env in an order the merge cannot reach", template(),
     template(containers=[{"name": "pytorch", "image": "a:1", "env": [
         {"name": "B", "value": "$(C)"}, {"name": "A", "value": "1"}]}]),
     {"spec": {"containers": [{"name": "pytorch", "env": [
         {"$patch": "replace"}, {"name": "B", "value": "$(C)"}, {"name": "A", "value": "1"}]}]}}),
    ("a port of another number", template(containers=[{"name": "pytorch", "image": "a:1", "ports": [
        {"name": "master", "containerPort": 36543}]}]),
     template(containers=[{"name": "pytorch", "image": "a:1", "ports": [{"name": "master", "containerPort": 37777}]}]),
     {"spec": {"containers": [{"name": "pytorch", "ports": [
         {"name": "master", "containerPort": 37777}, {"containerPort": 36543, "$patch": "delete"}]}]}}),
    ("nothing", template(), template(), {}),
]


@pytest.mark.parametrize(("compiled", "manifest", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_patch_reads_as_written_and_merges_into_the_manifest(compiled, manifest, expected):
    found = patch_for(compiled, manifest)

    assert found == expected
    assert list(diff(canon(strategic.merge(compiled, found)), canon(manifest))) == []
    assert list(strategic.problems(found)) == []


def test_what_all_roles_patch_alike_is_written_once():
    a = {"spec": {"hostNetwork": True, "containers": [{"name": "pytorch", "imagePullPolicy": "Always", "args": ["a"]}]}}
    b = {"spec": {"hostNetwork": True, "containers": [{"name": "pytorch", "imagePullPolicy": "Always"}]}}

    shared = residual.common([a, b])

    assert shared == b
    assert residual.without(a, shared) == {"spec": {"containers": [{"name": "pytorch", "args": ["a"]}]}}
    assert residual.without(b, shared) == {}
