"""`schemas.patching` (the `add` and `test` fast paths) must do exactly what `jsonpatch` does.

It exists for speed only (`train-compile render`), so the patches of every job of a
compiled benchmark tree and of the examples, and a list of operations it must leave to
the library (other ops, inserts by index, escapes, paths that do not walk), are applied
both ways and the documents, or the errors, compared.
"""

from __future__ import annotations

from pathlib import Path

import jsonpatch
import jsonpointer
import pytest

from bench import specs
from compiler.pipeline import compile_sources
from schemas import patching
from schemas.jsoncopy import json_copy

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _base() -> dict:
    return {"a": {"b": [1, {"c": 2}], "x/y": {"~t": 0}}, "l": [], "s": "text"}


OPERATIONS = {
    "add a new key": [{"op": "add", "path": "/a/new", "value": {"k": [1]}}],
    "add over an existing key": [{"op": "add", "path": "/a/b", "value": 3}],
    "append to a list": [{"op": "add", "path": "/l/-", "value": {"v": 1}}],
    "add inside a list item": [{"op": "add", "path": "/a/b/1/d", "value": "e"}],
    "insert by index": [{"op": "add", "path": "/a/b/0", "value": 0}],
    "escaped tokens": [{"op": "add", "path": "/a/x~1y/~0t", "value": 1}],
    "an index with a leading zero": [{"op": "add", "path": "/a/b/01/d", "value": 1}],
    "an empty key": [{"op": "add", "path": "/", "value": 1}],
    "the root": [{"op": "add", "path": "", "value": {"new": "root"}}],
    "replace, remove and test": [
        {"op": "replace", "path": "/s", "value": "t"},
        {"op": "remove", "path": "/a/b/0"},
        {"op": "test", "path": "/s", "value": "t"},
    ],
    "a test that holds": [{"op": "test", "path": "/a/b/1/c", "value": 2}, {"op": "add", "path": "/a/b/1/d", "value": 1}],
    "a test that fails": [{"op": "test", "path": "/a/b/1/c", "value": 3}, {"op": "add", "path": "/a/b/1/d", "value": 1}],
    "a test of 1 against true": [{"op": "test", "path": "/a/b/0", "value": True}],
    "a test of a missing path": [{"op": "test", "path": "/a/b/7/c", "value": 2}],
    "a test of an escaped key": [{"op": "test", "path": "/a/x~1y/~0t", "value": 0}],
    "a missing parent": [{"op": "add", "path": "/nope/x", "value": 1}],
    "an index past the end": [{"op": "add", "path": "/a/b/5/x", "value": 1}],
    "a key on a string": [{"op": "add", "path": "/s/x", "value": 1}],
    "no value": [{"op": "add", "path": "/a/z"}],
    "a later op sees an earlier one": [
        {"op": "add", "path": "/l/-", "value": {"m": []}},
        {"op": "add", "path": "/l/0/m/-", "value": 1},
    ],
}


def _outcome(apply, operations):
    doc = _base()
    try:
        return "ok", apply(doc, [json_copy(op) for op in operations])
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("operations", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_an_operation_means_what_jsonpatch_says(operations) -> None:
    def library(doc, ops):
        return jsonpatch.apply_patch(doc, ops, in_place=True)

    assert _outcome(patching.apply, operations) == _outcome(library, operations)


@pytest.mark.parametrize("operations", OPERATIONS.values(), ids=OPERATIONS.keys())
def test_copying_on_write_means_the_same_and_leaves_the_document_alone(operations) -> None:
    """`applied` (render's: only what the operations change is copied) gives what `apply` gives,
    or the same error, and the document it was given is not changed."""
    given = _base()

    def on_write(doc, ops):
        return patching.applied(given, ops)

    assert _outcome(on_write, operations) == _outcome(patching.apply, operations)
    assert given == _base()


def test_copying_on_write_shares_what_no_operation_touches() -> None:
    doc = _base()
    out = patching.applied(doc, [{"op": "add", "path": "/a/b/1/d", "value": "e"}])
    assert out["a"]["b"][1] == {"c": 2, "d": "e"} and doc["a"]["b"][1] == {"c": 2}
    assert out["a"]["x/y"] is doc["a"]["x/y"] and out["l"] is doc["l"]  # off the path: shared
    assert out is not doc and out["a"] is not doc["a"] and out["a"]["b"] is not doc["a"]["b"]


def test_an_added_value_is_a_copy() -> None:
    value = {"k": [1]}
    doc = patching.apply({"a": {}}, [{"op": "add", "path": "/a/v", "value": value}])
    doc["a"]["v"]["k"].append(2)
    assert value == {"k": [1]}


@pytest.mark.parametrize("source", ["bench", "project"], ids=["a benchmark tree", "the example project"])
def test_every_compiled_job_renders_as_jsonpatch_renders_it(tmp_path: Path, source: str) -> None:
    src = specs.write(tmp_path / "src", 24) if source == "bench" else EXAMPLES / "project"
    result = compile_sources([src])
    assert result.ok
    bundles = [b for env_bundles in result.bundles.values() for b in env_bundles]
    assert sum(len(c.patches) for b in bundles for c in b.components) > 50
    for bundle in bundles:
        expected = json_copy(bundle.job)
        for component in bundle.components:
            expected = jsonpatch.apply_patch(expected, list(component.patches), in_place=True)
        assert bundle.rendered_job() == expected
        before = json_copy(bundle.job)
        assert bundle.rendered_job(shared=True) == expected
        assert bundle.job == before  # the shared rendering changed nothing of the bundle's
        # and the patches as git holds them, each list position guarded by a test
        written = json_copy(bundle.job)
        for component in bundle.components:
            written = jsonpatch.apply_patch(written, patching.guarded(bundle.job, component.patches), in_place=True)
        assert written == expected
