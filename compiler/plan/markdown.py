"""The plan as a pull request comment: a summary table first, each environment's details folded.

The comment opens with a hidden marker (`MARKER`) so a CI job finds its own comment and
updates it in place (docs/gitops.md); then one row per environment (what changes, the
hazards, GPUs before and after, the GPU-hours the change can add at most), then per
environment a `<details>` block with the changed jobs' table and each job's sentence and
fields, positioned as links-free `file:line:col` text (a comment cannot know the head's URL).
"""

from __future__ import annotations

from collections import Counter

from compiler.plan.model import Plan
from compiler.plan.render import gpus_text, hazards_text, hours_text

MARKER = "<!-- trainforge-plan -->"


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown(plan: Plan) -> str:
    hazards = sorted(plan.hazards())
    lines = [MARKER, f"### train-compile plan against `{plan.base}`{' (live)' if plan.live else ''}", ""]
    lines.append(f"**Hazards:** {', '.join(f'`{h}`' for h in hazards)}" if hazards else "**No hazards.**")
    lost = [j.throws_away for env in plan.environments for j in env.jobs if j.throws_away]
    if lost:
        lines += ["", "**Throws away:** " + "; ".join(lost)]
    lines += ["", "| environment | changes | hazards | GPUs | GPU-hours added at most |", "|---|---|---|---|---|"]
    for env in plan.environments:
        counts = Counter(j.change for j in env.changed())
        changes = ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "none"
        found = sorted({h for j in env.jobs for h in j.hazards})
        lines.append(f"| {env.name} | {changes} | {', '.join(found) or '-'} | {gpus_text(env.gpus)} |"
                     f" {_cell(hours_text(env.hours))} |")
    for env in plan.environments:
        jobs = env.changed()
        setting = env.target + (f", {env.controller}" if env.controller else "")
        lines += ["", f"<details><summary>{env.name} ({setting}): {len(jobs)} change(s),"
                      f" {len(env.jobs) - len(jobs)} unchanged</summary>", ""]
        if jobs:
            lines += ["| change | job | kind | GPUs | state | hazards |", "|---|---|---|---|---|---|"]
            for job in jobs:
                name = job.key + (f" (from {job.renamed_from})" if job.renamed_from else "")
                lines.append(f"| {job.change} | `{name}` | {job.kind} | {gpus_text(job.gpus)} | {job.state} |"
                             f" {_cell(hazards_text(job))} |")
            lines.append("")
            for job in jobs:
                lines.append(f"- **`{job.key}`** (`{job.source}:{job.line}`): {_cell(job.summary)}")
                lines += [f"  - `{p.path}` at `{p.file}:{p.line}:{p.col}`" for p in job.fields]
        for note in env.notes:
            lines += ["", f"> {note}"]
        lines += ["", "</details>"]
    lines += ["", "<sub>" + "; ".join(f"assumes {a}" for a in plan.assumptions) + "</sub>"]
    return "\n".join(lines) + "\n"
