"""Health of a training job as Argo CD (Lua) and Flux (CEL) see it, from one mapping.

Neither Argo CD nor Flux knows the `kubeflow.org` kinds: without help an Application
stays Healthy while its PyTorchJob fails, and a Flux Kustomization with `wait: true`
cannot tell a finished job from a stuck one. trainforge ships both checks, built from
the rule in the semantics doc (section 11): `Failed`=True -> Degraded, `Succeeded`=True
-> Healthy, `Suspended`=True -> Suspended, otherwise Progressing; a condition counts only
when its status is the string "True".

The Lua script is package data (`lua/kubeflow_health.lua`) and serves all seven kinds,
which share one condition algorithm; the mpi-operator's `kubeflow.org/v2beta1` MPIJob (the
mpi-operator target) writes the same condition types (Created, Running, Suspended,
Succeeded, Failed; v0.8.0 declares Restarting but never sets it) in the same way, and both
engines key a check by group and kind, so one check serves both MPIJob versions (Flux
refuses a second `healthCheckExprs` entry for a GroupKind, "duplicate custom health check",
and then reconciles nothing; seen with kustomize-controller v1.9.6). `api_versions()` lists
every version for what does name one (the cluster's reads, kustomize patch and ignore
targets). The CEL expressions say the same thing in Flux's vocabulary (Current / Failed / InProgress; Flux has no "Suspended", so a suspended job
is in progress). The tests run the shipped text in a real Lua runtime and a real CEL
evaluator (tests/gitops/health_eval.py), and the real Argo CD and Flux in tests/e2e.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from foundation.frameworks import BY_KIND
from foundation.frameworks import mpi_operator
from foundation.frameworks import stock_runtimes as trainer
from foundation.frameworks.base import GROUP  # the kubeflow.org/v1 kinds' (health.GROUP to callers)
from foundation.runs.state import ENDINGS

SCRIPT = "kubeflow_health.lua"



@dataclass(frozen=True)
class Rule:
    """How one kind says it ended: the condition types (status "True") for each outcome."""

    api_version: str
    failed: str = "Failed"
    succeeded: str = "Succeeded"
    suspended: str = "Suspended"
    also: tuple[str, ...] = ()  # other apiVersions of the kind that report the same way

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def api_versions(self) -> tuple[str, ...]:
        return (self.api_version, *self.also)


# One row per kind with a health check, in the order the generated objects list them.
# Another kind is one more row (and its Lua/CEL follow from the row). Which condition says
# what is the run semantics' table (foundation.runs.state.ENDINGS), which `status` and
# `plan --live` read too.
RULES: dict[str, Rule] = {kind: Rule(adapter.facts.api_version, **ENDINGS[kind].as_dict())
                          for kind, adapter in BY_KIND.items()}
# Kubeflow Trainer v2 (the trainer-v2 target): a TrainJob ends Complete (its JobSet's
# Completed) or Failed, and is Suspended while Kueue holds it (Trainer v2.3.0 API).
RULES[trainer.TRAINJOB] = Rule(trainer.API_VERSION, **ENDINGS[trainer.TRAINJOB].as_dict())
# the mpi-operator's v2beta1 MPIJob (the mpi-operator target): the same conditions as v1's
RULES[mpi_operator.KIND] = Rule(RULES[mpi_operator.KIND].api_version, **ENDINGS[mpi_operator.KIND].as_dict(),
                                also=(mpi_operator.API_VERSION,))

# Flux (fluxcd/pkg runtime/cel) evaluates inProgress, then failed, then current; the first
# true one wins, none true is InProgress, and an evaluation error is Unknown with the
# error as the message (Flux waits, and reports the error when its timeout ends). Real
# cel-go cannot guard a top-level variable the object lacks: before the first status
# write `has(status.conditions)` fails with "no such attribute(s): status.conditions", and
# `has(status)` is not a valid has() argument. So "no status yet" is read from metadata:
# a write through the /status subresource, the training operator's only way to write
# status, leaves a managedFields entry with `subresource: status` (Kubernetes >= 1.22).
# Until then the job is in progress, exactly what Argo CD's Lua says ("Waiting for the
# training operator..."), and `status` is never read. A deletion also wins over a Failed
# condition, as Argo CD's "Pending deletion" does.
NO_STATUS_YET = ("!has(metadata.managedFields) || "
                 "!metadata.managedFields.exists(f, has(f.subresource) && f.subresource == 'status')")
_HAS = "has(status.conditions) && status.conditions.exists(c, c.type == '{type}' && c.status == 'True')"


def _cel(rule: Rule) -> dict[str, str]:
    return {
        "inProgress": f"has(metadata.deletionTimestamp) || {NO_STATUS_YET}",
        "failed": _HAS.format(type=rule.failed),
        "current": _HAS.format(type=rule.succeeded),
    }




def kinds() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every kind with a health check, once per kind (its first apiVersion:
    the engines key a check by group and kind), in the table's order."""
    return [(rule.api_version, kind) for kind, rule in RULES.items()]


def api_versions() -> list[tuple[str, str]]:
    """(apiVersion, kind) of every kind, each of its versions (MPIJob: v1 and the mpi-operator's v2beta1)."""
    return [(api_version, kind) for kind, rule in RULES.items() for api_version in rule.api_versions]


def _check_kind(kind: str) -> None:
    if kind not in RULES:
        raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(RULES)}")


@lru_cache(maxsize=1)
def _lua_template() -> str:
    return resources.files("compiler.gitops").joinpath("lua", SCRIPT).read_text(encoding="utf-8")


_LUA_NAMES = 'local FAILED, SUCCEEDED, SUSPENDED = "Failed", "Succeeded", "Suspended"'


def lua_script(kind: str | None = None) -> str:
    """The Lua health check for `kind` (the kubeflow.org kinds share one text)."""
    text = _lua_template()
    if kind is None:
        return text
    _check_kind(kind)
    rule = RULES[kind]
    names = f'local FAILED, SUCCEEDED, SUSPENDED = "{rule.failed}", "{rule.succeeded}", "{rule.suspended}"'
    return text.replace(_LUA_NAMES, names, 1)


def cel_expressions(kind: str, api_version: str | None = None) -> dict[str, str]:
    """One Flux `healthCheckExprs` entry for `kind` (at `api_version`, else its first)."""
    _check_kind(kind)
    rule = RULES[kind]
    if api_version is not None and api_version not in rule.api_versions:
        raise ValueError(f"{kind} has no health check at {api_version}; expected one of {', '.join(rule.api_versions)}")
    return {"apiVersion": api_version or rule.api_version, "kind": kind, **_cel(rule)}
