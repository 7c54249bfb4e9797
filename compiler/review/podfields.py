"""Rules on the spec's pod fields that relate them to the framework or to other fields.

`port`, `podLabels` and `podAnnotations` (`schemas/pods.py`) are single values the models
check alone; what needs the framework's facts (does its operator find replicas by a port?),
a second field (the job's own labels, which reach the pods too) or the pod security level (a
storage `hostPath`; where `securityContext` wrote a finding `compiler/review/policy.py` makes)
is here, each at the field that says it, with the fix.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

from compiler.diagnostics import Diagnostic
from compiler.reading.resolve import Target
from foundation.frameworks import ADAPTERS, adapter
from compiler.targets import roles
from foundation.frameworks.base import ReplicaPlan
from schemas.loader import Loc
from schemas.trainjob import TrainJobSpec


def check(target: Target) -> Iterator[Diagnostic]:
    spec = target.spec
    yield from host_paths(target)
    if spec.port is not None and adapter(spec.framework).facts.port_name is None:
        able = [name for name, fw in ADAPTERS.items() if fw.facts.port_name is not None]
        yield target.view.error(
            ("port",), f"a {spec.framework} job has no framework port (its operator finds no replica by a port)",
            f"remove port; it applies to {', '.join(able)}", prefer_key=True)
    if spec.scheduling.schedulerName and spec.scheduling.gang:  # the environment's default gang counts too
        yield target.view.error(
            ("scheduling", "schedulerName"), "gang scheduling names the pods' scheduler itself",
            "remove schedulerName, or turn gang off (scheduling.gang: false)")
    for key, value in spec.podLabels.items():
        if key in target.labels and target.labels[key] != value:
            yield target.view.error(
                ("podLabels", key), f"label '{key}' is '{target.labels[key]}' in metadata.labels, which reach the"
                " pods too", f"give it one value: remove it from podLabels, or from metadata.labels")


def host_paths(target: Target) -> Iterator[Diagnostic]:
    """A storage hostPath under a pod security level that forbids it (baseline and restricted: the
    node's files), at that field. The storage overlay writes volumes after the templates the level's
    other controls are checked on (`policy._pod_security`), so this one is checked here."""
    level = target.policy.pod_security()
    if level == "privileged":
        return
    where = " in environment '%s'" % target.env_name if target.environment.policy is not None \
        and target.environment.policy.podSecurity is not None else ""
    for i, volume in enumerate(target.spec.storage):
        if volume.hostPath is not None:
            yield target.view.error(
                ("storage", i, "hostPath"),
                f"pod security level '{level}'{where} forbids a hostPath volume (HostPath Volumes): '{volume.hostPath}'"
                " is the node's", "mount a claim, configMap, secret or emptyDir instead, or ask for"
                " policy.podSecurity: privileged in trainforge.yaml")


def security_contexts(spec: TrainJobSpec) -> bool:
    """Whether the spec writes a container securityContext (the job's or a role's)."""
    return spec.securityContext is not None or any(r.securityContext is not None for r in spec.roles.values())


def security_context_loc(spec: TrainJobSpec, plan: ReplicaPlan, loc: Loc, container: str,
                         program: str) -> Optional[Loc]:
    """Where `securityContext` (the role's, else the job's) wrote a pod security finding's field of
    the program container (`loc` in the template: spec, containers, i, securityContext, ...), or
    None when it did not."""
    own = roles.entry(spec, plan)
    at: Loc = ("roles", plan.role, "securityContext") if own is not None and own.securityContext is not None \
        else ("securityContext",)
    context = roles.security_context(spec, plan)
    if context is None or loc[:2] != ("spec", "containers") or len(loc) < 4 \
            or loc[3] != "securityContext" or container not in ("", program):
        return None
    node: Any = context
    for depth, step in enumerate(loc[4:]):
        if not isinstance(node, dict) or step not in node:
            return (*at, *loc[4:4 + depth])
        node = node[step]
    return (*at, *loc[4:])
