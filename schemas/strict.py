"""The base of every spec model, and the environment values the job and its roles share.

`StrictModel` is what makes the spec strict: strict types, unknown keys rejected (a typo is an
error with a position, never a silently ignored key). It sits below `schemas/trainjob.py` and
the parts split out of it (`schemas/resources.py`, `schemas/placement.py`) and
`schemas/project.py`, so each imports it without importing the whole TrainJob.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from schemas.types import NonEmptyStr


class StrictModel(BaseModel):
    """Base for every spec object: strict types, unknown keys rejected, camelCase names."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=False)


class SecretRef(StrictModel):
    secret: NonEmptyStr = Field(description="Secret name in the job's namespace.")
    key: NonEmptyStr = Field(description="Key inside the Secret.")


class ConfigMapRef(StrictModel):
    configMap: NonEmptyStr = Field(description="ConfigMap name in the job's namespace.")
    key: NonEmptyStr = Field(description="Key inside the ConfigMap.")


def _env_kind(value: Any) -> str | None:
    # Tags show up in pydantic error locs; "env:" keeps them apart from the real keys
    # `secret` and `configMap` of the same objects (compiler/reading/validation.py skips them).
    if isinstance(value, str):
        return "env:value"
    if isinstance(value, dict):
        return "env:configMap" if "configMap" in value else "env:secret"
    return None


EnvValue = Annotated[
    Annotated[str, Field(strict=True), Tag("env:value")]
    | Annotated[SecretRef, Tag("env:secret")]
    | Annotated[ConfigMapRef, Tag("env:configMap")],
    Discriminator(
        _env_kind,
        custom_error_type="env_value",
        custom_error_message="an env value is a string, {secret: NAME, key: KEY} or"
        " {configMap: NAME, key: KEY}; quote numbers and booleans",
    ),
]
