"""Upstream's admission rules applied to the job a spec compiles to, at review time.

The Training Operator's webhook (and trainforge's ValidatingAdmissionPolicies, from the same
table in `foundation/admission.py`) refuses a job at sync time, when Argo CD or Flux applies
it. Most rules cannot fail for a compiled job: the job name is a DNS-1035 label of at most
63 characters (`schemas.types.Name`), the replica types, their counts (Master and Chief 1),
XGBoost's Master, elastic PyTorch's Worker and `nprocPerNode` come from the framework
adapters, and no spec field sets `managedBy` or the deprecated `elasticPolicy.nProcPerNode`
(`tests/compiler/review/test_admission_review.py` holds every example to that). What a spec can
break is the containers, through `podTemplate`: the framework's own container with its image
emptied (`image: ""` or `null`). This rule merges the podTemplate as lowering does and runs
the table (for MPIJob and MXJob, their reconcilers' checks), only when the podTemplate lists
containers (so other specs pay nothing), and names each problem at the podTemplate entry
that causes it. Containers the podTemplate adds without an image are `compiler/review/podrules.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from compiler.diagnostics import Diagnostic
from foundation.frameworks import adapter
from compiler.reading.resolve import Target
from compiler.targets import api
from compiler.targets.lowering import pod_template

_CONTAINER = re.compile(r"\[(\w+)\]\.template\.spec\.containers(?:\[(\d+)\])?")


def _own_entry(containers: list[Any], own: str) -> int | None:
    return next((i for i, c in enumerate(containers) if isinstance(c, dict) and c.get("name") == own), None)


def check(target: Target) -> Iterator[Diagnostic]:
    pod = target.spec.podTemplate.get("spec")
    containers = pod.get("containers") if isinstance(pod, dict) else None
    if not api(target.api).upstream_admission or not isinstance(containers, list):
        return
    fw = adapter(target.spec.framework)
    facts = fw.facts
    own = facts.container
    templates = {plan.replica_type: pod_template(target.spec, plan, facts, target, shared=True)  # read only
                 for plan in fw.plan(target.spec)}
    job = {"metadata": {"name": target.name}, "spec": {facts.replica_specs: {
        rtype: {"replicas": 1, "template": template} for rtype, template in templates.items()}}}
    entry = _own_entry(containers, own)
    at = ("podTemplate", "spec", "containers") if entry is None else ("podTemplate", "spec", "containers", entry)
    seen: set[str] = set()
    for message in _problems(job, facts.kind):
        found = _CONTAINER.search(message)
        if found and found.group(2) is not None:
            merged = templates[found.group(1)]["spec"].get("containers") or []
            if (merged[int(found.group(2))] or {}).get("name") != own:
                continue  # a container the podTemplate adds: compiler/review/podrules.py names it
        detail = message.split(": ", 1)[-1]
        if detail in seen:
            continue  # the same podTemplate entry breaks every replica type alike
        seen.add(detail)
        image = entry is not None and "image" in containers[entry] and "image" in message.lower()
        deleted = entry is not None and containers[entry].get("$patch") == "delete"
        yield target.view.error(
            at + (("image",) if image else ()),
            f"the {facts.kind} this compiles to is refused by the Training Operator: {message}",
            f"remove the $patch: delete of the '{own}' container" if deleted else
            f"keep the '{own}' container and its image (spec.image sets it); drop image from podTemplate",
            prefer_key=not image)


def _problems(job: dict[str, Any], kind: str) -> list[str]:
    """Upstream's container rules for the job: the webhook table, or (MPIJob, MXJob) the reconciler's."""
    # imported here: building its rule table would cost every build CPU (bench/README.md),
    # and only a spec whose podTemplate lists containers gets this far
    from foundation import admission

    if kind in admission.KIND_RULES:
        return [m for m in admission.errors(job, kind) if ".template.spec.containers" in m]
    return admission.reconciler_errors(job, kind)
