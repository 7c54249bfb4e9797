"""The plan for a terminal (text), for tools (json) and for a pull request's lines (github).

Text leads with the headline (`compiler.plan.headline`: the sentence, the totals), then one
line per environment (GPUs before and after, the GPU-hours the change can add at most), a
table of the changed jobs and, under it, each one's sentence and the fields it changed at
their position in the head spec; unchanged jobs are counted, not listed. Several projects
are a section each. JSON is the contract's document (`Plans.to_json`).

GitHub output is one workflow command per annotation, at the head spec's line of the
job's first changed field (`::error` for a hazard `--fail-on` names and nobody accepted,
else `::warning`). Jobs whose change comes from the project file share one annotation at
the project file's line (a label change reaching 1,000 jobs is one annotation, not 1,000
at lines outside the diff); a deleted job has no head line, so its annotation names the
job; the base's errors stand at their file's path. The markdown for a comment is
`compiler.plan.markdown`.
"""

from __future__ import annotations

import json

from compiler.plan import headline
from compiler.plan.model import EnvironmentPlan, GpuHours, Gpus, JobPlan, Plan, Plans
from compiler.plan.projects import describe

COLUMNS = ("CHANGE", "JOB", "KIND", "GPUS", "STATE", "HAZARDS")


def gpus_text(g: Gpus) -> str:
    if g.before == g.after:
        return str(g.after)
    return f"{g.before} -> {g.after} ({g.after - g.before:+d})"


def hours_text(h: GpuHours) -> str:
    if h.added is None:
        return f"no bound ({', '.join(h.unbounded[:3])}{' ...' if len(h.unbounded) > 3 else ''} without one)"
    return f"{h.added:g}"


def job_gpus_text(job: JobPlan) -> str:
    """A job's GPUs; a refused update says it keeps its old ones."""
    return gpus_text(job.gpus) + (f" (refused: stays {job.gpus.before})" if job.refused and
                                  job.gpus.before != job.gpus.after else "")


def hazards_text(job: JobPlan) -> str:
    return ", ".join(h + (" (accepted)" if h in job.accepted else "") for h in job.hazards) or "-"


def row(job: JobPlan) -> tuple[str, ...]:
    return (job.change, job.shown_name, job.kind, job_gpus_text(job), job.state, hazards_text(job))


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [COLUMNS, *rows]) for i in range(len(COLUMNS))]
    return ["    " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [COLUMNS, *rows]]


def heading(env: EnvironmentPlan) -> str:
    setting = env.target + (f", {env.controller}" if env.controller else "")
    return f"{env.name} ({setting}): GPUs {gpus_text(env.gpus)}; GPU-hours the change can add at most: {hours_text(env.hours)}"


def title(plan: Plan) -> str:
    return f"train-compile plan of {describe(plan.project)} against {plan.base}{' (live)' if plan.live else ''}"


def base_errors(plan: Plan) -> list[str]:
    if not plan.base_errors:
        return []
    return [f"the base {plan.base} has errors: the jobs of its files with errors are compared with nothing",
            *(f"  {e.text}" for e in plan.base_errors)]


def _section(plan: Plan) -> list[str]:
    lines = [title(plan), headline.sentence(plan, headline.TEXT), f"Plan: {headline.totals(plan)}",
             f"Hazards: {headline.hazard_totals(plan.environments)}"]
    lines += [f"throws away: {j.throws_away}" for env in plan.environments for j in env.jobs if j.throws_away]
    lines += base_errors(plan)
    for env in plan.environments:
        lines += ["", heading(env)]
        jobs = env.changed()
        if jobs:
            lines += _table([row(j) for j in jobs])
        unchanged = len(env.jobs) - len(jobs)
        if unchanged:
            lines.append(f"    ({headline.count(unchanged, 'job')} unchanged)")
        for job in jobs:
            lines.append(f"  {job.key}: {job.summary}")
            lines += [f"      {p.path} at {p.file}:{p.line}:{p.col}" for p in job.fields]
        for group, label in ((env.namespaces, "namespace"), (env.queues, "queue")):
            moved = [g for g in group if g.gpus.before != g.gpus.after or (g.hours.added or 0) > 0]
            lines += [f"  {label} {g.name}: GPUs {gpus_text(g.gpus)}; GPU-hours added at most {hours_text(g.hours)}"
                      for g in moved]
        lines += [f"  note: {note}" for note in env.notes]
    return lines


def text(plans: Plans) -> str:
    lines: list[str] = []
    for plan in plans.items:
        lines += ([""] if lines else []) + _section(plan)
    lines += [f"warning: {n}" for n in plans.notices]
    lines += ["", *(f"assumes {a}" for a in plans.items[0].assumptions)]
    return "\n".join(lines) + "\n"


def as_json(plans: Plans) -> str:
    return json.dumps(plans.to_json(), indent=2) + "\n"


def _escape(value: str, *, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return value.replace(":", "%3A").replace(",", "%2C") if prop else value


def _annotation(level: str, where: str, title: str, message: str) -> str:
    return f"::{level} {where}title={_escape(title, prop=True)}::{_escape(message)}"


def _where(file: str, line: int = 0, col: int = 0) -> str:
    return f"file={_escape(file, prop=True)}," + (f"line={line},col={col}," if line else "")


def github(plans: Plans, fail_on: set[str]) -> str:
    out = []
    for plan in plans.items:
        out += [_annotation("warning", _where(e.path), f"plan: the base {plan.base} has errors", e.text)
                for e in plan.base_errors]
        for env in plan.environments:
            shared: dict[tuple[str, int, int, tuple[str, ...], str], list[JobPlan]] = {}
            for job in env.jobs:
                if not job.hazards:
                    continue
                failing = [h for h in job.open_hazards() if h in fail_on]
                level = "error" if failing else "warning"
                anchor = job.anchor
                if anchor is not None and anchor.path.startswith("project."):  # one annotation per project line
                    shared.setdefault((anchor.file, anchor.line, anchor.col, tuple(job.hazards), level), []).append(job)
                    continue
                where = _where(anchor.file, anchor.line, anchor.col) if anchor is not None else ""
                out.append(_annotation(level, where, f"plan {env.name}: {', '.join(job.hazards)}",
                                       f"{job.key}: {job.summary}"))
            for (file, line, col, hazards, level), jobs in shared.items():
                names = [j.key for j in jobs]
                shown = ", ".join(names[:headline.NAMED]) + (f" and {len(names) - headline.NAMED} more"
                                                             if len(names) > headline.NAMED else "")
                out.append(_annotation(level, _where(file, line, col), f"plan {env.name}: {', '.join(hazards)}",
                                       f"this project change reaches {headline.count(len(jobs), 'job')} ({shown}):"
                                       f" {jobs[0].key}: {jobs[0].summary}"))
    return "".join(line + "\n" for line in out)
