"""Prometheus metrics for `/metrics`, named as controller-runtime and client-go name theirs.

Dashboards and alerts written for Go operators keep working: reconciles are
`controller_runtime_reconcile_total{controller,result}`, `..._errors_total`,
`..._panics_total` (an exception the reconcile did not expect, i.e. a bug; also counted in
errors, as controller-runtime counts a recovered panic) and `..._time_seconds` (the
controller label is the job kind, lower case, as upstream's `pytorchjob-controller` minus
the suffix); the queue is `workqueue_*{name}`; leadership
is client-go's `leader_election_master_status{name}`. API requests carry what our
`kube.Client` knows and client-go's metric does not: `trainforge_api_requests_total
{verb,resource,code}`; pods stuck past their threshold (controller.jobs.stuck) are
`trainforge_stuck_pods{controller,reason}`. Everything lives in one `CollectorRegistry` per `Metrics`, so
several managers in one test process never collide on the global registry.

`MeteredQueue` adds client-go's queue measurements to `WorkQueue` from the outside:
when a key became due (added, or its `add_after` delay ran out) until a worker took it
is the queue latency; from `get` to `done` is the work duration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from controller.runtime.workqueue import WorkQueue

QUEUE_NAME = "train-controller"
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
QUEUE_BUCKETS = tuple(10.0**e for e in range(-8, 2))  # client-go: 10ns .. 10s, exponential


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None, *, process: bool = False) -> None:
        self.registry = r = registry or CollectorRegistry()
        self._children: dict[tuple[Any, ...], Any] = {}  # (metric, labels) -> its child (`child`)
        if process:  # the standard process_* / python_* series for a real deployment
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)
        self.reconcile_total = Counter("controller_runtime_reconcile_total", "Reconciles per controller and result.",
                                       ["controller", "result"], registry=r)
        self.reconcile_errors = Counter("controller_runtime_reconcile_errors_total", "Reconciles that failed.",
                                        ["controller"], registry=r)
        self.reconcile_panics = Counter("controller_runtime_reconcile_panics_total",
                                        "Reconciles that raised an unexpected exception (a bug); also errors.",
                                        ["controller"], registry=r)
        self.reconcile_time = Histogram("controller_runtime_reconcile_time_seconds", "Time per reconcile.",
                                        ["controller"], buckets=RECONCILE_BUCKETS, registry=r)
        self.queue_depth = Gauge("workqueue_depth", "Keys waiting in the work queue.", ["name"], registry=r)
        self.queue_adds = Counter("workqueue_adds_total", "Adds handled by the work queue.", ["name"], registry=r)
        self.queue_latency = Histogram("workqueue_queue_duration_seconds", "Seconds a key waits before a worker takes it.",
                                       ["name"], buckets=QUEUE_BUCKETS, registry=r)
        self.work_duration = Histogram("workqueue_work_duration_seconds", "Seconds processing one key takes.",
                                       ["name"], buckets=QUEUE_BUCKETS, registry=r)
        self.retries = Counter("workqueue_retries_total", "Rate-limited re-adds (errors).", ["name"], registry=r)
        self.unfinished = Gauge("workqueue_unfinished_work_seconds", "Seconds of work in progress not yet done.",
                                ["name"], registry=r)
        self.longest = Gauge("workqueue_longest_running_processor_seconds", "Seconds the longest running key has run.",
                             ["name"], registry=r)
        self.api_requests = Counter("trainforge_api_requests_total", "API requests by verb, resource and HTTP code.",
                                    ["verb", "resource", "code"], registry=r)
        self.api_latency = Histogram("trainforge_api_request_duration_seconds", "API request latency until headers.",
                                     ["verb"], buckets=RECONCILE_BUCKETS, registry=r)
        self.leader = Gauge("leader_election_master_status", "1 while this process holds the Lease.", ["name"], registry=r)
        self.progress_reports = Counter("trainforge_progress_reports_total",
                                        "Progress reports answered, by HTTP code and why (refusals included).",
                                        ["code", "reason"], registry=r)
        self.progress_writes = Counter("trainforge_progress_writes_total",
                                       "Progress writes to the jobs' status (coalesced), by result.", ["result"], registry=r)

    # ------------------------------------------------------------------ hooks
    def queue(self, name: str = QUEUE_NAME, **kwargs: Any) -> MeteredQueue:
        return MeteredQueue(self, name=name, **kwargs)

    def child(self, metric: Any, *labels: str) -> Any:
        """`metric.labels(*labels)`, kept: prometheus_client looks each up under a lock, and these
        are asked for on every request and reconcile (bench/README.md, controller at scale)."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def reconciled(self, key: str, *, result: str, seconds: float, panic: bool = False) -> None:
        """One reconcile's outcome; `panic`: it raised what it did not expect (result "error")."""
        controller = key.split("/", 1)[0].lower()
        self.child(self.reconcile_total, controller, result).inc()
        self.child(self.reconcile_time, controller).observe(seconds)
        if result == "error":
            self.reconcile_errors.labels(controller).inc()
        if panic:
            self.reconcile_panics.labels(controller).inc()

    def api_request(self, verb: str, resource: str, code: str, seconds: float) -> None:
        """`kube.Client.observer`: one call per request, code "<error>" if none came back."""
        self.child(self.api_requests, verb, resource, code).inc()
        if verb != "watch":  # a watch's time to headers says nothing about the server
            self.child(self.api_latency, verb).observe(seconds)

    def leading(self, name: str, value: bool) -> None:
        self.leader.labels(name).set(1 if value else 0)

    def watch_informers(self, informers: Callable[[], Iterable[Any]]) -> None:
        """Expose each informer's relist count and sync state (read at scrape time)."""
        self.registry.register(_InformerCollector(informers))

    def watch_stuck(self, counts: Callable[[], dict[tuple[str, str], int]]) -> None:
        """Expose the pods stuck now, by job kind and reason (controller.jobs.stuck; read at scrape time)."""
        self.registry.register(_StuckCollector(counts))


    def progress_report(self, code: int, reason: str) -> None:
        self.progress_reports.labels(str(code), reason).inc()

    def progress_write(self, result: str) -> None:
        self.progress_writes.labels(result).inc()

    def watch_progress(self, jobs: Callable[[], Iterable[tuple[str, dict[str, Any]]]]) -> None:
        """Expose each job's last stored progress (`status.trainerStatus`, read from the caches at scrape time)."""
        self.registry.register(_ProgressCollector(jobs))


class _ProgressCollector:
    def __init__(self, jobs: Callable[[], Iterable[tuple[str, dict[str, Any]]]]) -> None:
        self.jobs = jobs

    def collect(self) -> Iterable[Any]:
        labels = ["controller", "namespace", "name"]
        percent = GaugeMetricFamily("trainforge_job_progress_percentage", "The job's last reported progress (0-100).",
                                    labels=labels)
        eta = GaugeMetricFamily("trainforge_job_estimated_remaining_seconds",
                                "The job's last reported estimate of the training time left.", labels=labels)
        for kind, job in self.jobs():
            progress = (job.get("status") or {}).get("trainerStatus") or {}
            meta = job["metadata"]
            key = [kind.lower(), meta.get("namespace", ""), meta["name"]]
            if isinstance(progress.get("progressPercentage"), int):
                percent.add_metric(key, progress["progressPercentage"])
            if isinstance(progress.get("estimatedRemainingSeconds"), int):
                eta.add_metric(key, progress["estimatedRemainingSeconds"])
        yield percent
        yield eta


class _InformerCollector:
    def __init__(self, informers: Callable[[], Iterable[Any]]) -> None:
        self.informers = informers

    def collect(self) -> Iterable[Any]:
        relists = CounterMetricFamily("trainforge_informer_relists", "Full lists (first sync, 410 Gone, long outage).",
                                      labels=["resource"])
        synced = GaugeMetricFamily("trainforge_informer_synced", "1 once the informer's cache has synced.",
                                   labels=["resource"])
        for informer in self.informers():
            resource = informer.resource.audit_name()
            relists.add_metric([resource], informer.relists)
            synced.add_metric([resource], 1 if informer.synced else 0)
        yield relists
        yield synced


class _StuckCollector:
    def __init__(self, counts: Callable[[], dict[tuple[str, str], int]]) -> None:
        self.counts = counts

    def collect(self) -> Iterable[Any]:
        stuck = GaugeMetricFamily("trainforge_stuck_pods", "Pods of running jobs waiting past the stuck threshold for "
                                  "a reason they cannot get past without help.", labels=["controller", "reason"])
        for (controller, reason), n in sorted(self.counts().items()):
            stuck.add_metric([controller, reason], n)
        yield stuck


class MeteredQueue(WorkQueue):
    """A `WorkQueue` that reports client-go's workqueue metrics."""

    def __init__(self, metrics: Metrics, *, name: str = QUEUE_NAME, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._metrics, self._name = metrics, name
        self._times_lock = threading.Lock()
        self._due: dict[str, list[float]] = {}  # key -> times it became (or becomes) due
        self._started: dict[str, float] = {}  # key -> when a worker took it
        metrics.queue_depth.labels(name).set_function(lambda: len(self))
        metrics.unfinished.labels(name).set_function(self._unfinished)
        metrics.longest.labels(name).set_function(self._longest)

    def add(self, key: str) -> None:
        self._mark(key, 0.0)
        super().add(key)

    def add_after(self, key: str, delay: float) -> None:
        if delay > 0:
            self._mark(key, delay)
        super().add_after(key, delay)  # a delay <= 0 goes through add(), which marks it

    def add_rate_limited(self, key: str) -> float:
        self._metrics.retries.labels(self._name).inc()
        return super().add_rate_limited(key)

    def get(self, timeout: float | None = None) -> str | None:
        key = super().get(timeout)
        if key is not None:
            now = self._clock()
            with self._times_lock:
                times = self._due.pop(key, [])
                ready = [t for t in times if t <= now]
                later = [t for t in times if t > now]
                if later:
                    self._due[key] = later
                self._started[key] = now
            if ready:
                self._metrics.child(self._metrics.queue_latency, self._name).observe(now - min(ready))
        return key

    def done(self, key: str) -> None:
        with self._times_lock:
            started = self._started.pop(key, None)
        if started is not None:
            self._metrics.child(self._metrics.work_duration, self._name).observe(self._clock() - started)
        super().done(key)

    def _mark(self, key: str, delay: float) -> None:
        if self.is_shutdown:
            return
        self._metrics.child(self._metrics.queue_adds, self._name).inc()
        with self._times_lock:
            self._due.setdefault(key, []).append(self._clock() + delay)

    def _unfinished(self) -> float:
        now = self._clock()
        with self._times_lock:
            return sum(now - t for t in self._started.values())

    def _longest(self) -> float:
        now = self._clock()
        with self._times_lock:
            return max((now - t for t in self._started.values()), default=0.0)
