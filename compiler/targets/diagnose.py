"""Positioned diagnostics for what a target cannot carry, worded alike across the targets.

A target's rules (`trainer_v2_rules`, `mpi_operator_rules`) point at the spec field that asks
for something the target's API cannot express. The value may come from the job file or from
a default of the environment in `trainforge.yaml`; the message says which, and the usual way
out is to remove the field for that environment only, which `unset` spells.
"""

from __future__ import annotations

from compiler.diagnostics import Diagnostic
from compiler.reading.resolve import Target
from schemas.loader import Loc


def error(target: Target, loc: Loc, what: str, fix: str, *, severity: str = "error") -> Diagnostic:
    """A diagnostic at `loc` (its key), naming the environment's default when the job does not write it."""
    if not target.view.written(loc):
        what += f" (the default of environment '{target.env_name}' in trainforge.yaml)"
    d = target.view.error(loc, what, fix, prefer_key=True)
    return d if severity == "error" else Diagnostic(d.file, d.line, d.col, d.path, d.message, d.fix, severity)  # type: ignore[arg-type]


def unset(target: Target, loc: Loc) -> str:
    dotted = ".".join(str(p) for p in loc)
    return f"remove it, or unset it for this environment with environments.{target.env_name}.{dotted}: null"
