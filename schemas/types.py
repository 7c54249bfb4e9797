"""Leaf types of the spec: names, quantities, durations, env names.

These sit under every model in `schemas/`. Each is an `Annotated` type whose validator
raises a `ValueError` with a message that already says how to fix the value, because the
diagnostics layer prints pydantic's message verbatim after the field path. Types are
strict (a YAML `true` is never a node count) so that what a user wrote is what runs.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, StrictInt, WithJsonSchema

from schemas import durations
from schemas.quantity import (
    QUANTITY,  # every quantity in the spec is an amount: no minus sign
)

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
# a qualified name (an optional DNS-subdomain prefix and '/', then a name part): what the API
# server's validateResourceName takes before its own rules for container resources
QUALIFIED_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
HUGEPAGES = "hugepages-"
STORAGE_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")  # Trainer v2.3's CRD rule on storageUri
SHARED_MEMORY_CHOICES = ("unsized", "host")
LABEL_NAME = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _dns1035(value: str) -> str:
    if len(value) > 63:
        raise ValueError(f"'{value}' is {len(value)} characters; use at most 63")
    if not DNS1035.match(value):
        raise ValueError(
            f"'{value}' is not a DNS-1035 label; use lower-case letters, digits and '-',"
            " starting with a letter and ending with a letter or digit"
        )
    return value


def _matching(pattern: re.Pattern[str], problem: str, *, most: int | None = None) -> tuple[Any, Any]:
    """The metadata of a strict string type (`Annotated[str, *_matching(...)]`): `pattern` and
    at most `most` characters in the JSON Schema, and a validator refusing any other value as
    `'<value>' <problem>`, so the schema and the check say the limits once."""

    def check(value: str) -> str:
        if (most is not None and len(value) > most) or not pattern.match(value):
            raise ValueError(f"'{value}' {problem}")
        return value

    extra: dict[str, Any] = {"pattern": pattern.pattern, **({"maxLength": most} if most is not None else {})}
    return Field(strict=True, json_schema_extra=extra), AfterValidator(check)


def _quantity(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("a quantity cannot be a boolean; write a number such as 4 or 16Gi")
    if isinstance(value, (int, str)) and str(value).startswith("-"):
        raise ValueError(f"{value} is negative; resources are amounts, use 0 or more")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and QUANTITY.fullmatch(value):
        return value
    if isinstance(value, float):
        raise ValueError(_float_advice(value))
    if isinstance(value, str) and QUANTITY.fullmatch(value.strip()):
        raise ValueError(f"{value!r} has white space around it (a YAML block scalar keeps its last line break),"
                         f" which the API server refuses; write {value.strip()}")
    raise ValueError(
        f"'{value}' is not a Kubernetes quantity; write e.g. 4, \"500m\", 16Gi or 1.5"
    )


def _float_advice(value: float) -> str:
    """YAML reads `1e3`, `0.5` or `.inf` as a float, which is not a quantity as written;
    the advice is the same amount written as one (1.5 -> "1.5", 1e3 -> "1000", 1e9 -> 1G),
    never a stock example that changes the amount (it said "use 500m" for 1e3)."""
    from decimal import Decimal

    from schemas.quantity import DECIMAL_SI, canonical

    if value != value or value in (float("inf"), float("-inf")):
        return f"{value} is not an amount; write a quantity such as 4, 500m or 16Gi"
    text = f"{value:g}"
    same = f'"{text}"' if "e" not in text and QUANTITY.fullmatch(text) else canonical(Decimal(repr(value)), DECIMAL_SI)
    return f"{text} is read as a YAML float, not a Kubernetes quantity; write {same} (the same amount)"


def _device_name(value: str) -> str:
    """A container resource the API server takes beside cpu and memory (its
    validateContainerResourceName): `ephemeral-storage`, `hugepages-<page size>`, or an
    extended resource `<domain>/<name>` outside the kubernetes.io domain."""
    if value in ("cpu", "memory"):
        raise ValueError(f"{value} has its own field; write resources.{value} (and resources.limits.{value} for a"
                         " limit that differs)")
    if value.startswith(HUGEPAGES):
        if page_size(value) is None:
            raise ValueError(f"'{value}' names no page size; write hugepages-2Mi or hugepages-1Gi")
        return value
    if "/" not in value:
        if value == "ephemeral-storage":
            return value
        raise ValueError(f"'{value}' is not a resource a container can ask for; write ephemeral-storage,"
                         " hugepages-<size> or an extended resource such as vpc.amazonaws.com/efa")
    domain = value.split("/", 1)[0]
    if domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        raise ValueError(f"'{value}' is in the kubernetes.io domain, which no extended resource may use;"
                         " write the device plugin's own name, e.g. vpc.amazonaws.com/efa")
    name = value.split("/", 1)[1]
    if len(domain) > 253 - len("requests.") or len(name) > 63 or not QUALIFIED_NAME.match(value) \
            or value.startswith("requests."):
        raise ValueError(f"'{value}' is not a valid resource name; write <domain>/<name> in lower case,"
                         " e.g. vpc.amazonaws.com/efa or rdma/hca_shared_devices_a")
    return value


def page_size(name: str) -> Decimal | None:
    """The page size in bytes of a `hugepages-<size>` resource, None when it names none."""
    from schemas.quantity import parse

    try:
        size = parse(name[len(HUGEPAGES):], signed=False).amount
    except ValueError:
        return None
    return size if size > 0 else None


def _shared_memory(value: object) -> object:
    if value in SHARED_MEMORY_CHOICES:
        return value
    if isinstance(value, str) and not QUANTITY.fullmatch(value) and not QUANTITY.fullmatch(value.strip()) \
            and not value.startswith("-"):
        raise ValueError(f"'{value}' is not a size; write a quantity such as 64Gi, unsized (memory-backed,"
                         " no size limit) or host (the node's /dev/shm)")
    return _quantity(value)


def _storage_uri(value: str) -> str:
    if len(value) > 2048 or not STORAGE_URI.fullmatch(value):
        raise ValueError(f"'{value}' is not a URI Trainer takes; write scheme://..., e.g. hf://tatsu-lab/alpaca"
                         " or s3://bucket/path")
    return value


def _duration(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("a duration cannot be a boolean; write e.g. 90s, 30m, 24h or 7d")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"{value} is negative; durations are whole seconds >= 0")
        return value
    if isinstance(value, str):
        seconds = durations.SPEC.seconds(value)
        if seconds is not None:
            return int(seconds)
    raise ValueError(f"'{value}' is not a duration; write 90s, 30m, 24h, 7d or whole seconds")


def _label_key(value: str) -> str:
    if len(value.rsplit("/", 1)[-1]) > 63 or not LABEL_NAME.match(value):
        raise ValueError(f"'{value}' is not a valid label key; use e.g. team or example.com/team")
    return value


# Patterns go into the JSON Schema only (editors, check-jsonschema); validation itself runs
# through the validators (above, and `_matching`'s) because their messages say how to fix the value.
Name = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": DNS1035.pattern, "maxLength": 63}),
    AfterValidator(_dns1035),
]
Namespace = Annotated[str, *_matching(
    DNS1123_LABEL, "is not a valid namespace; use at most 63 lower-case letters, digits and '-', starting and ending"
    " with a letter or digit", most=63)]
ContainerName = Annotated[str, *_matching(
    DNS1123_LABEL, "is not a valid container name; use at most 63 lower-case letters, digits and '-', starting and"
    " ending with a letter or digit", most=63)]
ObjectName = Annotated[str, *_matching(
    DNS1123_SUBDOMAIN, "is not a valid object name; use lower-case letters, digits, '-' and '.', starting and ending"
    " with a letter or digit", most=253)]
Quantity = Annotated[
    str,
    BeforeValidator(_quantity),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": QUANTITY.pattern}]}),
]
DeviceName = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": QUALIFIED_NAME.pattern}),
    AfterValidator(_device_name),
]
SharedMemorySize = Annotated[
    str,
    BeforeValidator(_shared_memory),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": QUANTITY.pattern},
                              {"enum": list(SHARED_MEMORY_CHOICES)}]}),
]
StorageUri = Annotated[
    str,
    Field(strict=True, json_schema_extra={"pattern": STORAGE_URI.pattern, "maxLength": 2048}),
    AfterValidator(_storage_uri),
]
Seconds = Annotated[
    int,
    BeforeValidator(_duration),
    WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": durations.SPEC.pattern}]}),
]
EnvName = Annotated[str, *_matching(
    ENV_NAME, "is not a valid environment variable name; use letters, digits, '_', '-' or '.', not starting with a digit")]
LabelKey = Annotated[str, Field(strict=True), AfterValidator(_label_key)]
LabelValue = Annotated[str, *_matching(
    LABEL_VALUE, "is not a valid label value; use at most 63 letters, digits, '-', '_' or '.', starting and ending"
    " with a letter or digit", most=63)]
PositiveInt = Annotated[StrictInt, Field(ge=1)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0)]
NonEmptyStr = Annotated[str, Field(strict=True, min_length=1)]
