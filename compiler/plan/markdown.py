"""The plan as a pull request comment: the worst first, and always small enough to post.

A comment opens with a hidden marker naming the project's folder (`<!-- trainforge-plan:
jobs -->`), so a CI job finds its own comment and updates it in place, and the comments of
two projects of one repository never overwrite each other (docs/gitops.md). Then the
headline (`compiler.plan.headline`: the sentence a reviewer reads first, the totals by change
and hazard), a row per environment, and what holds for a whole environment (Flux refusing
it for one refused object), never folded.

GitHub refuses a comment past 65,536 characters. The plan takes at most `BUDGET` bytes of
it (bytes: never fewer than characters), leaving room for a line CI adds (a link to the full
plan). When the whole plan fits, each environment's details follow in a `<details>` block:
the changed jobs' table, each one's sentence and fields at their `file:line:col`. When it
does not, the comment is a summary: one line per job with a hazard, as many as fit, then
the rest counted ("and 812 more jobs with hazards"), the jobs without hazards and the
unchanged ones counted, not listed, and a pointer to the full plan (`--output FILE`, in
the chosen format: a CI artifact). Several projects planned at once are a section each,
sharing the budget. Everything is a function of the plan, whose order is its own (jobs by
name within a line's group): the same base and head give the same bytes on any machine.
"""

from __future__ import annotations

from typing import Optional

from compiler.plan import headline
from compiler.plan.model import SEVERITY, EnvironmentPlan, JobPlan, Plan, Plans
from compiler.plan.projects import describe
from compiler.plan.render import gpus_text, hazards_text, hours_text, job_gpus_text

LIMIT = 65_536  # GitHub's limit on a comment (characters)
BUDGET = 60_000  # the plan's share of it, in bytes
LISTED = 20  # base errors and notices shown before "and N more"


def marker(folders: list[str]) -> str:
    """`<!-- trainforge-plan: jobs -->`: the first line of a project's comment (folders joined by
    spaces when one comment holds several projects)."""
    return f"<!-- trainforge-plan: {' '.join(folders)} -->"


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _size(lines: list[str]) -> int:
    return len("\n".join(lines).encode()) + 1


def _capped(items: list[str], what: str) -> list[str]:
    more = len(items) - LISTED
    return items[:LISTED] + ([f"- and {more} more {what}"] if more > 0 else [])


def _top(plan: Plan) -> list[str]:
    """What every comment says, whatever its size."""
    lines = [f"### train-compile plan of `{describe(plan.project)}` against `{plan.base}`"
             f"{' (live)' if plan.live else ''}", "", headline.sentence(plan, headline.MARKDOWN), "",
             f"**Plan:** {headline.totals(plan)}", "", f"**Hazards:** {headline.hazard_totals(plan.environments)}"]
    lost = [j.throws_away for env in plan.environments for j in env.jobs if j.throws_away]
    if lost:  # --live: the progress a kill or restart throws away (from the runs' own reports)
        lines += ["", "**Throws away:** " + _cell("; ".join(lost))]
    if plan.base_errors:
        lines += ["", f"**The base `{plan.base}` has errors**: the jobs of its files with errors are compared with"
                      " nothing.", "",
                  *_capped([f"- `{_cell(e.text)}`" for e in plan.base_errors], "errors")]
    lines += ["", "| environment | changes | hazards | GPUs | GPU-hours added at most |", "|---|---|---|---|---|"]
    for env in plan.environments:
        found = headline.hazard_totals([env])
        lines.append(f"| {env.name} | {headline.changes_short(headline.change_counts([env]))} | {found} |"
                     f" {gpus_text(env.gpus)} | {_cell(hours_text(env.hours))} |")
    for env in plan.environments:
        lines += ["", *(f"> **{env.name}:** {_cell(note)}" for note in env.notes)] if env.notes else []
    return lines


def _details(env: EnvironmentPlan) -> list[str]:
    jobs = env.changed()
    setting = env.target + (f", {env.controller}" if env.controller else "")
    lines = ["", f"<details><summary>{env.name} ({setting}): {headline.count(len(jobs), 'change')},"
                 f" {len(env.jobs) - len(jobs)} unchanged</summary>", ""]
    if jobs:
        lines += ["| change | job | kind | GPUs | state | hazards |", "|---|---|---|---|---|---|"]
        lines += [f"| {job.change} | `{_cell(job.shown_name)}` | {job.kind} | {_cell(job_gpus_text(job))} |"
                  f" {job.state} | {_cell(hazards_text(job))} |" for job in jobs]
        lines.append("")
        for job in jobs:
            lines.append(f"- **`{job.key}`** (`{job.source}:{job.line}`): {_cell(job.summary)}")
            lines += [f"  - `{p.path}` at `{p.file}:{p.line}:{p.col}`" for p in job.fields]
    return lines + ["", "</details>"]


def _line(job: JobPlan) -> str:
    """One job with a hazard, in a summary."""
    at = f"{job.anchor.file}:{job.anchor.line}" if job.anchor else f"{job.source}:{job.line}"
    return (f"- `{_cell(job.shown_name)}` {job.change}, {job.kind}, {_cell(job_gpus_text(job))} GPUs:"
            f" {_cell(hazards_text(job))} (`{at}`)")


def _worst_first(job: JobPlan) -> tuple[bool, int, str]:
    """Open hazards before accepted ones, the worst hazard first, then by name."""
    return (not job.open_hazards(), min(SEVERITY.index(h) for h in job.hazards), job.key)


def _summary(plan: Plan, room: int) -> list[str]:
    """Per environment, a line per job with a hazard while `room` (bytes) lasts; the rest counted."""
    lines: list[str] = []
    envs = plan.environments
    for i, env in enumerate(envs):
        share = (room - _size(lines)) // (len(envs) - i)
        risky = sorted((j for j in env.jobs if j.hazards), key=_worst_first)
        quiet = len(env.changed()) - sum(1 for j in risky if j.change != "unchanged")
        setting = env.target + (f", {env.controller}" if env.controller else "")
        head = ["", f"#### {env.name} ({setting})", ""]
        listed: list[str] = []
        left = share - _size(head) - 200  # the closing count lines
        for job in risky:
            line = _line(job)
            left -= len(line.encode()) + 1
            if left < 0:
                break
            listed.append(line)
        rest = len(risky) - len(listed)
        counts = ([f"- and {headline.count(rest, 'more job')} with hazards (in the full plan)"] if rest else []) + \
            [f"- {headline.count(quiet, 'job')} changed without a hazard, {len(env.jobs) - len(env.changed())}"
             " unchanged"]
        lines += head + listed + counts
    return lines


def _pointer(plan: Plan, full_plan: Optional[str], whole: int = 0) -> str:
    """Where the full plan is, said by a summary (`whole`: the full plan's size, when known)."""
    where = f"`{full_plan}`, the CI job's artifact" if full_plan else \
        f"`train-compile plan {plan.project} --base {plan.base} --output FILE`"
    size = f" (the whole plan is {whole:,} bytes; a comment holds {LIMIT:,} characters)" if whole else ""
    return f"This comment is the summary{size}: the full plan, every job's sentence and the fields it changes, is in" \
        f" {where}."


def _tail(plan: Plan, full_plan: Optional[str], *, whole: int = 0) -> list[str]:
    """The closing lines; `whole`: the size of the whole plan, when the comment is its summary."""
    lines = ["", _pointer(plan, full_plan, whole)] if whole else []
    return lines + ["", "<sub>" + _cell("; ".join(f"assumes {a}" for a in plan.assumptions)) + "</sub>"]


def section(plan: Plan, budget: int, full_plan: Optional[str]) -> list[str]:
    """One project's comment without its marker: all of it when it fits `budget`, else the summary."""
    top = _top(plan)
    full = top + [line for env in plan.environments for line in _details(env)] + _tail(plan, full_plan)
    if _size(full) <= budget:
        return full
    tail = _tail(plan, full_plan, whole=_size([marker([plan.project]), *full]))  # as --output writes it
    return top + _summary(plan, budget - _size(top) - _size(tail)) + tail


def _brief(plan: Plan, full_plan: Optional[str]) -> list[str]:
    """A project in the fewest lines: its heading, sentence and totals (many projects in one comment)."""
    return [*_top(plan)[:7], "", _pointer(plan, full_plan)]


def markdown(plans: Plans, *, full_plan: Optional[str] = None, budget: Optional[int] = BUDGET) -> str:
    """The comment (`budget` None: the full plan, every detail, for `--output`)."""
    head = [marker([p.project for p in plans.items])]
    notices = _capped([f"- {_cell(n)}" for n in plans.notices], "warnings")
    if notices:
        notices = ["", "**Warnings:**", "", *notices]
    if budget is None:
        body = [line for plan in plans.items for line in
                [*_top(plan), *(d for env in plan.environments for d in _details(env)), *_tail(plan, None), ""]]
        return "\n".join(head + body + notices).rstrip("\n") + "\n"
    room = budget - _size(head + notices)
    share = room // len(plans.items)
    body = [line for plan in plans.items for line in [*section(plan, share, full_plan), ""]]
    if _size(body) > room:  # so many projects that even their tops do not fit: each in brief, then counted
        body = []
        for i, plan in enumerate(plans.items):
            brief = [*_brief(plan, full_plan), ""]
            if _size(body + brief) > room - 200:
                body.append(f"And {len(plans.items) - i} more projects: the full plan has them.")
                break
            body += brief
    return "\n".join(head + body + notices).rstrip("\n") + "\n"
