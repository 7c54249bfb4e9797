"""The plan for a terminal (text), for tools (json) and for a pull request's lines (github).

Text leads with one line per environment (GPUs before and after, the GPU-hours the change
can add at most), then a table of the changed jobs and, under it, each one's sentence and
the fields it changed at their position in the head spec; unchanged jobs are counted, not
listed. JSON is the contract's document. GitHub output is one workflow command per job
with hazards at the head spec's line of its first changed field (`::error` for a hazard
`--fail-on` names and nobody accepted, else `::warning`); a deleted job has no head line,
so its annotation names the job instead. The markdown for a comment is
`compiler.plan.markdown`.
"""

from __future__ import annotations

import json

from compiler.plan.model import EnvironmentPlan, GpuHours, Gpus, JobPlan, Plan

COLUMNS = ("CHANGE", "JOB", "KIND", "GPUS", "STATE", "HAZARDS")


def gpus_text(g: Gpus) -> str:
    if g.before == g.after:
        return str(g.after)
    return f"{g.before} -> {g.after} ({g.after - g.before:+d})"


def hours_text(h: GpuHours) -> str:
    if h.added is None:
        return f"no bound ({', '.join(h.unbounded[:3])}{' ...' if len(h.unbounded) > 3 else ''} without one)"
    return f"{h.added:g}"


def hazards_text(job: JobPlan) -> str:
    return ", ".join(h + (" (accepted)" if h in job.accepted else "") for h in job.hazards) or "-"


def row(job: JobPlan) -> tuple[str, ...]:
    name = job.key + (f" (from {job.renamed_from})" if job.renamed_from else "")
    return (job.change, name, job.kind, gpus_text(job.gpus), job.state, hazards_text(job))


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    return ["    " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [COLUMNS, *rows]]


def heading(env: EnvironmentPlan) -> str:
    setting = env.target + (f", {env.controller}" if env.controller else "")
    return f"{env.name} ({setting}): GPUs {gpus_text(env.gpus)}; GPU-hours the change can add at most: {hours_text(env.hours)}"


def text(plan: Plan) -> str:
    changed = sum(len(env.changed()) for env in plan.environments)
    hazards = sorted(plan.hazards())
    lines = [f"train-compile plan against {plan.base}{' (live)' if plan.live else ''}: {changed} change(s)"
             f" in {len(plan.environments)} environment(s); hazards: {', '.join(hazards) or 'none'}"]
    lines += [f"throws away: {j.throws_away}" for env in plan.environments for j in env.jobs if j.throws_away]
    for env in plan.environments:
        lines += ["", heading(env)]
        jobs = env.changed()
        if jobs:
            lines += _table([row(j) for j in jobs])
        unchanged = len(env.jobs) - len(jobs)
        if unchanged:
            lines.append(f"    ({unchanged} job(s) unchanged)")
        for job in jobs:
            lines.append(f"  {job.key}: {job.summary}")
            lines += [f"      {p.path} at {p.file}:{p.line}:{p.col}" for p in job.fields]
        for group, label in ((env.namespaces, "namespace"), (env.queues, "queue")):
            moved = [g for g in group if g.gpus.before != g.gpus.after or (g.hours.added or 0) > 0]
            lines += [f"  {label} {g.name}: GPUs {gpus_text(g.gpus)}; GPU-hours added at most {hours_text(g.hours)}"
                      for g in moved]
        lines += [f"  note: {note}" for note in env.notes]
    lines += ["", *(f"assumes {a}" for a in plan.assumptions)]
    return "\n".join(lines) + "\n"


def as_json(plan: Plan) -> str:
    return json.dumps(plan.to_json(), indent=2) + "\n"


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def github(plan: Plan, fail_on: set[str]) -> str:
    out = []
    for env in plan.environments:
        for job in env.jobs:
            if not job.hazards:
                continue
            failing = [h for h in job.hazards if h in fail_on and h not in job.accepted]
            level = "error" if failing else "warning"
            title = _escape(f"plan {env.name}: {', '.join(job.hazards)}", prop=True)
            message = _escape(f"{job.key}: {job.summary}")
            if job.anchor is not None:
                where = f"file={_escape(job.anchor.file, prop=True)},line={job.anchor.line},col={job.anchor.col},"
            else:
                where = ""
            out.append(f"::{level} {where}title={title}::{message}")
    return "".join(line + "\n" for line in out)
