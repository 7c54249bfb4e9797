"""JSON Schema export of the spec models (`train-compile schema -o schemas/`).

The committed `*.schema.json` files are generated, never hand-edited; a test fails when
they are stale. They are plain JSON Schema (2020-12) so editors can use them through a
`# yaml-language-server: $schema=...` line and CI through check-jsonschema.
"""

from __future__ import annotations

import json
from pathlib import Path

from schemas.project import Project
from schemas.trainjob import TrainJob

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
FILES = {"trainjob.schema.json": TrainJob, "project.schema.json": Project}


def schema_texts() -> dict[str, str]:
    out = {}
    for name, model in FILES.items():
        schema = model.model_json_schema()
        schema = {"$schema": SCHEMA_DIALECT, "$id": f"https://trainforge.dev/schemas/v1alpha1/{name}", **schema}
        out[name] = json.dumps(schema, indent=2, sort_keys=False) + "\n"
    return out


def write_schemas(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in schema_texts().items():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
