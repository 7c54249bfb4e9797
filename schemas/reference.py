"""The field reference in `docs/reference.md`, generated from the models like the JSON Schemas.

Written docs drift from code; this page cannot: every object of the TrainJob and Project
documents gets a table (field, type, default, description) read from the pydantic models
through their JSON Schema, and a test fails when the committed page is stale
(`make schema` rewrites it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemas.project import Project
from schemas.trainjob import TrainJob

HEADER = """# TrainJob and Project field reference

Generated from the pydantic models by `make schema` (`python -m schemas.reference`); do
not edit. Every field is strict: unknown fields are errors, and `nodes: "4"` is not a
number. Durations are `90s`, `30m`, `24h`, `7d` or whole seconds; quantities follow the
Kubernetes grammar (`4`, `"500m"`, `16Gi`).
"""


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "const" in schema:
        return f"`{schema['const']}`"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [_type(s) for s in schema[key] if s.get("type") != "null"]
            return " or ".join(dict.fromkeys(parts))
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"map of {_type(schema['additionalProperties'])}"
    return str(kind)


def _default(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in schema or schema["default"] in (None, [], {}):
        return ""
    return f"`{json.dumps(schema['default'])}`"


def _table(name: str, schema: dict[str, Any]) -> list[str]:
    lines = [f"## {name}", ""]
    if schema.get("description"):
        lines += [" ".join(schema["description"].split()), ""]
    lines += ["| field | type | default | description |", "|---|---|---|---|"]
    required = set(schema.get("required", []))
    for field, sub in schema.get("properties", {}).items():
        description = " ".join(str(sub.get("description", "")).split()).replace("|", "\\|")
        lines.append(f"| `{field}` | {_type(sub)} | {_default(sub, field in required)} | {description} |")
    return lines + [""]


def markdown() -> str:
    out = [HEADER]
    for model in (TrainJob, Project):
        schema = model.model_json_schema()
        out += _table(model.__name__, schema)
        for name, sub in sorted(schema.get("$defs", {}).items()):
            if sub.get("type") == "object" and "properties" in sub:
                out += _table(name, sub)
    return "\n".join(out).rstrip() + "\n"


def write(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown(), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write(Path(__file__).resolve().parents[1] / "docs" / "reference.md"))
