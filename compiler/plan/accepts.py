"""Accepted hazards: `--accept` and `Trainforge-Accept:` commit trailers, read and matched.

A reviewer accepts an intended hazard (a deliberate rename, a planned restart) so that
`--fail-on` lets it pass; it stays in the plan, marked. Both ways share one syntax,
`[ENV:]NAMESPACE/NAME=HAZARD[,HAZARD]` (a trailer may put a space for the `=`), where ENV,
NAMESPACE and NAME are shell-style patterns (`prod:nlp/*`, `*/bert-*`), so one line accepts
one label change across twelve jobs. What goes wrong with an accept is a warning for the
reviewer, never an error that blocks the branch: an accept that matches no hazard of the
plan (a job renamed since, a typo in its name), and a trailer that cannot be read (a
mistyped hazard word). A commit's trailer stays in the branch's history, so the warning
names the commit and the fix that needs no rewriting: a new commit with the trailer
written right. A mistyped `--accept` is the command line's own: a usage error (exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from compiler.diagnostics import closest
from compiler.plan.model import HAZARDS
from compiler.plan.revision import ACCEPT_TRAILER, Trailer

SYNTAX = "[ENV:]NAMESPACE/NAME=HAZARD[,HAZARD] (ENV, NAMESPACE and NAME may hold * and ? wildcards)"
_NAME = r"[a-z0-9.*?\[\]!-]+"
_ACCEPT = re.compile(rf"^(?:(?P<env>{_NAME}):)?(?P<job>{_NAME}/{_NAME})[=\s]+(?P<hazards>[a-z,\s-]+)$")


class BadAccept(ValueError):
    """An accept that is not `[ENV:]NAMESPACE/NAME=HAZARD[,HAZARD]` with hazard words; the
    message says what is wrong and how to write it."""


@dataclass(frozen=True)
class Accept:
    env: str  # a pattern ("*" when the accept names no environment)
    job: str  # a NAMESPACE/NAME pattern
    hazards: tuple[str, ...]
    origin: str  # where the reviewer wrote it, for a warning: "--accept 'nlp/*=kills-run'"

    def covers(self, env: str, job: str, hazard: str) -> bool:
        return hazard in self.hazards and fnmatchcase(env, self.env) and fnmatchcase(job, self.job)


def parse(value: str, origin: str) -> Accept:
    """One accept; `BadAccept` names what is wrong (a did-you-mean for a mistyped hazard word)."""
    text = value.strip()
    match = _ACCEPT.match(text)
    if match is None:
        raise BadAccept(f"cannot read accept '{text}'; write {SYNTAX}, e.g. nlp/bert-finetune=kills-run,restarts-run"
                        " or prod:nlp/*=mixed-run")
    words = [w for w in re.split(r"[,\s]+", match["hazards"].strip()) if w]
    for word in words:
        if word not in HAZARDS:
            meant = closest(word, HAZARDS)
            hint = f"did you mean '{meant}'? " if meant else ""
            raise BadAccept(f"accept '{text}' names '{word}', which is no hazard; {hint}hazards: {', '.join(HAZARDS)}")
    return Accept(match["env"] or "*", match["job"], tuple(dict.fromkeys(words)), origin)


def from_options(values: list[str]) -> list[Accept]:
    """The `--accept` values; the first unreadable one raises `BadAccept` (a usage error)."""
    return [parse(value, f"--accept '{value}'") for value in values]


def from_trailers(trailers: list[Trailer]) -> tuple[list[Accept], list[str]]:
    """The trailers that read as accepts, and one warning per trailer that does not (with its
    commit and the fix)."""
    accepts, warnings = [], []
    for trailer in trailers:
        where = f"the {ACCEPT_TRAILER} trailer of commit {trailer.commit[:12]} ('{trailer.subject}')"
        try:
            accepts.append(parse(trailer.value, where))
        except BadAccept as exc:
            warnings.append(f"{where} is ignored: {exc}; to accept, add a commit with the trailer written right"
                            f" (git commit --allow-empty --trailer '{ACCEPT_TRAILER}: NAMESPACE/NAME HAZARD'):"
                            " the history need not be rewritten")
    return accepts, warnings


def unmatched(accepts: list[Accept], hazards: list[tuple[str, str, str]]) -> list[str]:
    """A warning for each accept that covers none of the plan's (environment, job, hazard)."""
    return [f"{a.origin} matches no hazard of this plan: no job matching {a.job} in"
            f" {'any environment' if a.env == '*' else 'an environment matching ' + a.env} has"
            f" {' or '.join(a.hazards)}; check the job's name and environment"
            for a in accepts if not any(a.covers(*found) for found in hazards)]
