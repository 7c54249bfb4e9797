"""Argo CD's and Flux's verdicts on an object from the health checks trainforge ships, in
real runtimes: the Lua in lupa (Lua 5.1, as Argo CD's gopher-lua) with Argo CD's sandbox,
the CEL in cel-python following fluxcd/pkg's StatusEvaluator. Test-only: both runtimes are
test dependencies, and the shipped module (compiler.gitops.health) only writes the checks.
The real engines are the authority (tests/e2e); these answer the cheap cases.
"""

from __future__ import annotations

import re
from typing import Any

from compiler.gitops.health import cel_expressions, lua_script

# Argo CD's health codes -> the kstatus status Flux derives from our expressions.
ARGO_TO_FLUX = {
    "Healthy": "Current",
    "Degraded": "Failed",
    "Progressing": "InProgress",
    "Suspended": "InProgress",
}

# Top-level fields an expression reads (`c.status` inside a macro is not one).
_ROOT = re.compile(r"(?<![.\w])(apiVersion|kind|metadata|spec|status)\.")


def _sandboxed_runtime():
    from lupa import lua51

    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    g = runtime.globals()
    # Argo CD opens only the safe libraries; a script that reaches for io/os would work
    # here and fail there, so take them away.
    for name in ("io", "os", "debug", "package", "require", "dofile", "loadfile", "load", "loadstring"):
        g[name] = None
    return runtime


def evaluate_lua(kind: str, obj: dict[str, Any]) -> dict[str, str]:
    """Run the shipped Lua check on `obj` the way Argo CD does: `obj` global, table back."""
    return run_lua(lua_script(kind), obj)  # lua_script refuses a kind without a check


def run_lua(script: str, obj: dict[str, Any]) -> dict[str, str]:
    """Run any Argo CD health script (e.g. one read back from a generated argocd-cm)."""
    runtime = _sandboxed_runtime()
    runtime.globals()["obj"] = runtime.table_from(obj, recursive=True)
    result = runtime.execute(script)
    return {"status": str(result["status"]), "message": str(result["message"] or "")}


def evaluate_cel(kind: str, obj: dict[str, Any]) -> str:
    """Flux's verdict on `obj` from the shipped expressions (see `run_cel`)."""
    return run_cel(cel_expressions(kind), obj)


def run_cel(exprs: dict[str, str], obj: dict[str, Any]) -> str:
    """Flux's verdict on `obj` from one healthCheckExprs entry: Current, Failed,
    InProgress or Unknown.

    An emulation for cheap cases; the real kustomize-controller (tests/e2e) is the
    authority. Mirrors fluxcd/pkg runtime/cel StatusEvaluator: a stale
    `status.observedGeneration` is InProgress; then inProgress, failed, current in that
    order; none true is InProgress; an evaluation error is Unknown (Flux keeps waiting
    until its timeout). The object's top-level fields are the expression's variables.
    cel-go fails on a variable the object lacks (`status` before the first status write),
    even inside `has()`, where cel-python answers false; the reference is checked here
    first so the verdict is cel-go's (Unknown).
    """
    import celpy

    status = obj.get("status") or {}
    observed = status.get("observedGeneration") if isinstance(status, dict) else None
    if observed is not None and observed != obj.get("metadata", {}).get("generation", observed):
        return "InProgress"
    env = celpy.Environment()
    activation = {key: celpy.json_to_cel(value) for key, value in obj.items()}
    for field, verdict in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        if field not in exprs:  # only `current` is required
            continue
        if any(root not in obj for root in _ROOT.findall(exprs[field])):
            return "Unknown"
        try:
            value = env.program(env.compile(exprs[field])).evaluate(activation)
        except celpy.CELEvalError:
            return "Unknown"
        if not isinstance(value, celpy.celtypes.BoolType):
            return "Unknown"
        if bool(value):
            return verdict
    return "InProgress"
