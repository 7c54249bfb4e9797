"""The sentence a reviewer reads: what a change is, then what the controller and engine do with it.

A lead names the change (`new job: 1 Master, 3 Worker (32 GPUs)`, `renamed from nlp/bert`,
`Worker replicas 2 -> 3, image a:1 -> a:2`); the hazard table's clauses follow it; with
`--live`, a job that is killed is named with its state and how long it has been in it
(`kills bert-finetune, Running for 3 h 12 min`), and with the progress it reported, what
the kill throws away (`kills bert-finetune at 62%, 3 h 10 min left, 96 GPU-hours of progress`).
Counts agree with their number ("1 GPU", "32 GPUs"). The headline over all jobs is
`compiler.plan.headline`'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Optional

from compiler.plan.aspects import Aspects
from compiler.plan.headline import count
from compiler.plan.live import Live
from compiler.plan.sides import Job

SHOWN = 5  # parts of a change named in a lead before "and N more"


def pods_text(job: Job) -> str:
    return ", ".join(f"{count} {role}" for role, count, _ in job.pods if count)


def create_lead(job: Job, *, queued: bool, suspended: bool) -> str:
    lead = f"new job: {pods_text(job)} ({count(job.gpus, 'GPU')})"
    if queued:
        lead += f", queued in Kueue's {job.queue}: it runs when admitted"
    if suspended:
        lead += ", created suspended: nothing runs until policy.suspend is removed"
    return lead


def _killed(old: Job, found: Optional[Live], now: datetime) -> str:
    if found is None:
        return ""
    if found.state == "absent":
        return f"; {old.name} is not in the cluster"
    if found.state in ("Succeeded", "Failed"):
        return f"; {old.name} has finished ({found.fact(now)}): no run is killed"
    price = found.price(old.gpus, now)
    return f"; kills {old.name} {price} ({found.fact(now)})" if price else f"; kills {old.name}, {found.fact(now)}"


def delete_lead(old: Job, found: Optional[Live], now: datetime) -> str:
    return "removed from git" + _killed(old, found, now)


def rename_lead(old: Job, new: Job, found: Optional[Live], now: datetime) -> str:
    if old.kind != new.kind:
        lead = f"{old.kind} -> {new.kind}: a framework or target switch is a new job"
    else:
        lead = f"renamed from {old.namespace}/{old.name} (the same spec document)"
    return lead + _killed(old, found, now)


def update_lead(a: Aspects, *, old: Optional[Job] = None, new: Optional[Job] = None) -> str:
    """The change in the spec's words where they are known: `spec.nodes 2 -> 3` for the replica counts
    `nodes` makes (given both sides' jobs), a role's `spec.roles.ps.replicas 1 -> 2`, else the kind's."""
    parts = _replicas(a, old, new)
    parts += [f"image {b} -> {n}" for b, n in a.images]
    if a.templates and not a.images:
        parts.append("pod template of " + ", ".join(a.templates))
    parts += [f"spec.{f}" for f in a.job_fields]
    if a.suspend[0] != a.suspend[1]:
        parts.append("suspend " + ("added" if a.suspend[1] else "removed"))
    parts += [f"spec.{f}" for f in a.immutable if f != "trainer" or not (a.replicas or a.images)]
    if a.runtime_patches and not a.immutable:
        parts.append("spec.runtimePatches")
    parts += [f"runPolicy.{f}" for f in a.run_policy]
    if a.scheduling_policy:
        parts.append("runPolicy.schedulingPolicy")
    if a.restart_scope:
        parts.append(f"restart scope {a.restart_scope[0]} -> {a.restart_scope[1]}")
    if a.queue:
        parts.append(f"queue {a.queue[0] or '(none)'} -> {a.queue[1] or '(none)'}")
    if a.runtime:
        parts.append(f"its TrainingRuntime {a.runtime}")
    parts += [f"metadata.{m}" for m in a.metadata]
    if not parts and a.moved:
        parts.append("the spec file moved")
    if not parts and a.others:
        parts.append(", ".join(a.others))
    more = len(parts) - SHOWN
    return ", ".join(parts[:SHOWN]) + (f" and {more} more" if more > 0 else "")


def _replicas(a: Aspects, old: Optional[Job], new: Optional[Job]) -> list[str]:
    if old is None or new is None or not a.replicas:
        return [f"{rtype} replicas {b} -> {n}" for rtype, (b, n) in a.replicas.items()]
    roles = set(old.target.spec.roles) | set(new.target.spec.roles)
    parts, nodes = [], (old.target.spec.nodes, new.target.spec.nodes)
    for rtype, (b, n) in a.replicas.items():
        if rtype.lower() in roles:
            parts.append(f"spec.roles.{rtype.lower()}.replicas {b} -> {n}")
        elif nodes[0] != nodes[1]:
            part = f"spec.nodes {nodes[0]} -> {nodes[1]}"
            parts += [] if part in parts else [part]
        else:
            parts.append(f"{rtype} replicas {b} -> {n}")
    return parts


def summary(change: str, lead: str, clauses: list[str], *, unchanged_fields: bool) -> str:
    if change == "unchanged":
        if clauses:  # a job git adopts from the cluster (compiler.plan.adoption)
            text = "; ".join(clauses)
            return text[:1].upper() + text[1:] + "."
        return "the spec edit compiles to the same objects: nothing changes" if unchanged_fields else ""
    text = "; ".join(part for part in (lead, "; ".join(clauses)) if part) if not (lead and clauses) else (
        lead + ": " + "; ".join(clauses))
    text = text or "the compiled objects change; nothing that runs reads the change"
    first = text.split(" ", 1)[0]
    plain = "." not in first and "/" not in first  # a field path or job name keeps its case
    return (text[:1].upper() + text[1:] if plain else text) + "."
