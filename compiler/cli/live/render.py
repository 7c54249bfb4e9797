"""`status` output: text for a person, JSON for a script, markdown for a pull request or chat.

All three say the same things from one `StatusReport`: per spec its live job's kind, state
and for how long (a running job's from its run's start), its run (train-controller's run
record), pods per replica type and phase, the last progress the training reported
(percentage, ETA, metrics: `foundation.progress.reading`), each pod that waits or failed with its reason,
what to change (`compiler.cli.live.advice`), the current run's Warning Events and drift
(per spec field, with git's, the job's and the run's sides); then the orphans. The text is
`compiler.cli.live.screen`'s (one screen, the terminal's width); JSON says everything whole.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from compiler.cli.live import screen
from compiler.cli.live.clock import age
from compiler.cli.live.gather import JobReport, StatusReport
from compiler.cli.live.pods import phases
from foundation.progress.reading import progress_of
from foundation.runs.state import job_state


def _run(job: JobReport) -> Optional[dict[str, Any]]:
    if job.run is None:
        return None
    return {"record": job.run.name, "revision": job.run.number, "began": job.run.began, "started": job.run.started}


def _fields(job: JobReport) -> list[dict[str, Any]]:
    return [{"field": f.field, "line": f.line, "git": f.git, "job": f.job, "run": f.run, "why": f.why,
             "message": f.message, "paths": list(f.paths)} for f in job.fields]


def as_json(report: StatusReport, *, width: Optional[int] = None) -> str:
    now = report.read_at
    jobs = []
    for job in report.jobs:
        spec = job.spec
        entry: dict[str, Any] = {"namespace": spec.namespace, "name": spec.name, "kind": spec.kind,
                                 "source": spec.source, "line": spec.line, "state": "absent"}
        if job.live is not None and job.state is not None:
            since = job.run.started if job.state.state == "Running" and job.run and job.run.started else job.state.since
            entry.update({
                "state": job.state.state, "since": since, "for": age(since, now),
                "reason": job.state.reason, "message": job.state.message, "run": _run(job),
                "pods": {rt: dict(sorted(c.items())) for rt, c in phases(job.pods, job.replica_types).items()},
                "waiting": [{"pod": p.name, "replicaType": p.replica, "index": p.index, "phase": p.phase,
                             "reason": p.reason, "message": p.message, "container": p.container, "stuck": p.stuck}
                            for p in job.pods if p.reason],
                "queue": ({"name": job.queue.queue, "reason": job.queue.reason, "message": job.queue.message}
                          if job.queue else None),
                "fix": [{"message": a.text, "field": a.field, "line": a.line, "command": a.command}
                        for a in job.advice],
                "events": [{"reason": e.reason, "message": e.message, "count": e.count, "last": e.last}
                           for e in job.events],
                "drift": [{"path": d.path, "git": d.git, "cluster": d.cluster, "run": d.run, "why": d.why,
                           "message": d.message} for d in job.drift],
                "fields": _fields(job),
                "progress": (lambda p: p.to_json() if p else None)(progress_of(job.live)),
            })
        jobs.append(entry)
    orphans = [{"namespace": o.namespace, "name": o.name, "kind": o.kind, "source": o.source, "reason": o.reason,
                "state": job_state(o.live).state} for o in report.orphans]
    doc = {"environment": report.environment, "server": report.server, "readAt": now.isoformat(timespec="seconds"),
           "jobs": jobs, "orphans": orphans, "summary": report.summary()}
    return json.dumps(doc, indent=2) + "\n"


def markdown(report: StatusReport, *, width: Optional[int] = None) -> str:
    now = report.read_at
    lines = [f"### `{report.environment}` at {report.server}", "", screen.head(report)[1], "",
             "| job | kind | state | pods | source |", "|---|---|---|---|---|"]
    for job in report.jobs:
        spec = job.spec
        pods = screen.pods_text(job) if job.live is not None else ""
        lines.append(f"| `{spec.namespace}/{spec.name}` | {spec.kind} | {screen.state_text(job, now)} | {pods} "
                     f"| `{spec.source}:{spec.line}` |")
    for job in report.jobs:
        progress = screen.progress_text(job, now) if job.live is not None else None
        notes = [f"- progress {progress}"] if progress else []
        notes += [f"- {'**stuck** ' if pods[0].stuck else ''}{screen.names(pods, '', shown=5)}: {reason}"
                 + (f": {message}" if message else "") for reason, message, pods in screen.reasons(job)]
        notes += [f"- fix: {a.text}" + (f"{a.joiner}`{a.field}` at `{job.spec.source}:{a.line}`" if a.field else "")
                  + (f" (`{a.command}`)" if a.command else "") for a in job.advice]
        notes += [f"- Warning `{e.reason}`" + (f" x{e.count}" if e.count > 1 else "") + f": {e.message}"
                  for e in job.events]
        notes += [f"- drift `{f.field}` (line {f.line}): git `{f.git}`, job `{f.job}`"
                  + (f", run `{f.run}`" if f.run is not None else "") + f": {f.message}" for f in job.fields]
        if notes:
            lines += ["", f"**`{job.spec.namespace}/{job.spec.name}`**", *notes]
    if report.orphans:
        lines += ["", "**Live jobs whose spec is gone**"]
        lines += [f"- `{o.namespace}/{o.name}` ({o.kind}, {job_state(o.live).state}): {o.reason}" for o in report.orphans]
    return "\n".join(lines) + "\n"


FORMATS = {"text": screen.text, "json": as_json, "markdown": markdown}
