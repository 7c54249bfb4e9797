"""The JSON Schema of a Kubeflow Trainer v2 runtime's `spec`, derived from the Trainer's own CRD.

A TrainingRuntime or ClusterTrainingRuntime written beside the jobs (`compiler/reading/runtimes.py`)
is applied as it is, and the API server judges it against the CRD only at sync. So the CRD is
the authority: `derive` turns the v2.3.0 release's `trainer.kubeflow.org_trainingruntimes.yaml`
(the served version's `spec`; the ClusterTrainingRuntime's is the same) into a JSON Schema
(2020-12) that the compiler checks each runtime document against, and `make schema` writes it
to `schemas/trainingruntime.schema.json` (tests/schemas/trainer_runtime_crd.py; a test holds the
committed file to the reference CRD). Kept: types, properties, items, required fields, enums,
patterns and bounds. Dropped: descriptions and defaults (the server's), list and map
annotations, and the CEL rules (`x-kubernetes-validations`, which JSON Schema cannot say; the
Trainer's webhook and the server apply them at sync). Made explicit: int-or-string, and
unknown fields refused (`additionalProperties: false` on every object that lists its fields
and keeps no unknown ones), as the API server's strict field validation does.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

FILE = Path(__file__).resolve().parent / "trainingruntime.schema.json"
SCHEMA_ID = "https://trainforge.dev/schemas/v1alpha1/trainingruntime.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"
VERSION = "v1alpha1"
KEPT = ("type", "properties", "items", "required", "enum", "pattern", "minimum", "maximum", "minLength",
        "maxLength", "minItems", "maxItems", "additionalProperties", "anyOf")


def _derive(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node.get("x-kubernetes-int-or-string"):
        return {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    out: dict[str, Any] = {}
    for key in KEPT:
        if key not in node:
            continue
        value = node[key]
        if key == "properties":
            out[key] = {name: _derive(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _derive(value)
        elif key == "anyOf":
            out[key] = [_derive(sub) for sub in value]
        else:
            out[key] = value
    if "properties" in out and "additionalProperties" not in out \
            and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def derive(crd: dict[str, Any]) -> dict[str, Any]:
    """The schema of a runtime's `spec` in the served `VERSION` of `crd`."""
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == VERSION and v.get("served")]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return {"$schema": DIALECT, "$id": SCHEMA_ID, "x-trainer-crd": crd["metadata"]["name"], **_derive(spec)}


def text(crd: dict[str, Any]) -> str:
    return json.dumps(derive(crd), indent=1, sort_keys=True) + "\n"


@functools.cache
def load() -> dict[str, Any]:
    return json.loads(FILE.read_text(encoding="utf-8"))
