"""The pod template's JSON Schema, derived from the API server's own OpenAPI.

`spec.podTemplate` is a strategic-merge patch onto Kubernetes pod templates, so Kubernetes'
schema is the authority for it, not a copy of ours. `derive` turns kube-apiserver v1.32's
OpenAPI v3 (`/openapi/v3/api/v1`: `io.k8s.api.core.v1.PodTemplateSpec` and every definition
it reaches) into a JSON Schema (2020-12) of such a patch; `make schema` writes it to
`schemas/podtemplate.schema.json` from the test world's kube-apiserver
(tests/schemas/openapi_pod_template.py) and a test holds the committed file to the live
server. The compiler (`compiler/review/podschema.py`) and editors (the TrainJob schema embeds the
definitions) check podTemplates against the same file.

A patch is not a pod template, so the OpenAPI is changed in the ways a patch differs, and
only those: every field may be `null` (a deletion), every object takes the directives
(`$patch`, `$retainKeys`, `$setElementOrder/...`, `$deleteFromPrimitiveList/...`; the
compiler says separately which of them it applies), an object's required fields are
not required beside `$patch`, and the pod spec's `containers` is not required (the
patch merges into the framework's). What the OpenAPI says in prose is made explicit where
the API server's validation enforces it: enum values (the OpenAPI's `enum`, else the values a
field's description lists: "Valid operators are In, NotIn, Exists and DoesNotExist."), DNS_LABEL and IANA_SVC_NAME names (as patterns),
quantities (the Kubernetes grammar as a pattern) and int-or-string. Unknown fields are
refused (`additionalProperties: false`), as the API server does with strict field
validation. The `x-kubernetes-*` list annotations are kept: the compiler reads the
list-map keys from them.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, Optional

from schemas.quantity import QUANTITY

FILE = Path(__file__).resolve().parent / "podtemplate.schema.json"
ROOT = "io.k8s.api.core.v1.PodTemplateSpec"
QUANTITY_DEF = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING_DEF = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
SCHEMA_ID = "https://trainforge.dev/schemas/v1alpha1/podtemplate.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

# The names the API server's validation checks, as ECMA-compatible patterns (editors use them
# too). A DNS-1123 label: at most 63 lower-case letters, digits and '-', alphanumeric at both
# ends. An IANA service name: at most 15 of them, at least one letter, no '--'.
# `(?!.*\n)` first: Python's `$` (jsonschema in the compiler and check-jsonschema) also matches
# before a final line break, ECMA's (editors) does not; with it both refuse "4\n" alike.
NO_NEWLINE = r"(?!.*\n)"
DNS_LABEL = rf"^{NO_NEWLINE}(?=.{{1,63}}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
IANA_SVC_NAME = rf"^{NO_NEWLINE}(?=.{{1,15}}$)(?=.*[a-z])(?!.*--)[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
FORMAT = "x-trainforge-format"  # which of the above (or quantity) a pattern is, for the message
NAME_FORMATS = {"DNS_LABEL": ("dns-label", DNS_LABEL), "IANA_SVC_NAME": ("iana-svc-name", IANA_SVC_NAME)}
DIRECTIVES = {
    "$patch": {"enum": ["delete", "replace", "merge"], "description": "Strategic-merge directive."},
    "$retainKeys": {"type": "array", "items": {"type": "string"}, "description": "Strategic-merge directive."},
}
DIRECTIVE_PATTERNS = {
    r"^\$setElementOrder/": {"type": "array"},
    r"^\$deleteFromPrimitiveList/": {"type": "array"},
}
KEPT = ("x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-patch-merge-key",
        "x-kubernetes-patch-strategy")
NOT_REQUIRED_IN_A_PATCH = {"io.k8s.api.core.v1.PodSpec": {"containers"}}

# --- enum values the descriptions list -----------------------------------------------------

_WORD = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_LISTS = (  # a sentence that lists a field's values; group 1 is the list
    re.compile(r"\bOne of ([^.]+)\."),
    re.compile(r"\bValid (?:values|operators) are ([^;|]+?)\.(?=[\s|]|$)(?!\s+\w+,)"),
    re.compile(r"\bMust be ((?:[A-Z]+, )+(?:or )?[A-Z]+)\."),
    re.compile(r"\ballowed values are ([^.]+)\."),
    re.compile(r"\bSupported values: ([^.]+)\."),
    re.compile(r"\bthe only allowed value is (\"\w+\")"),
)
_ITEMS = (  # a description that lists values one per item: "Valid options are: X - ...", "- X: ..."
    (re.compile(r"\bValid options are:"), re.compile(r"(?:^|[|.]\s*)([A-Z][A-Za-z]+) - ")),
    (re.compile(r"\bOptions are: -"), re.compile(r"(?:^|\s)- ([A-Z][A-Za-z]+):")),
    (re.compile(r"\s- [A-Z][A-Za-z]+ (?:\(default\) )?tells "), re.compile(r"\s- ([A-Z][A-Za-z]+) (?:\(default\) )?tells ")),
)


def _words(text: str) -> Optional[list[str]]:
    """The values of a written list ("A, B, or C", "'A' and 'B'"), None unless each is one word."""
    parts = re.split(r",\s*(?:and |or )?|\s+and\s+|\s+or\s+|\.\s+", text.strip())
    words = [p.strip().strip("'\"") for p in parts if p.strip()]
    return words if len(words) >= 1 and all(_WORD.match(w) for w in words) else None


def enum_from(description: str) -> Optional[list[str]]:
    """The values a string field's description says it takes, or None when it lists none."""
    flat = description.replace("\n", "|")
    for pattern in _LISTS:
        match = pattern.search(flat)
        if match:
            words = _words(match.group(1))
            if words:
                return words
    for marker, item in _ITEMS:
        start = marker.search(flat)
        if start:
            words = item.findall(flat[start.start():])
            if len(words) >= 2:
                return list(dict.fromkeys(words))
    return None


# --- OpenAPI v3 -> the patch's JSON Schema --------------------------------------------------

def _ref(openapi_ref: str) -> str:
    return "#/$defs/" + openapi_ref.rsplit("/", 1)[-1]


def _reached(schemas: dict[str, Any], root: str) -> list[str]:
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(ref.rsplit("/", 1)[-1] for ref in _refs(schemas[name]))
    return sorted(seen)


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "$ref"] + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def _with_null(types: Any) -> list[str]:
    listed = types if isinstance(types, list) else [types]
    return [*listed, "null"] if "null" not in listed else listed


def _value(prop: dict[str, Any], *, nullable: bool = True) -> dict[str, Any]:
    """One field's (or list item's, or map value's) schema."""
    out: dict[str, Any] = {}
    if "description" in prop:
        out["description"] = prop["description"]
    refs = [part["$ref"] for part in prop.get("allOf", []) if "$ref" in part] or ([prop["$ref"]] if "$ref" in prop else [])
    if refs:
        out["$ref"] = _ref(refs[0])
        if not nullable:
            out["not"] = {"type": "null"}
        return out
    kind = prop.get("type")
    if kind == "array":
        out["type"] = _with_null("array") if nullable else "array"
        out["items"] = _value(prop.get("items", {}), nullable=False)
        out.update({k: prop[k] for k in KEPT if k in prop})
    elif kind == "object":
        out["type"] = _with_null("object") if nullable else "object"
        extra = prop.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = _value(extra)  # a map's values may be null: `memory: null`
    elif kind in ("string", "integer", "number", "boolean"):
        out["type"] = _with_null(kind) if nullable else kind
        for key in ("format", "default"):
            if key in prop:
                out[key] = prop[key]
        values = prop.get("enum") or (enum_from(prop.get("description", "")) if kind == "string" else None)
        if values:
            out["enum"] = [*values, None] if nullable else values
        for marker, (name, pattern) in NAME_FORMATS.items():
            if kind == "string" and marker in prop.get("description", ""):
                out["pattern"], out[FORMAT] = pattern, name
    return out


def _definition(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if name == QUANTITY_DEF:
        return {"description": "A Kubernetes quantity: 4, 500m, 16Gi, 1.5.", "type": ["string", "number", "null"],
                "pattern": "^" + NO_NEWLINE + QUANTITY.pattern[1:], "minimum": 0, FORMAT: "quantity"}
    if name == INT_OR_STRING_DEF:
        return {"description": "A whole number or a string.", "type": ["integer", "string", "null"],
                "x-kubernetes-int-or-string": True}
    out: dict[str, Any] = {"description": schema.get("description", "")}
    props = schema.get("properties")
    if props is None:  # a free-form object (FieldsV1) or a scalar type (Time)
        out["type"] = _with_null(schema.get("type", "object"))
        return out
    out["type"] = ["object", "null"]
    out["properties"] = {**{field: _value(prop) for field, prop in sorted(props.items())}, **DIRECTIVES}
    out["patternProperties"] = DIRECTIVE_PATTERNS
    out["additionalProperties"] = False
    required = [r for r in schema.get("required", []) if r not in NOT_REQUIRED_IN_A_PATCH.get(name, ())]
    if required:
        out["if"] = {"required": ["$patch"]}
        out["else"] = {"required": required}
    return out


def derive(openapi: dict[str, Any], *, version: str) -> dict[str, Any]:
    """The patch schema of a PodTemplateSpec from an OpenAPI v3 document of the core group."""
    schemas = openapi["components"]["schemas"]
    return {
        "$schema": DIALECT,
        "$id": SCHEMA_ID,
        "title": "PodTemplateSpec strategic-merge patch",
        "description": f"Generated by `make schema` from kube-apiserver {version} (/openapi/v3/api/v1); do not edit."
                       " A strategic-merge patch onto a Kubernetes pod template: fields may be null (deleted)"
                       " and take the $patch, $retainKeys, $setElementOrder and $deleteFromPrimitiveList directives.",
        "x-kubernetes-version": version,
        "$ref": f"#/$defs/{ROOT}",
        "$defs": {name: _definition(name, schemas[name]) for name in _reached(schemas, ROOT)},
    }


def text(openapi: dict[str, Any], *, version: str) -> str:
    return json.dumps(derive(openapi, version=version), indent=1, sort_keys=False) + "\n"


@functools.cache
def load() -> dict[str, Any]:
    """The committed schema (read once per process, and only by a spec with a podTemplate)."""
    return json.loads(FILE.read_text(encoding="utf-8"))
