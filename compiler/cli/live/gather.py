"""The reads behind `status`: every live job of the kinds trainforge writes, their pods, Warning
Events and run records, through the CLI's one read-only reader (`compiler.cli.cluster`).

The number of requests does not grow with the jobs: one list per kind across the cluster
(per namespace of the specs when the credentials may not list cluster-wide), then per
namespace that holds a spec's live job one list of the pods carrying a job label, one of the
Warning Events and, for kubeflow.org/v1 jobs, one of train-controller's run records (a
ControllerRevision per run; credentials that may not read them leave the run's side of drift
unsaid); the nodes only when a pod waits for a resource no node has free (the largest node's
allocatable is the fix's figure; skipped when refused). Each is grouped by job here.
Everything else is a pure view (`state`, `pods`, the run: `foundation.runs.current`, `drift`
and its spec terms, `advice`) of what was read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from compiler.cli import cluster
from compiler.cli.live import drift as drifts
from compiler.cli.live import pods as pod_views
from compiler.cli.live.clock import now_utc
from foundation.runs import current as runs
from compiler.cli.live.advice import Advice, advise, allocatable
from compiler.cli.live.specs import Orphan, Scope, SpecJob, job_kinds, live_key, match
from compiler.cli.live.terms import FieldDrift, in_spec_terms
from foundation.cluster.resource import CONTROLLERREVISIONS, NODES, WORKLOADS
from foundation.runs.clock import parse_time
from foundation.runs.record import controller_uid, record_of
from foundation.runs.state import JobState, job_state
from foundation.runs.stuck import STUCK_AFTER
from schemas.upstream import JOB_NAME_LABEL, QUEUE_LABEL

EVENTS_SHOWN = 5


@dataclass(frozen=True)
class EventView:
    reason: str
    message: str
    count: int
    last: Optional[str]  # RFC 3339


@dataclass(frozen=True)
class QueueWait:
    """A queued job Kueue has not admitted: its queue, and its Workload's reason and message."""

    queue: str
    reason: str
    message: str


@dataclass
class JobReport:
    spec: SpecJob
    live: Optional[dict[str, Any]] = None  # None: no live job
    state: Optional[JobState] = None
    replica_types: tuple[str, ...] = ()
    pods: list[pod_views.PodView] = field(default_factory=list)
    events: list[EventView] = field(default_factory=list)  # the current run's (runs.RunView.since on)
    drift: list[drifts.Drift] = field(default_factory=list)
    run: Optional[runs.RunView] = None
    fields: list[FieldDrift] = field(default_factory=list)  # `drift` in the spec's terms, one per line
    raw_pods: list[dict[str, Any]] = field(default_factory=list, repr=False)
    advice: list[Advice] = field(default_factory=list)  # what to change when stuck or failed
    queue: Optional[QueueWait] = None  # Kueue has not admitted it (its Workload says why)

    @property
    def stuck(self) -> list[pod_views.PodView]:
        return [p for p in self.pods if p.stuck]


@dataclass
class StatusReport:
    environment: str
    server: str
    jobs: list[JobReport]
    orphans: list[Orphan]
    read_at: datetime

    def summary(self) -> dict[str, int]:
        """The jobs by what needs a look (the exit code is chosen from these, and the summary line)."""
        live = [j for j in self.jobs if j.live is not None]
        states = [j.state.state if j.state else "" for j in live]
        return {
            "jobs": len(self.jobs),
            "running": sum(1 for s in states if s in ("Running", "Restarting")),
            "stuck": sum(1 for j in live if j.stuck),
            "failed": states.count("Failed"),
            "drift": sum(1 for j in live if j.drift),
            "absent": len(self.jobs) - len(live),
            "orphans": len(self.orphans),
        }


def live_jobs(reader: cluster.Reader, namespaces: set[str]) -> list[dict[str, Any]]:
    """Every job of every kind trainforge writes (a kind the cluster does not serve is skipped)."""
    out: list[dict[str, Any]] = []
    for kind in job_kinds():
        try:
            items = reader.list(kind)
        except cluster.ClusterForbidden:  # namespaced credentials: the specs' namespaces only
            items = [obj for ns in sorted(namespaces) for obj in reader.list(kind, namespace=ns) or []]
        for obj in items or []:  # list items of a custom resource carry their kind; be sure
            obj.setdefault("kind", kind.kind)
            obj.setdefault("apiVersion", f"{kind.group}/{kind.version}")
            out.append(obj)
    return out


def gather(reader: cluster.Reader, specs: list[SpecJob], *, scope: Scope, environment: str,
           stuck_after: float = STUCK_AFTER) -> StatusReport:
    """The report; a pod is stuck once it has waited `stuck_after` s (foundation.runs.stuck)."""
    pairs, orphans = match(specs, live_jobs(reader, {s.namespace for s in specs}), scope=scope)
    found = [(spec, obj) for spec, obj in pairs if obj is not None]
    pods, events, records = _children(reader, [obj for _, obj in found])
    now = now_utc()
    jobs = [JobReport(spec) if obj is None else report(spec, obj, pods=pods, events=events, records=records, now=now,
                                                       stuck_after=stuck_after) for spec, obj in pairs]
    largest = _largest(reader) if any("Insufficient" in p.message for j in jobs for p in j.pods) else None
    for job in jobs:
        job.advice = advise(job, largest=largest)
    return StatusReport(environment, reader.server, jobs, orphans, now)


def _largest(reader: cluster.Reader) -> Optional[dict[str, float]]:
    """Resource -> the largest allocatable of any node (None: the credentials may not list nodes)."""
    try:
        nodes = reader.list(NODES) or []
    except cluster.ClusterForbidden:
        return None
    out: dict[str, float] = {}
    for node in nodes:
        for resource, value in ((node.get("status") or {}).get("allocatable") or {}).items():
            out[resource] = max(out.get(resource, 0.0), allocatable(value))
    return out


def states(reader: cluster.Reader, specs: list[SpecJob], *, scope: Scope) -> dict[tuple[str, str, str], JobState]:
    """Only the jobs' states (what `--wait` polls): spec key -> state, absent jobs left out."""
    pairs, _ = match(specs, live_jobs(reader, {s.namespace for s in specs}), scope=scope)
    return {spec.key: job_state(obj) for spec, obj in pairs if obj is not None}


Children = dict[Any, list[dict[str, Any]]]


def _children(reader: cluster.Reader, jobs: list[dict[str, Any]]) -> tuple[Children, Children, Children]:
    """Pods by (namespace, label key, job name), Warning Events by (namespace, kind, name) and, by
    (namespace, owning job's uid), train-controller's run records (kubeflow.org/v1 jobs'
    namespaces; none when the credentials may not read them: drift then says nothing of the
    run) with Kueue's Workloads (where a job is queued; tagged with their kind, run records have
    none). Keyed by owner once here, so a namespace of many jobs is not scanned once per job."""
    pods: Children = {}
    events: Children = {}
    records: Children = {}
    wanted: dict[str, set[str]] = {}
    queued = {live_key(obj)[1] for obj in jobs if QUEUE_LABEL in ((obj.get("metadata") or {}).get("labels") or {})}
    for obj in jobs:
        wanted.setdefault(live_key(obj)[1], set()).add(pod_views.labels_for(obj["apiVersion"]).job)
    for ns, keys in sorted(wanted.items()):
        for key in sorted(keys):
            for pod in reader.list(cluster.PODS, namespace=ns, label_selector=key) or []:
                name = ((pod.get("metadata") or {}).get("labels") or {}).get(key)
                pods.setdefault((ns, key, name), []).append(pod)
        for event in reader.list(cluster.EVENTS, namespace=ns, field_selector="type=Warning") or []:
            about = event.get("involvedObject") or {}
            events.setdefault((ns, about.get("kind"), about.get("name")), []).append(event)
        if JOB_NAME_LABEL in keys:  # a kubeflow.org/v1 job's namespace
            try:
                found = reader.list(CONTROLLERREVISIONS, namespace=ns, label_selector=JOB_NAME_LABEL) or []
            except cluster.ClusterForbidden:
                found = []
            for record in found:  # a run record belongs to the job that controls it
                records.setdefault((ns, controller_uid(record)), []).append(record)
        if ns in queued:
            for workload in _workloads(reader, ns):  # a Workload to any job among its owners (Kueue's)
                for uid in {ref.get("uid") for ref in (workload.get("metadata") or {}).get("ownerReferences") or []}:
                    records.setdefault((ns, uid), []).append(workload)
    return pods, events, records


def _workloads(reader: cluster.Reader, ns: str) -> list[dict[str, Any]]:
    """Kueue's Workloads in `ns` (none when Kueue is not installed or they may not be read)."""
    for res in WORKLOADS:
        try:
            found = reader.list(res, namespace=ns)
        except cluster.ClusterForbidden:
            return []
        if found is not None:
            return [{**w, "kind": res.kind} for w in found]
    return []


def report(spec: SpecJob, live: dict[str, Any], *, pods: Children, events: Children, records: Optional[Children] = None,
           now: datetime, stuck_after: float = STUCK_AFTER) -> JobReport:
    from foundation.frameworks import BY_KIND

    kind, ns, name = live_key(live)
    labels = pod_views.labels_for(live["apiVersion"])
    adapter = BY_KIND.get(kind)
    types = adapter.facts.replica_types if adapter else ()
    own = pods.get((ns, labels.job, name), [])
    state = job_state(live)
    near = (records or {}).get((ns, (live.get("metadata") or {}).get("uid")), [])
    run = runs.current(live, own, [r for r in near if r.get("kind") != "Workload"])
    data = run.data if adapter is not None and not state.finished and state.state != "Suspended" else None
    held = runs.held(data, live, adapter) if data is not None else None
    found = drifts.drift(spec.compiled, live, state=state, run=held, record=run.name)
    if adapter is not None and run.record is None and not any(record_of(p) for p in own):
        found += drifts.old_pods(live, own, replica_specs=adapter.facts.replica_specs, type_label=labels.replica)
    uid = (live.get("metadata") or {}).get("uid")
    mine = [e for e in events.get((ns, kind, name), []) if (e.get("involvedObject") or {}).get("uid") in (None, uid)]
    views = [pod_views.pod_view(p, labels, replica_types=types, now=now, stuck_after=stuck_after) for p in own]
    return JobReport(spec, live, state, types, pod_views.ordered(views, types), _last(mine, since=run.since, after=run.started is not None), found,
                     run, in_spec_terms(found, spec, live=live, record=data), own,
                     queue=_queue(live, [w for w in near if w.get("kind") == "Workload"]))


def _queue(live: dict[str, Any], workloads: list[dict[str, Any]]) -> Optional[QueueWait]:
    """Why Kueue has not admitted the job: its Workload's false QuotaReserved (or Admitted) condition."""
    queue = ((live.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
    uid = (live.get("metadata") or {}).get("uid")
    if not queue:
        return None
    for w in workloads:
        if not any(r.get("uid") == uid for r in (w.get("metadata") or {}).get("ownerReferences") or []):
            continue
        conditions = {c.get("type"): c for c in (w.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}
        if (conditions.get("Admitted") or {}).get("status") == "True":
            return None
        said = next((conditions[t] for t in ("QuotaReserved", "Admitted") if t in conditions
                     and conditions[t].get("status") == "False"), None)
        if said is not None:
            return QueueWait(str(queue), str(said.get("reason") or ""), " ".join(str(said.get("message") or "").split()))
    return None


def _last(events: list[dict[str, Any]], *, since: Optional[str], after: bool = False) -> list[EventView]:
    """The last EVENTS_SHOWN Warning Events last seen at or after `since` (the run's); strictly
    after it when `since` is the run's first container start (`after`): Event times and container
    starts are whole seconds, and an earlier run's last Event (a typo'd image's pod, stuck until
    the fix re-created it) falls in the very second the new run's first container starts."""
    def when(e: dict[str, Any]) -> str:
        series = e.get("series") or {}
        return str(series.get("lastObservedTime") or e.get("lastTimestamp") or e.get("eventTime")
                   or e.get("firstTimestamp") or "")

    floor = parse_time(since)
    views = [EventView(str(e.get("reason") or ""), " ".join(str(e.get("message") or "").split()),
                       int((e.get("series") or {}).get("count") or e.get("count") or 1), when(e) or None)
             for e in sorted(events, key=when)
             if floor is None or _kept(parse_time(when(e)), floor, after)]
    return views[-EVENTS_SHOWN:]


def _kept(seen: Any, floor: Any, after: bool) -> bool:
    """An Event seen at `seen` belongs to the run that began at `floor` (no time: kept)."""
    if seen is None:
        return True
    return bool(seen > floor) if after else bool(seen >= floor)
