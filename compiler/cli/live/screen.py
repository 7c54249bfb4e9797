"""`status` for a terminal: every job on one screen, each line within the terminal's width.

Two lines lead (the environment and its server; a count of the jobs by what needs a look:
running, stuck, failed, with drift), then per job a head line (name, kind, state and for
how long, the spec's place) and its pods by replica type and phase. Only what needs a look
adds lines: the job's failure, the progress the training reported, each pod that waits or failed (its reason and message; pods
with the same ones on one line, named after their job), what to change (the spec field and
its line, `compiler.cli.live.advice`), the current run's Warning Events, and drift one line
per spec field with its three sides (git, the job object, the run). A healthy job is two
lines.

Long messages are the kubelet's, the scheduler's and the Events'; each is said once: an
Event that repeats a message a pod line already shows, or that client-go combined from the
same message per pod, is shortened to what it adds. Without `--wide` a quoted message is cut
at the terminal's width (`...`) and our own sentences are folded onto indented lines; with
`--wide` nothing is cut and the five last Events are all shown, not the last of each reason.

Each part of a job's block is one function of `SECTIONS` (a job, the page -> lines): a new
kind of line for every job is one more function there.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from compiler.cli.live.clock import age
from compiler.cli.live.gather import EventView, JobReport, StatusReport
from compiler.cli.live.pods import PodView, phases
from foundation.progress.reading import headline, progress_of
from foundation.runs.record import HELD_REASON
from foundation.runs.state import job_state
from schemas import durations

COMBINED = "(combined from similar events): "  # client-go's EventCorrelator's prefix, kept by train-controller
SHOWN_PODS = 3  # pod names on one line before "and N more"
SHOWN_METRICS = 6  # metrics named in text and markdown (JSON has every one)
VALUE = 24  # characters of a drift value before it is cut
LONG = 24  # a message this long is said once per job
WHY = {
    "held": "held",
    "not-synced": "not synced yet, or the sync fails",
    "old-pods": "the next pod created takes it (a mixed run)",
}
TAKE = "to run it now: suspend and resume the job, or give it a new name"


@dataclass
class Page:
    now: datetime
    width: Optional[int]  # None: --wide
    shown: list[str] = field(default_factory=list)  # long messages already on this job's lines

    def cut(self, text: str) -> str:
        """A line of quoted text within the width."""
        if self.width is None or len(text) <= self.width:
            return text
        return text[:self.width - 3].rstrip() + "..."

    def fold(self, text: str, *, indent: str) -> list[str]:
        """Our own sentence, folded at spaces onto lines indented further."""
        if self.width is None:
            return [indent + text]
        return textwrap.wrap(text, self.width, initial_indent=indent, subsequent_indent=indent + "  ",
                             break_long_words=False, break_on_hyphens=False) or [indent]

    def once(self, message: str) -> None:
        if len(message) >= LONG:
            self.shown.append(message)


def head(report: StatusReport) -> list[str]:
    counts = report.summary()
    waiting = sum(1 for j in report.jobs if j.live is not None and not j.stuck and any(p.reason for p in j.pods)
                  and j.state is not None and not j.state.finished)
    line = (f"{counts['jobs']} jobs: {counts['running']} running, {counts['stuck']} stuck, {counts['failed']} failed, "
            f"{counts['drift']} with drift")
    line += f", {waiting} waiting" if waiting else ""
    line += f", {counts['absent']} absent" if counts["absent"] else ""
    line += f", {counts['orphans']} orphan{'s' if counts['orphans'] != 1 else ''}" if counts["orphans"] else ""
    return [f"environment {report.environment} at {report.server}", line]


def text(report: StatusReport, *, width: Optional[int] = 80) -> str:
    """The report for a terminal `width` columns wide (None: `--wide`)."""
    lines = head(report)
    for job in report.jobs:
        page = Page(report.read_at, width)
        lines.append("")
        for section in SECTIONS:
            lines += section(job, page)
            if job.live is None:
                break
    if report.orphans:
        lines += ["", "live jobs whose spec is gone:"]
        for o in report.orphans:
            state = job_state(o.live)
            lines.append(f"  {o.namespace}/{o.name}  {o.kind}  {state.state} for {age(state.since, report.read_at)}"
                         f"  {o.reason}")
    return "\n".join(lines) + "\n"


def state_text(job: JobReport, now: datetime) -> str:
    """`Running for 3m12s`: a running job from its run's start, any other since its condition."""
    if job.state is None:
        return "absent: no live job"
    since = job.state.since
    if job.state.state == "Running" and job.run is not None and job.run.started:
        since = job.run.started
    return f"{job.state.state} for {age(since, now)}"


def _head(job: JobReport, page: Page) -> list[str]:
    spec = job.spec
    return [f"{spec.namespace}/{spec.name}  {spec.kind}  {state_text(job, page.now)}  ({spec.source}:{spec.line})"]


def _failure(job: JobReport, page: Page) -> list[str]:
    if job.state is None or not job.state.message or job.state.state not in ("Failed", "Restarting"):
        return []
    page.once(job.state.message)
    return [page.cut(f"  {job.state.reason}: {job.state.message}")]


def pods_text(job: JobReport) -> str:
    return "; ".join(f"{rt} " + ", ".join(f"{n} {phase}" for phase, n in sorted(c.items()))
                     for rt, c in phases(job.pods, job.replica_types).items()) or "no pods"


def _pods(job: JobReport, page: Page) -> list[str]:
    return [page.cut(f"  pods: {pods_text(job)}")]


def progress_text(job: JobReport, now: datetime) -> Optional[str]:
    """`62%, 3 h 10 min left; loss 0.2347, accuracy 0.9876 (reported 2 min ago)` (foundation.progress)."""
    found = progress_of(job.live)
    if found is None:
        return None
    shown = "; " + ", ".join(f"{n} {v}" for n, v in found.metrics[:SHOWN_METRICS]) if found.metrics else ""
    more = f" and {len(found.metrics) - SHOWN_METRICS} more" if len(found.metrics) > SHOWN_METRICS else ""
    when = f" (reported {durations.age(max(0.0, (now - found.updated).total_seconds()))} ago)" if found.updated else ""
    return headline(found) + shown + more + when


def _progress(job: JobReport, page: Page) -> list[str]:
    said = progress_text(job, page.now)
    return [page.cut(f"  progress: {said}")] if said else []


def reasons(job: JobReport) -> list[tuple[str, str, list[PodView]]]:
    """(reason, message, pods) for pods with something to say, stuck first, in pod order."""
    groups: dict[tuple[str, str], list[PodView]] = {}
    for pod in job.pods:
        if pod.reason:
            groups.setdefault((pod.reason, pod.message), []).append(pod)
    return sorted(((r, m, p) for (r, m), p in groups.items()), key=lambda g: not g[2][0].stuck)


def names(pods: list[PodView], job: str, *, shown: int = SHOWN_PODS) -> str:
    """Pod names, each without its job's name in front (`master-0`), the first `shown` of them."""
    short = [p.name[len(job) + 1:] if p.name.startswith(job + "-") else p.name for p in pods]
    return ", ".join(short[:shown]) + (f" and {len(short) - shown} more" if len(short) > shown else "")


def _waiting(job: JobReport, page: Page) -> list[str]:
    out = []
    for reason, message, pods in reasons(job):
        mark = "!" if pods[0].stuck else "-"
        page.once(message)
        out.append(page.cut(f"  {mark} {names(pods, job.spec.name)}: {pods[0].phase}, {reason}"
                            + (f": {message}" if message else "")))
    return out


def _queue(job: JobReport, page: Page) -> list[str]:
    if job.queue is None:
        return []
    page.once(job.queue.message)
    return [page.cut(f"  - queued in {job.queue.queue}, not admitted: {job.queue.reason}: {job.queue.message}")]


def _advice(job: JobReport, page: Page) -> list[str]:
    return [line for a in job.advice for line in page.fold(f"fix: {a.said(job.spec.source)}", indent="  ")]


def _events(job: JobReport, page: Page) -> list[str]:
    held = job.spec.kind + HELD_REASON  # said by the drift lines above, with more
    events = [e for e in job.events if not (e.reason == held and any(f.why == "held" for f in job.fields))]
    wide = page.width is None
    out = []
    for said in (_every(events, job, page.shown) if wide else _folded(events, job, page.shown)):
        count = f" x{said.count}" if said.count > 1 else ""
        more = f" (+{said.earlier} earlier)" if said.earlier else ""
        out.append(page.cut(f"  warning {age(said.last, page.now)} ago: {said.reason}{count}{more}: {said.text}"))
    return out


@dataclass
class _Said:
    """One Warning Event line: one Event, or (not --wide) those of one reason saying one sentence."""

    reason: str
    text: str  # with "\0" where the pods' names go, when `pods`
    count: int
    last: Optional[str]
    pods: list[str] = field(default_factory=list)
    earlier: int = 0  # Events of the same reason before it, not shown


def _every(events: list[EventView], job: JobReport, shown: list[str]) -> list[_Said]:
    return [_Said(e.reason, event_text(e.message, job, shown, wide=True), e.count, e.last) for e in events]


def _folded(events: list[EventView], job: JobReport, shown: list[str]) -> list[_Said]:
    """Events of one reason saying one sentence about different pods are one line naming the pods;
    of each reason the last line stays, counting those before it."""
    names_list = _names_list(job)
    groups: dict[tuple[str, str], _Said] = {}
    for e in events:  # oldest first
        text = _said(e.message, job, shown, wide=False)
        found = names_list.findall(text)
        template = names_list.sub("\0", text) if len(found) == 1 else text
        pods = found[0].split(", ") if len(found) == 1 else []
        group = groups.pop((e.reason, template), None) or _Said(e.reason, template, 0, e.last)
        group.count += e.count
        group.last = e.last
        group.pods += [p for p in pods if p not in group.pods]
        groups[(e.reason, template)] = group  # popped and put back: ordered by last seen
    latest: dict[str, _Said] = {}
    for group in groups.values():
        group.earlier = latest[group.reason].earlier + 1 if group.reason in latest else 0
        latest.pop(group.reason, None)
        latest[group.reason] = group
    for group in latest.values():
        pods = [PodView(n, "", None, "", False, 0, "") for n in group.pods]
        text = group.text.replace("\0", ", ".join(group.pods)) if pods else group.text
        group.text = _short(text, job) if not pods else group.text.replace("\0", names(pods, job.spec.name))
    return list(latest.values())


def event_text(message: str, job: JobReport, shown: list[str], *, wide: bool = False) -> str:
    """An Event's message said once: client-go's per-pod repeats folded, a message a line above
    already shows left out, and (not `wide`) the job's pods named without the job's name."""
    text = _said(message, job, shown, wide=wide)
    return text if wide else _short(text, job)


def _short(text: str, job: JobReport) -> str:
    """The job's pods named without the job's name in front (`master-0`)."""
    return re.sub(r"\b" + re.escape(job.spec.name) + r"-(?=[a-z0-9-]*[a-z0-9]\b)", "", text)


def _said(message: str, job: JobReport, shown: list[str], *, wide: bool) -> str:
    text = message[len(COMBINED):] if message.startswith(COMBINED) else message
    text = _per_pod(text, job, wide=wide)
    for said in sorted(shown, key=len, reverse=True):
        text = text.replace(f": {said}", "").replace(said, "(above)")
    return text


def _pod_name(job: JobReport) -> str:
    """A regex of the job's pods' names (`{job}-master-0`, a Trainer pod's `{job}-node-0-0-x1y2z`)."""
    return re.escape(job.spec.name) + r"-[a-z0-9-]*[a-z0-9]"


def _names_list(job: JobReport) -> re.Pattern[str]:
    name = _pod_name(job)
    return re.compile(rf"{name}(?:, {name})*")


def _per_pod(text: str, job: JobReport, *, wide: bool) -> str:
    """`Pod a ...: M; Pod b ...: M` -> `Pod a, b ...: M`: one sentence repeated for each pod."""
    pattern = re.compile(_pod_name(job))
    found = pattern.findall(text)
    if len(found) < 2:
        return text
    template = pattern.sub("\0", text)
    size, rest = divmod(len(template) - 2 * (len(found) - 1), len(found))
    part = template[:size]
    if rest or part.count("\0") != 1 or "; ".join([part] * len(found)) != template:
        return text
    pods = [PodView(n, "", None, "", False, 0, "") for n in found]
    if wide:
        return part.replace("\0", names(pods, "", shown=len(pods)))
    return part.replace("\0", ", ".join(found))  # whole names: folded with other Events', shortened after


def _drift(job: JobReport, page: Page) -> list[str]:
    out = []
    for f in job.fields:
        if f.why == "will-not-run":
            out += page.fold(f"drift: {f.message}", indent="  ")
            continue
        where = f", {job.spec.source}:{f.line}" if f.line else ""
        sides = f"git {_value(f.git)}, job {_value(f.job)}"
        if f.run is not None:
            sides += f", {'pods' if f.why == 'old-pods' else 'run'} {_value(f.run)}"
        why = WHY.get(f.why) or f.message
        out += page.fold(f"drift: {f.field}{where}: {sides}: {why}", indent="  ")
    if any(f.why == "held" or (f.run is not None and f.why != "old-pods") for f in job.fields):
        record = f" by its record {job.run.name}" if job.run and job.run.name else ""
        out += page.fold(f"held for the next run{record}; {TAKE}", indent="  ")
    return out


def _value(value: Any) -> str:
    import json

    text = json.dumps(value, separators=(",", ":"), sort_keys=True) if value is not None else "(none)"
    if isinstance(value, str) and re.fullmatch(r"[\w.:/@-]+", value):
        text = value
    return text if len(text) <= VALUE else text[:VALUE - 3] + "..."


Section = Callable[[JobReport, Page], list[str]]
SECTIONS: list[Section] = [_head, _failure, _pods, _progress, _waiting, _queue, _advice, _drift, _events]
