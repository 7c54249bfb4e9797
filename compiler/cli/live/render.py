"""`status` output: text for a person, JSON for a script, markdown for a pull request or chat.

All three say the same things from one `StatusReport`: per spec its live job's kind,
state and for how long, pods per replica type and phase, the last progress the training
reported (percentage, ETA, metrics: `foundation.progress.reading`), each pod that waits or failed
with its reason (stuck ones first, the same reason and message folded into one line), the
job's last Warning Events, drift; then the orphans. `summary` counts what the exit code is
chosen from (`compiler/cli/status.py`).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from compiler.cli.live.clock import age
from compiler.cli.live.gather import JobReport, StatusReport
from compiler.cli.live.pods import PodView, phases
from foundation.progress.reading import headline, progress_of
from foundation.runs.state import job_state
from schemas import durations

SHOWN_PODS = 5  # pod names listed for one reason before "and N more"
SHOWN_METRICS = 6  # metrics named in text and markdown (JSON has every one)


def summary(report: StatusReport) -> dict[str, int]:
    live = [j for j in report.jobs if j.live is not None]
    return {
        "jobs": len(report.jobs),
        "absent": len(report.jobs) - len(live),
        "failed": sum(1 for j in live if j.state is not None and j.state.state == "Failed"),
        "stuck": sum(len(j.stuck) for j in live),
        "drift": sum(len(j.drift) for j in live),
        "orphans": len(report.orphans),
    }


def _pods_line(job: JobReport) -> str:
    return "; ".join(f"{rt} " + ", ".join(f"{n} {phase}" for phase, n in sorted(c.items()))
                     for rt, c in phases(job.pods, job.replica_types).items()) or "no pods"


def _reasons(job: JobReport) -> list[tuple[str, str, list[PodView]]]:
    """(reason, message, pods) for pods with something to say, stuck first, in pod order."""
    groups: dict[tuple[str, str], list[PodView]] = {}
    for pod in job.pods:
        if pod.reason:
            groups.setdefault((pod.reason, pod.message), []).append(pod)
    return sorted(((r, m, p) for (r, m), p in groups.items()), key=lambda g: not g[2][0].stuck)


def _names(pods: list[PodView]) -> str:
    names = ", ".join(p.name for p in pods[:SHOWN_PODS])
    return names + (f" and {len(pods) - SHOWN_PODS} more" if len(pods) > SHOWN_PODS else "")


def _value(value: Any) -> str:
    text = json.dumps(value, separators=(",", ":"), sort_keys=True) if value is not None else "(none)"
    return text if len(text) <= 60 else text[:57] + "..."


def _progress(job: JobReport, now: datetime) -> str | None:
    """`62%, 3 h 10 min left; loss 0.2347, accuracy 0.9876 (reported 2 min ago)` (foundation.progress)."""
    found = progress_of(job.live)
    if found is None:
        return None
    shown = "; " + ", ".join(f"{n} {v}" for n, v in found.metrics[:SHOWN_METRICS]) if found.metrics else ""
    more = f" and {len(found.metrics) - SHOWN_METRICS} more" if len(found.metrics) > SHOWN_METRICS else ""
    when = f" (reported {durations.age(max(0.0, (now - found.updated).total_seconds()))} ago)" if found.updated else ""
    return headline(found) + shown + more + when


def _state(job: JobReport, now: datetime) -> str:
    if job.state is None:
        return "absent: no live job"
    return f"{job.state.state} for {age(job.state.since, now)}"


def text(report: StatusReport) -> str:
    now, lines = report.read_at, []
    counts = summary(report)
    lines.append(f"environment {report.environment} at {report.server}: {counts['jobs']} spec(s), "
                 f"{counts['absent']} without a live job, {counts['orphans']} orphan(s)")
    for job in report.jobs:
        spec = job.spec
        lines.append("")
        lines.append(f"{spec.namespace}/{spec.name}  {spec.kind}  {_state(job, now)}  ({spec.source}:{spec.line})")
        if job.live is None:
            continue
        if job.state is not None and job.state.message and job.state.state in ("Failed", "Restarting"):
            lines.append(f"  {job.state.reason}: {job.state.message}")
        lines.append(f"  pods: {_pods_line(job)}")
        progress = _progress(job, now)
        if progress:
            lines.append(f"  progress: {progress}")
        for reason, message, pods in _reasons(job):
            mark = "!" if pods[0].stuck else "-"
            lines.append(f"  {mark} {_names(pods)}: {pods[0].phase}, {reason}" + (f": {message}" if message else ""))
        if job.events:
            lines.append("  warning events:")
            lines += [f"    {age(e.last, now)} ago  {e.reason}" + (f" x{e.count}" if e.count > 1 else "")
                      + f": {e.message}" for e in job.events]
        if job.drift:
            lines.append("  drift:")
            lines += [f"    {d.path}: git {_value(d.git)}, cluster {_value(d.cluster)}; {d.message}"
                      if d.why != "will-not-run" else f"    {d.message}" for d in job.drift]
    if report.orphans:
        lines += ["", "live jobs whose spec is gone:"]
        for o in report.orphans:
            state = job_state(o.live)
            lines.append(f"  {o.namespace}/{o.name}  {o.kind}  {state.state} for {age(state.since, now)}  {o.reason}")
    return "\n".join(lines) + "\n"


def as_json(report: StatusReport) -> str:
    now = report.read_at
    jobs = []
    for job in report.jobs:
        spec = job.spec
        entry: dict[str, Any] = {"namespace": spec.namespace, "name": spec.name, "kind": spec.kind,
                                 "source": spec.source, "line": spec.line, "state": "absent"}
        if job.live is not None and job.state is not None:
            entry.update({
                "state": job.state.state, "since": job.state.since, "for": age(job.state.since, now),
                "reason": job.state.reason, "message": job.state.message,
                "pods": {rt: dict(sorted(c.items())) for rt, c in phases(job.pods, job.replica_types).items()},
                "waiting": [{"pod": p.name, "replicaType": p.replica, "index": p.index, "phase": p.phase,
                             "reason": p.reason, "message": p.message, "container": p.container, "stuck": p.stuck}
                            for p in job.pods if p.reason],
                "events": [{"reason": e.reason, "message": e.message, "count": e.count, "last": e.last}
                           for e in job.events],
                "drift": [{"path": d.path, "git": d.git, "cluster": d.cluster, "why": d.why, "message": d.message}
                          for d in job.drift],
                "progress": (lambda p: p.to_json() if p else None)(progress_of(job.live)),
            })
        jobs.append(entry)
    orphans = [{"namespace": o.namespace, "name": o.name, "kind": o.kind, "source": o.source, "reason": o.reason,
                "state": job_state(o.live).state} for o in report.orphans]
    doc = {"environment": report.environment, "server": report.server, "readAt": now.isoformat(timespec="seconds"),
           "jobs": jobs, "orphans": orphans, "summary": summary(report)}
    return json.dumps(doc, indent=2) + "\n"


def markdown(report: StatusReport) -> str:
    now = report.read_at
    lines = [f"### `{report.environment}` at {report.server}", "",
             "| job | kind | state | pods | source |", "|---|---|---|---|---|"]
    for job in report.jobs:
        spec = job.spec
        pods = _pods_line(job) if job.live is not None else ""
        lines.append(f"| `{spec.namespace}/{spec.name}` | {spec.kind} | {_state(job, now)} | {pods} "
                     f"| `{spec.source}:{spec.line}` |")
    for job in report.jobs:
        progress = _progress(job, now) if job.live is not None else None
        notes = [f"- progress {progress}"] if progress else []
        notes += [f"- {'**stuck** ' if pods[0].stuck else ''}{_names(pods)}: {reason}" + (f": {message}" if message else "")
                 for reason, message, pods in _reasons(job)]
        notes += [f"- Warning `{e.reason}`" + (f" x{e.count}" if e.count > 1 else "") + f": {e.message}"
                  for e in job.events]
        notes += [f"- drift `{d.path}`: {d.message}" for d in job.drift]
        if notes:
            lines += ["", f"**`{job.spec.namespace}/{job.spec.name}`**", *notes]
    if report.orphans:
        lines += ["", "**Live jobs whose spec is gone**"]
        lines += [f"- `{o.namespace}/{o.name}` ({o.kind}, {job_state(o.live).state}): {o.reason}" for o in report.orphans]
    return "\n".join(lines) + "\n"


FORMATS = {"text": text, "json": as_json, "markdown": markdown}
