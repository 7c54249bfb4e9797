"""The committed JSON Schemas are current, and every example satisfies them."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from schemas.export import FILES, schema_texts

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def load_all(path: Path) -> list:
    return [doc for doc in YAML(typ="safe").load_all(path.read_text(encoding="utf-8")) if doc is not None]


def validator(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((REPO / "schemas" / name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("name", sorted(FILES))
def test_committed_schema_is_current(name):
    committed = (REPO / "schemas" / name).read_text(encoding="utf-8")

    assert committed == schema_texts()[name], f"schemas/{name} is stale; run `make schema` and commit it"


def test_schemas_use_the_2020_12_dialect():
    for name in FILES:
        assert json.loads(schema_texts()[name])["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def _example_jobs() -> list:
    params = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        for i, doc in enumerate(load_all(path)):
            if doc.get("kind") == "TrainJob":
                params.append(pytest.param(doc, id=f"{path.relative_to(EXAMPLES)} document {i + 1}"))
    return params


@pytest.mark.parametrize("doc", _example_jobs())
def test_every_example_job_validates_against_the_trainjob_schema(doc):
    errors = [e.message for e in validator("trainjob.schema.json").iter_errors(doc)]

    assert errors == []


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("trainforge.yaml")), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_every_example_project_validates_against_the_project_schema(path):
    (doc,) = load_all(path)

    assert [e.message for e in validator("project.schema.json").iter_errors(doc)] == []


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        pytest.param({"nodes": True}, "True is not of type 'integer'", id="the schema rejects a boolean node count"),
        pytest.param({"nodes": 0}, "0 is less than the minimum of 1", id="the schema rejects zero nodes"),
        pytest.param({"nodez": 2}, "Additional properties are not allowed", id="the schema rejects unknown fields"),
        pytest.param({"resources": {"memory": "16 GB"}}, "'16 GB' is not valid", id="the schema checks quantities"),
        pytest.param({"policy": {"activeDeadline": "2 days"}}, "'2 days' is not valid",
                     id="the schema checks durations"),
    ],
)
def test_the_trainjob_schema_rejects_what_the_compiler_rejects(spec, fragment):
    doc = {"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob", "metadata": {"name": "demo"},
           "spec": {"framework": "jax", "image": "x", **spec}}

    messages = [e.message for e in validator("trainjob.schema.json").iter_errors(doc)]

    assert any(fragment in m for m in messages), messages
