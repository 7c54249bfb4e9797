"""One job's verdict: its hazards and the sentence a reviewer reads, from the hazard table.

The change class and the aspects of a change pick entries of `compiler.plan.hazards.RULES`
for the environment's setting; the job's state (`unknown` offline) keeps those that can
hold in it. Where entries meet, the one that decides wins: a suspend or a resume decides
what becomes of a change of the pods (no pods run to mix, or the resumed run takes the new
spec); on a queued job a change of pod counts or containers is Kueue's to act on (it stops and
re-queues the job) before the controller's; a finished job runs nothing of an edit. Under
train-controller an edit is deferred to the next run exactly when the run spec changes
(`Aspects.run_spec`, foundation.runs.spec: the controller's own rule); under the upstream
operator the pods mix when what it builds pods from changes (`Aspects.pod_spec`). A run that
`--live` shows has not started takes the change instead (foundation.runs.started, the
controller's rule too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from compiler.plan import hazards as table
from compiler.plan.aspects import Aspects
from compiler.plan.hazards import Effect
from compiler.plan.model import HAZARDS
from foundation.frameworks.base import SCALED_REPLICA_TYPE  # what an elastic job's scaling changes
from schemas.durations import prose

SCOPE_DOES = {"job": "restarts the whole job as one attempt (every pod, one new attempt)",
              "pod": "restarts on its own beside the running pods"}


@dataclass
class Verdict:
    hazards: list[str] = field(default_factory=list)
    clauses: list[str] = field(default_factory=list)

    def add(self, effect: Effect, now: str, **fill: object) -> bool:
        """Add `effect` if it holds in the job's state `now`; True when it did."""
        if now not in effect.when:
            return False
        self.hazards.extend(h for h in effect.hazards if h not in self.hazards)
        self.clauses.append(effect.says.format(**fill))
        return True

    def ordered(self) -> list[str]:
        return [h for h in HAZARDS if h in self.hazards]


@dataclass(frozen=True)
class Context:
    setting: tuple[str, str]
    state: str = "unknown"  # the old job's state (the job's own for a create or an update)
    queued: bool = False  # Kueue manages the job (a queue label on a kind it integrates)
    ttl: Optional[int] = None  # the head's ttlSecondsAfterFinished
    started: Optional[bool] = None  # its run has started (foundation.runs.started; None: not known, offline)

    @property
    def rules(self) -> dict[str, Effect]:
        return table.RULES[self.setting]

    @property
    def controller(self) -> str:
        return table.CONTROLLER_NAMES[self.setting[1]]


def ttl(verdict: Verdict, ctx: Context) -> None:
    if ctx.ttl is not None and "ttl" in ctx.rules:
        verdict.add(ctx.rules["ttl"], ctx.state, controller=ctx.controller, ttl=prose(ctx.ttl))


def update(a: Aspects, ctx: Context) -> Verdict:
    """The verdict on an `update` (or an `unchanged` job: nothing)."""
    v, rules, state = Verdict(), ctx.rules, ctx.state
    fill = {"controller": ctx.controller}
    refused = False
    if a.immutable:
        refused = v.add(rules["immutable"], state, immutable=", spec.".join(a.immutable))
    elif a.runtime_patches and not a.suspend[0] and not (state in table.FINISHED and a.suspend[1]):
        # refused unless the job was suspended (no active pods): suspending a running job in the
        # same update is refused too, since its JobSet still has active pods
        refused = v.add(rules["runtime-patches"], state)
    if a.claims:
        refused = v.add(rules["claim"], state, claims=", ".join(a.claims)) or refused
    if refused:  # the update never lands: nothing else of it happens (the engine applies none of it)
        return v
    before, after = a.suspend
    if before != after and ctx.queued:
        v.add(rules["kueue-suspend"], state)
        before = after = False  # Kueue's, not git's: the job runs as Kueue decides
    elif after and not before:
        v.add(rules["suspend"], state, **fill)
    elif before and not after:
        v.add(rules["resume"], state, **fill)
    if a.changes_pods:
        _pods(v, a, ctx, suspended=before and after, changes_suspend=before != after)
    _run_policy(v, a, ctx)
    if a.queue is not None and a.queue[1] is not None:
        v.add(rules["queue"], state)
    if a.runtime and "runtime" in rules:
        v.add(rules["runtime"], state, runtime=a.runtime)
    others = [o for o in a.others if not any(o.endswith(f" {c}") for c in a.claims)]
    if others:
        v.add(rules["others"], state, others=", ".join(others))
    if a.moved:
        v.add(rules["moved"], state, moved=a.moved[0])
    if a.metadata and not v.clauses:
        v.add(rules["metadata"], state)
    if state in table.FINISHED and (a.changes_pods or a.run_policy or any(a.suspend)) and "finished" in rules:
        v.add(rules["finished"], state, state=state)
    ttl(v, ctx)
    return v


def _run_policy(v: Verdict, a: Aspects, ctx: Context) -> None:
    """The run policy the controller reads live, and the fields it took once (`run-policy-held`)."""
    held = ctx.rules.get("run-policy-held")
    kept = [f for f in a.run_policy if held is not None and f in held.only]
    live = [f for f in a.run_policy if f not in kept]
    for effect, fields in ((ctx.rules.get("run-policy"), live), (held, kept)):
        if effect is not None and fields:
            v.add(effect, ctx.state, fields=", ".join(f"runPolicy.{f}" for f in fields), controller=ctx.controller)


def _pods(v: Verdict, a: Aspects, ctx: Context, *, suspended: bool, changes_suspend: bool) -> None:
    """A change of the pods of a run: what the setting's controller does with it."""
    rules, state = ctx.rules, ctx.state
    held = rules.get("pod-spec-held")  # replica types the controller made once (the mpi-operator's launcher)
    kept = [t for t in a.templates if held is not None and t in held.only]
    if kept:
        v.add(held, state)  # no resume brings the change to them
    if ctx.queued and a.containers and "kueue-reshape" in rules and not changes_suspend:
        v.add(rules["kueue-reshape"], state)
        return
    if kept and not (a.replicas or set(a.templates) - set(kept) or a.job_fields or a.scheduling_policy
                     or a.restart_scope):
        return  # only what the controller holds changed
    if suspended:
        v.add(rules["suspended"], state)
        return
    if changes_suspend:
        return  # suspended now (no pods to mix) or resumed (the new run takes the new spec)
    ours = ctx.setting[1] == table.OURS  # train-controller keeps the run spec (the gang and the scope too)
    # an elastic job's Worker count is read live by both controllers: nothing else changed, it scales
    scaled = a.elastic is not None and SCALED_REPLICA_TYPE in a.replicas
    if scaled and not a.pod_spec and not (ours and a.run_spec) and "elastic-scale" in rules:
        v.add(rules["elastic-scale"], state, workers=a.replicas[SCALED_REPLICA_TYPE][1])
    if a.restart_scope and "restart-scope" in rules:
        scope = a.restart_scope[1]
        v.add(rules["restart-scope"], state, scope=f"{a.restart_scope[0]} -> {scope}", scope_does=SCOPE_DOES.get(
            scope, SCOPE_DOES["pod"]))
    if "pod-spec" in rules and (a.run_spec if ours else a.pod_spec):
        # train-controller holds a change of a started run only; one that has not started takes it
        v.add(rules["not-started"] if ours and ctx.started is False else rules["pod-spec"], state)
    elif a.scheduling_policy and not ours and "run-policy" in rules:  # upstream: its PodGroup follows
        v.add(rules["run-policy"], state, fields="runPolicy.schedulingPolicy", controller=ctx.controller)


def removal(old_state: str, *, old: str) -> Verdict:
    """A delete: the engine prunes the old job."""
    v = Verdict()
    v.add(table.KILLS, old_state, old=old)
    return v


def rename(ctx: Context, *, old: str, new: str) -> Verdict:
    """A rename (or a framework or target switch): the old job pruned, the new one a new run."""
    v = removal(ctx.state, old=old)
    v.add(table.RESTARTS, ctx.state, new=new)
    ttl(v, ctx)
    return v


def create(ctx: Context) -> Verdict:
    v = Verdict()
    ttl(v, ctx)
    return v
