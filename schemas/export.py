"""JSON Schema export of the spec models (`train-compile schema -o schemas/`).

The committed `*.schema.json` files are generated, never hand-edited; a test fails when
they are stale. They are plain JSON Schema (2020-12) so editors can use them through a
`# yaml-language-server: $schema=...` line and CI through check-jsonschema.
The TrainJob schema embeds the pod template definitions of `schemas/podtemplate.schema.json`
(Kubernetes' own PodTemplateSpec as a strategic-merge patch) under `$defs`, so `podTemplate`
completes and is checked in editors without a second file to resolve (a relative `$ref`
would resolve against the `$id` URL, which editors would try to download).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas import podtemplate
from schemas.project import Project
from schemas.trainjob import TrainJob

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
CONTAINER_SECURITY = "io.k8s.api.core.v1.SecurityContext"
FILES = {"trainjob.schema.json": TrainJob, "project.schema.json": Project}


def schema_texts() -> dict[str, str]:
    out = {}
    for name, model in FILES.items():
        schema = model.model_json_schema()
        if model is TrainJob:
            schema = with_pod_template(schema)
        schema = {"$schema": SCHEMA_DIALECT, "$id": f"https://trainforge.dev/schemas/v1alpha1/{name}", **schema}
        out[name] = json.dumps(schema, indent=2, sort_keys=False) + "\n"
    return out


def with_pod_template(schema: dict[str, Any]) -> dict[str, Any]:
    """`podTemplate` (a free-form mapping to pydantic) refers to Kubernetes' PodTemplateSpec, whose
    definitions are embedded so the file stands alone."""
    ref = {"$ref": f"#/$defs/{podtemplate.ROOT}"}
    for model in schema.get("$defs", {}).values():
        field = model.get("properties", {}).get("podTemplate")
        if field is not None:
            nullable = any(choice.get("type") == "null" for choice in field.get("anyOf", ()))
            keep = {k: field[k] for k in ("description", "title", "default") if k in field}
            model["properties"]["podTemplate"] = {**keep, **({"anyOf": [ref, {"type": "null"}]} if nullable else ref)}
        context = model.get("properties", {}).get("securityContext")
        if context is not None:  # the spec's container securityContext is Kubernetes' SecurityContext
            keep = {k: context[k] for k in ("description", "title", "default") if k in context}
            model["properties"]["securityContext"] = {
                **keep, "anyOf": [{"$ref": f"#/$defs/{CONTAINER_SECURITY}"}, {"type": "null"}]}
    schema["$defs"] = {**schema.get("$defs", {}), **podtemplate.load()["$defs"]}
    return schema


def write_schemas(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schema_texts().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
