"""What a reviewer reads first: one sentence with the worst of the plan, and its totals.

The sentence names each hazard with its jobs and environments, worst first (`SEVERITY`:
a run killed, an environment whose sync fails, a run started over ...), so "kills
nlp/bert-finetune in prod" is the first thing a pull request says, never a table cell or a
folded detail. Jobs with the same hazard are said together, and environments with the same
jobs too: a label change across a project reads "mixes pods of two specs in the runs of
nlp/a, nlp/b, nlp/c and 997 more in dev and prod", whatever the size. Where one refused
object makes Flux refuse the whole environment, the sentence says so after the refusal.
With `--live`, what a kill or restart throws away of the progress a run reported is the line
after the sentence (`JobPlan.throws_away`, written by the formats), not a parenthesis in it.

The totals count each job once per environment, Terraform-like, by change
(`+ 1 to create, ~ 2 to update, - 1 to delete, ± 1 to rename`) and by hazard. Text and
markdown differ only in how a job and a verb are written (`Style`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from compiler.plan.model import SEVERITY, EnvironmentPlan, JobPlan, Plan

NAMED = 3  # jobs a clause names before "and N more"
CHANGES = (("create", "+", "to create"), ("update", "~", "to update"), ("delete", "-", "to delete"),
           ("rename", "±", "to rename"))
# each hazard as a verb phrase: the verb, what stands before the jobs (one job, several), and
# what follows the environments
PHRASES = {
    "kills-run": ("kills", "", "", ""),
    "sync-refused": ("cannot update", "", "", "(the API server refuses the change)"),
    "restarts-run": ("restarts", "", "", "from the beginning"),
    "reruns-finished": ("runs", "", "", "again once finished (ttlAfterFinished)"),
    "mixed-run": ("mixes pods of two specs", "in the run of", "in the runs of", ""),
    "suspends-run": ("suspends", "", "", ""),
    "suspend-ignored": ("leaves", "the suspend of", "the suspend of", "to Kueue: the run goes on as Kueue admits it"),
    "ignored-until-next-run": ("holds", "the change of", "the changes of", "until the next run"),
}


@dataclass(frozen=True)
class Style:
    job: Callable[[str], str]
    verb: Callable[[str], str]
    env: Callable[[str], str]


TEXT = Style(job=str, verb=str, env=str)
MARKDOWN = Style(job=lambda s: f"`{s}`", verb=lambda s: f"**{s}**", env=lambda s: f"`{s}`")


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _who(job: JobPlan, hazard: str) -> str:
    """The job a hazard happens to: the old one for a kill of a rename."""
    return job.renamed_from if hazard == "kills-run" and job.renamed_from else job.key


def _jobs(jobs: list[JobPlan], hazard: str, style: Style) -> str:
    named = [style.job(_who(j, hazard)) for j in jobs[:NAMED]]
    more = len(jobs) - NAMED
    return _and(named + [f"{more} more"]) if more > 0 else _and(named)


def _clause(hazard: str, jobs: list[JobPlan], envs: list[str], style: Style, *, accepted: bool) -> str:
    verb, one, many, tail = PHRASES[hazard]
    parts = [style.verb(verb), one if len(jobs) == 1 else many, _jobs(jobs, hazard, style),
             "in " + _and([style.env(e) for e in envs]), tail]
    return " ".join(p for p in parts if p) + (" (accepted)" if accepted else "")


def _refused_environment(env: str, style: Style) -> str:
    return (f"Flux refuses the whole {style.env(env)} environment until the refused change is reverted or its object"
            " deleted: nothing of this commit lands there (Argo CD applies the rest)")


def clauses(plan: Plan, style: Style) -> list[str]:
    """The headline's clauses, worst first; the open hazards before the accepted ones."""
    groups: dict[tuple[bool, str], dict[str, list[JobPlan]]] = {}
    for env in plan.environments:
        for job in env.jobs:
            for hazard in job.hazards:
                key = (hazard in job.accepted, hazard)
                groups.setdefault(key, {}).setdefault(env.name, []).append(job)
    out = []
    for accepted in (False, True):
        for hazard in SEVERITY:
            by_env = groups.get((accepted, hazard), {})
            merged: dict[tuple[str, ...], tuple[list[JobPlan], list[str]]] = {}
            for env_name, jobs in by_env.items():
                jobs = sorted(jobs, key=lambda j: _who(j, hazard))
                merged.setdefault(tuple(_who(j, hazard) for j in jobs), (jobs, []))[1].append(env_name)
            for jobs, envs in merged.values():
                out.append(_clause(hazard, jobs, envs, style, accepted=accepted))
                if hazard == "sync-refused" and not accepted:
                    out += [_refused_environment(e, style) for e in envs]
    return out


def sentence(plan: Plan, style: Style) -> str:
    """The one sentence: what merging does to the runs."""
    found = clauses(plan, style)
    if found:
        return "Merging this " + "; ".join(found) + "."
    changed = sum(len(env.changed()) for env in plan.environments)
    if not changed:
        return "Merging this changes no job."
    return f"Merging this changes {count(changed, 'job')} and puts no run at risk."


def count(n: int, noun: str) -> str:
    """`1 GPU`, `32 GPUs`: a count that agrees with its number."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def change_counts(envs: list[EnvironmentPlan]) -> Counter[str]:
    return Counter(job.change for env in envs for job in env.jobs)


def changes(counts: Counter[str]) -> str:
    """`+ 1 to create, ~ 2 to update, - 1 to delete, ± 1 to rename`"""
    return ", ".join(f"{sign} {counts.get(change, 0)} {words}" for change, sign, words in CHANGES)


def changes_short(counts: Counter[str]) -> str:
    """The changes that occur (a table cell): `~ 12 to update, - 1 to delete`, or `none`."""
    return ", ".join(f"{sign} {counts[change]} {words}" for change, sign, words in CHANGES if counts.get(change)) \
        or "none"


def totals(plan: Plan) -> str:
    """`+ 1 to create, ~ 2 to update, - 1 to delete, ± 1 to rename; 996 unchanged (jobs in 2 environments)`"""
    counts = change_counts(plan.environments)
    envs = len(plan.environments)
    where = f" (each job counted once per environment, {envs} environments)" if envs > 1 else ""
    return f"{changes(counts)}; {counts.get('unchanged', 0)} unchanged{where}"


def hazard_totals(envs: list[EnvironmentPlan]) -> str:
    """`2 kills-run, 1000 mixed-run (1 accepted)`, worst first; `none`."""
    found: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    for env in envs:
        for job in env.jobs:
            found.update(job.hazards)
            accepted.update(job.accepted)
    parts = [f"{found[h]} {h}" + (f" ({accepted[h]} accepted)" if accepted.get(h) else "") for h in SEVERITY
             if found.get(h)]
    return ", ".join(parts) or "none"
