"""`status --wait`: poll the jobs until each reaches the condition, saying how far they are.

The jobs' states are polled once a second (one list per kind, `gather.states`). While some
are short of the condition a progress line goes to stderr whenever what is short changes,
and every `EVERY` seconds even when nothing does; the first line and those say why each
short job's pods wait too (the scheduler's or the kubelet's reason, read from its pods): a
wait in a script's log says what it waits for. A job that fails first ends the wait (unless it waits for `Failed`); so
does the timeout, whose line names each job still short with the reason its pods wait and
what to change (`compiler.cli.live.advice`), from the report read at the end.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from schemas import durations

if TYPE_CHECKING:
    from compiler.cli.cluster import Reader
    from compiler.cli.live.gather import StatusReport
    from compiler.cli.live.specs import Scope, SpecJob

EVERY = 15.0  # seconds between progress lines when nothing changes
SHOWN = 4  # jobs named on a line before "and N more"
# --wait CONDITION: the states that count as having reached it (Running is reached by a job
# that ran and finished while nobody looked; a failure ends every wait but a wait for it)
REACHED = {
    "Created": ("Created", "Running", "Restarting", "Suspended", "Succeeded"),
    "Running": ("Running", "Restarting", "Succeeded"),
    "Succeeded": ("Succeeded",),
    "Failed": ("Failed",),
}


@dataclass
class Waited:
    outcome: str  # reached | failed | timeout
    seconds: float
    jobs: list["SpecJob"] = field(default_factory=list)  # failed: the failed ones; timeout: those short

    def line(self, condition: str, report: "StatusReport") -> str:
        """What ended the wait, for stderr (reached: how long it took)."""
        if self.outcome == "reached":
            return f"every job reached {condition} ({durations.age(self.seconds)})"
        if self.outcome == "failed":
            return f"{_keys(self.jobs)} failed before reaching {condition}"
        by_key = {(j.spec.kind, j.spec.namespace, j.spec.name): j for j in report.jobs}
        said = []
        for spec in self.jobs[:SHOWN]:
            job = by_key.get(spec.key)
            state = job.state.state if job is not None and job.state is not None else "absent"
            said.append(f"{spec.namespace}/{spec.name} is {state}" + (_why(job) if job is not None else ""))
        more = f"; and {len(self.jobs) - SHOWN} more" if len(self.jobs) > SHOWN else ""
        return f"timed out after {durations.go(self.seconds)} waiting for {condition}: {'; '.join(said)}{more}"


def wait(reader: "Reader", specs: list["SpecJob"], *, scope: "Scope", condition: str, seconds: float,
         note: Callable[[str], None], poll: float = 1.0) -> Waited:
    """Poll until every job reached `condition`, one failed, or `seconds` passed (module docstring)."""
    from compiler.cli.live.gather import states

    started = time.monotonic()
    said, said_at = "", started
    while True:
        now = states(reader, specs, scope=scope)
        elapsed = time.monotonic() - started
        failed = [s for s in specs if condition != "Failed" and s.key in now and now[s.key].state == "Failed"]
        if failed:
            return Waited("failed", elapsed, failed)
        short = [s for s in specs if s.key not in now or now[s.key].state not in REACHED[condition]]
        if not short:
            return Waited("reached", elapsed)
        if elapsed >= seconds:
            return Waited("timeout", seconds, short)
        where = ", ".join(f"{s.namespace}/{s.name} {now[s.key].state if s.key in now else 'absent'}"
                          for s in short[:SHOWN]) + (f" and {len(short) - SHOWN} more" if len(short) > SHOWN else "")
        quiet = time.monotonic() - said_at >= EVERY
        if where != said or quiet:
            first = not said  # the first line and the quiet ones say why pods wait (a few reads more)
            pods = _pods_waiting(reader, [s for s in short if s.key in now]) if quiet or first else ""
            note(f"waiting for {condition} ({durations.age(elapsed)}): {len(specs) - len(short)}/{len(specs)} there; "
                 f"{where}{pods}")
            said, said_at = where, time.monotonic()
        time.sleep(poll)


def _pods_waiting(reader: "Reader", specs: list["SpecJob"]) -> str:
    """`; pods: a-master-0 ImagePullBackOff, ...`: the short jobs' pods that wait for a reason."""
    from compiler.cli import cluster
    from compiler.cli.live.pods import labels_for
    from foundation.runs.podstate import why

    found = []
    for spec in specs[:SHOWN]:
        selector = f"{labels_for(spec.api_version).job}={spec.name}"
        for pod in reader.list(cluster.PODS, namespace=spec.namespace, label_selector=selector) or []:
            reason = why(pod).reason
            if reason:
                found.append(f"{pod['metadata']['name']} {reason}")
    return f"; pods: {', '.join(found[:SHOWN])}" + (f" and {len(found) - SHOWN} more" if len(found) > SHOWN else "") \
        if found else ""


def _why(job: object) -> str:
    """`: master-0 ImagePullBackOff; image x cannot be pulled: spec.image, jobs/t5.yaml:7`."""
    pods = [p for p in getattr(job, "pods", []) if p.reason]
    if not pods:
        return ""
    text = f": {pods[0].name} {pods[0].reason}" + (f" and {len(pods) - 1} more" if len(pods) > 1 else "")
    advice = getattr(job, "advice", [])
    return text + (f"; {advice[0].said(job.spec.source)}" if advice else "")  # type: ignore[attr-defined]


def _keys(specs: list["SpecJob"]) -> str:
    return ", ".join(f"{s.namespace}/{s.name}" for s in specs)
