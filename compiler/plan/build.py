"""The plan from both sides: per environment, every job's change, fields, GPUs, hazards, sentence.

`make()` is the one entry: it resolves the base, reads the accepts the branch's commits
carry, and plans each project the sources belong to (`compiler.plan.projects`): compiles
its head and base (`compile_sides`), under `--live` hands the jobs both sides name and the
claims that grow (`wanted`: their API resources, plurals from the target table) to the
caller's reader and gets their live objects back, then `assemble()` pairs the jobs, judges
each change with the hazard table for the environment's setting and the job's state, sums
the GPUs and writes the sentence. The reader is the CLI's (only `compiler/cli/cluster.py`
may reach a cluster), so this stays pure but for git. Accepted hazards (`--accept`,
`Trainforge-Accept:` trailers, `compiler.plan.accepts`) stay in the plan, marked, and no
longer count for `--fail-on`; an accept that matched nothing, or a trailer that could not be
read, is a notice of the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Optional

from compiler.plan import accepts as acceptsmod
from compiler.plan import claims as claimsmod
from compiler.plan import fields as fieldsmod
from compiler.plan import gpus as gpumod
from compiler.plan import adoption, judge, live, projects, revision, words
from compiler.plan import sides as sidesmod
from compiler.plan.accepts import Accept
from compiler.plan.aspects import job_aspects, other_objects
from compiler.plan.hazards import ENGINE_ASSUMPTIONS, REFUSED_SYNC, setting
from compiler.plan.matching import Pair, pairs
from compiler.plan.model import BaseError, EnvironmentPlan, Gpus, JobPlan, Plan, Plans, Position
from compiler.plan.sides import Job, Side
from compiler.targets import api
from compiler.targets.base import at_path
from foundation.frameworks.base import API_VERSION as KUBEFLOW_V1
from foundation.runs import current as runs

LiveIndex = live.LiveIndex


@dataclass(frozen=True, order=True)
class Wanted:
    """One list `--live` makes: a job kind's API resource in one namespace."""

    group: str
    version: str
    plural: str
    kind: str
    namespace: str
    selector: Optional[str] = None  # a label selector (the pods and run records of the jobs)


LiveReader = Callable[[list[Wanted]], list[dict[str, Any]]]  # the lists -> the live jobs they found


class LiveNeedsOneEnvironment(Exception):
    """--live reads one cluster, and the plan covers several environments (a usage error)."""

    def __init__(self, environments: list[str]) -> None:
        super().__init__(", ".join(environments))
        self.environments = environments


@dataclass
class Sides:
    head: Side
    base: Side
    ref: str
    # per environment, the project file's changes that reach its jobs: read once, not once per job
    project_changes: dict[str, list[Position]] = field(default_factory=dict)


def compile_sides(repo: revision.Repo, commit: str, sources: list[Path], ref: str, env: Optional[str]) -> Sides:
    """Both sides of one project compiled; `SideInvalid` (the head's) and `UnknownEnvironment` propagate."""
    head = sidesmod.head(sources, env)
    base = sidesmod.base(repo, commit, ref, [revision.relative(src, repo.root) for src in sources], env, head)
    return Sides(head, base, ref)


def environments(both: Sides) -> list[str]:
    """The head's environments, then any the base had that the head dropped."""
    names = list(both.head.result.environments)
    return names + [e for e in both.base.jobs if e not in names]


def wanted(both: Sides) -> list[Wanted]:
    """The lists that find every job either side names (one per kind and namespace): what --live reads;
    and the run of each job: its pods (the GPUs they hold, whether its run has started) and, where
    kubeflow.org/v1 jobs are, train-controller's run records; and the claims of changed jobs with
    their StorageClasses (whether a claim may grow)."""
    out = set()
    for side in (both.head, both.base):
        for jobs in side.jobs.values():
            for job in jobs.values():
                group, _, version = job.bundle.job["apiVersion"].rpartition("/")
                out.add(Wanted(group, version, job.plan_facts.plural(job.kind) or "", job.kind, job.namespace))
                selector = runs.labels_for(job.bundle.job["apiVersion"]).job
                out.add(Wanted("", "v1", "pods", live.PODS, job.namespace, selector))
                if job.bundle.job["apiVersion"] == KUBEFLOW_V1:  # train-controller's records
                    out.add(Wanted("apps", "v1", "controllerrevisions", live.RECORDS, job.namespace, selector))
    for env_name, jobs in both.head.jobs.items():
        for key, job in jobs.items():
            old = both.base.jobs.get(env_name, {}).get(key)
            if old is not None and old is not job and any(o["kind"] == claimsmod.KIND for o in job.objects[:-1]):
                out.add(Wanted("", "v1", "persistentvolumeclaims", claimsmod.KIND, job.namespace))
                out.add(Wanted("storage.k8s.io", "v1", "storageclasses", claimsmod.CLASS_KIND, ""))
    return sorted(out, key=lambda w: (w.group, w.version, w.plural, w.kind, w.namespace, w.selector or ""))


def make(sources: list[Path], *, base: str, env: Optional[str], accepts: list[Accept],
         read_live: Optional[LiveReader], now: datetime) -> Plans:
    """The plan of merging the working tree over `base`, one per project the sources belong to;
    `read_live` reads the cluster (None: offline).

    Raises what compiling raises (`PlanInputError`, `SideInvalid`, `UnknownEnvironment`) and
    `LiveNeedsOneEnvironment`; the reader's own errors propagate."""
    repo, _ = revision.repository(sources)
    commit = revision.resolve(repo, base)
    trailers, notices = acceptsmod.from_trailers(revision.accept_trailers(repo, commit))
    given = accepts + trailers
    compiled = [(folder, compile_sides(repo, commit, group, base, env))
                for folder, group in projects.group(sources, repo.root)]
    plans = []
    for folder, both in compiled:
        states = None
        if read_live is not None:
            names = environments(both)
            if len(names) > 1:
                raise LiveNeedsOneEnvironment(names)
            states = live.index(read_live(wanted(both)))
        plan = assemble(both, states=states, accepts=given, now=now)
        plan.project = folder
        plans.append(plan)
    found = [(env.name, job.key, h) for plan in plans for env in plan.environments for job in env.jobs
             for h in job.hazards]
    return Plans(plans, notices + acceptsmod.unmatched(given, found))


def _queued(job: Optional[Job]) -> bool:
    return job is not None and job.queue is not None and job.plan_facts.kueue_manages(job.kind)


def _git_suspended(job: Optional[Job]) -> bool:
    return job is not None and gpumod.suspended_in_git(job)


def _ttl(job: Optional[Job]) -> Optional[int]:
    path = job.plan_facts.ttl if job is not None else None
    value = at_path(job.rendered, path) if job is not None and path is not None else None
    return None if value is None else int(value)


def _fields(pair: Pair, both: Sides, env: str) -> list[Position]:
    if pair.old is None or pair.new is None or pair.old is pair.new:
        return []
    found = fieldsmod.spec_fields(pair.old, pair.new)
    if pair.change in ("update", "rename"):
        if env not in both.project_changes:
            both.project_changes[env] = fieldsmod.project_fields(both.base.project_doc, both.head.project_doc, env)
        found += both.project_changes[env]
    return sorted(found, key=lambda p: p.path)


def _job(pair: Pair, both: Sides, env: str, env_setting: tuple[str, str], states: Optional[LiveIndex],
         now: datetime) -> tuple[JobPlan, gpumod.Row]:
    running = adoption.live_job(pair, states)
    pair, adopting = adoption.adopted(pair, running) if running is not None else (pair, [])
    old, new = pair.old, pair.new
    shown = new or old
    assert shown is not None
    watched = old if pair.change in ("rename", "delete") else new
    assert watched is not None
    found = live.state_of(states.get((watched.kind, watched.namespace, watched.name)), states) \
        if states is not None else None
    state = found.state if found else "unknown"
    judged = "Suspended" if state == "unknown" and _git_suspended(old) else state
    ctx = judge.Context(env_setting, judged, _queued(new or old), _ttl(new), found.started if found else None,
                        claims=None if states is None else {})
    if pair.change == "update":
        assert old is not None and new is not None
        aspects = job_aspects(old.rendered, new.rendered, new.plan_facts)
        other_objects(old.objects, new.objects, aspects)
        if states is not None and aspects.grown:
            ctx = replace(ctx, claims={g.name: claimsmod.verdict(g, states) for g in aspects.grown})
        verdict = judge.update(aspects, ctx)
        lead = words.update_lead(aspects, old=old, new=new) + (found.note(now) if found is not None else "")
    elif pair.change == "create":
        assert new is not None
        verdict = judge.create(ctx, suspended=bool(at_path(new.rendered, new.plan_facts.suspend)))
        lead = words.create_lead(shown, queued=ctx.queued, suspended=_git_suspended(new))
        if both.base.broken and ("*" in both.base.broken or new.origin in both.base.broken):
            lead += f"; {both.ref}'s spec had errors, so the job is compared with nothing"
    elif pair.change == "delete":
        assert old is not None
        verdict, lead = judge.removal(judged, old=old.name), words.delete_lead(old, found, now)
    elif pair.change == "rename":
        assert old is not None and new is not None
        verdict = judge.rename(ctx, old=old.name, new=new.name)
        lead = words.rename_lead(old, new, found, now)
    else:
        verdict, lead = judge.Verdict(), ""
    positions = _fields(pair, both, env)
    plan = JobPlan(
        namespace=shown.namespace, name=shown.name, kind=shown.kind, change=pair.change,
        renamed_from=f"{old.namespace}/{old.name}" if pair.change == "rename" and old else None,
        source=shown.origin, line=shown.doc.start[0], fields=positions,
        gpus=Gpus(old.gpus if old else new.gpus if running is not None and new else 0, new.gpus if new else 0),
        state=state,
        hazards=verdict.ordered(), queue=(new or old).queue if (new or old) else None,
        anchor=_anchor(new, positions) if pair.change != "unchanged" else None,
        renamed_kind=old.kind if pair.change == "rename" and old and new and old.kind != new.kind else None,
        live=found.to_json() if found is not None else None,
    )
    verdict.clauses += adopting
    if found is not None and found.source and found.source != watched.origin:
        verdict.clauses.append(f"the cluster's {watched.name} was compiled from {found.source}, not from"
                               f" {watched.origin}: another spec owns that job")
    plan.summary = words.summary(pair.change, lead, verdict.clauses, unchanged_fields=bool(positions))
    plan.throws_away = _throws_away(plan, found, (old or watched).gpus, now)
    row = gpumod.Row(plan.key, plan.namespace, plan.queue, pair.change, old, new, tuple(plan.hazards))
    return plan, row


STOPS = (("kills-run", "kills"), ("restarts-run", "restarts"), ("suspends-run", "suspends"))


def _throws_away(plan: JobPlan, found: Optional[live.Live], gpus: int, now: datetime) -> Optional[str]:
    """`kills nlp/bert at 62%, 3 h 10 min left, 96 GPU-hours of progress` (the plan's headline)."""
    verb = next((v for hazard, v in STOPS if hazard in plan.hazards), None)
    price = found.price(gpus, now) if found is not None and verb else None
    return f"{verb} {plan.renamed_from or plan.key} {price}" if price else None


def _anchor(new: Optional[Job], positions: list[Position]) -> Optional[Position]:
    """Where the job's annotation stands: its first changed field in its spec, else the project
    file's (one annotation for every job a project change reaches), else its name."""
    if new is None:
        return None
    spec = [p for p in positions if p.file == new.origin]
    if spec or positions:
        return (spec or positions)[0]
    line, col = new.doc.position(("metadata", "name"))
    return Position("metadata.name", new.origin, line, col)


def assemble(both: Sides, *, states: Optional[LiveIndex], accepts: list[Accept], now: datetime) -> Plan:
    """The plan; `states` is the live index under --live (None offline)."""
    envs = []
    for env in environments(both):
        project = both.head.result.project if env in both.head.result.environments else both.base.result.project
        env_setting = setting(project.target_for(env), project.controller_for(env))
        rows, jobs = [], []
        for pair in pairs(both.base.jobs.get(env, {}), both.head.jobs.get(env, {})):
            plan, row = _job(pair, both, env, env_setting, states, now)
            plan.accepted = [h for h in plan.hazards if any(a.covers(env, plan.key, h) for a in accepts)]
            jobs.append(plan)
            rows.append(row)
        total, hours = gpumod.sums(rows)
        notes = [REFUSED_SYNC] if any("sync-refused" in j.hazards for j in jobs) else []
        held = [j.live["gpus"] for j in jobs if j.live and j.live.get("gpus") is not None]
        if held:  # what runs now, beside the compiled figures (every pod of each job running)
            notes.append(f"in use now: {sum(held)} GPUs held by pods placed on nodes")
        if env not in both.head.result.environments:
            notes.append(f"environment {env} is gone from trainforge.yaml: its jobs go when train-compile argocd or flux"
                         " output drops its Application or Kustomization")
        envs.append(EnvironmentPlan(
            name=env, target=env_setting[0], controller=None if api(env_setting[0]).plan.pod_maker else env_setting[1],
            jobs=jobs, gpus=total, hours=hours, notes=notes,
            namespaces=gpumod.groups(rows, lambda r: r.namespace), queues=gpumod.groups(rows, lambda r: r.queue)))
    errors = [BaseError(d.file.removeprefix(f"{both.ref}:"), d.line, d.col, d.text()) for d in both.base.errors]
    return Plan(both.ref, envs, live=states is not None, assumptions=list(ENGINE_ASSUMPTIONS), base_errors=errors)
