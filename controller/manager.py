"""The manager: one client, one informer per resource type, one queue, a few workers.

It wires the pieces (semantics-free) and owns their lifecycle so tests can run the
whole controller in-process: `Manager(...).start()` lists and watches every enabled
job kind plus our pods/services and the runs' ControllerRevisions (and MPI helpers,
PyTorchJob HPAs, and with gang scheduling PodGroups and PriorityClasses), maps child
events to the owning job's key
(`Kind/namespace/name`), and reconciles keys on `workers` threads with per-key
backoff on errors and `add_after` for deadlines/TTLs; a pass's creates go out through
one pool shared by the workers (controller.runtime.creates), its Events through one sender.
`stop()` shuts the queue, closes the watches, lets in-flight reconciles finish and
sends their queued Events (queued keys are dropped: the next leader relists and
requeues everything). Every reconcile, queue move and API request is recorded in
`metrics` (controller.runtime.metrics), which the CLI serves. A reconcile that raises anything
else than the API server's refusals or an invalid job is a bug: it is logged once with its
traceback, counted in `controller_runtime_reconcile_panics_total`, recorded as a Warning
Event on the job and retried with backoff; the worker thread survives it (controller.runtime.bugs).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from controller.jobs.addons import JobStep, PodPass
from controller.jobs.desired import Options
from controller.jobs.gang import PRIORITY_CLASSES, PodGroups, Scheduler, scheduler_for
from controller.jobs.hpa import HPAS, Autoscalers
from controller.jobs.kinds import Kind, job_resource
from controller.jobs.mpi import MPI
from controller.jobs.kinds import child_index
from controller.jobs.reconcile import InvalidJob, Reconciler
from controller.jobs.restarts import ends_attempt
from controller.jobs.run_record import CONTROLLERREVISIONS
from controller.jobs.run_records import RunRecords
from controller.progress.service import Progress, ProgressOptions
from controller.progress.store import only_progress_changed
from controller.runtime import bugs
from foundation.cluster import errors
from foundation import jsondata
from foundation.runs.stuck import STUCK_AFTER  # when a waiting pod is stuck: the rule status applies too
from controller.runtime.burst import Held
from controller.runtime.creates import CreatePool
from controller.runtime.events import EventRecorder
from controller.runtime.expectations import Expectations
from controller.runtime.informer import Informer
from foundation.cluster.kube import (
    CONFIGMAPS,
    PODS,
    ROLEBINDINGS,
    ROLES,
    SERVICEACCOUNTS,
    SERVICES,
    Client,
    Resource,
)
from controller.runtime.metrics import Metrics
from controller.runtime.workqueue import ShutDown, WorkQueue
from controller.runtime.writes import expectation_item, job_key
from schemas.upstream import JOB_NAME_LABEL, OPERATOR_LABEL

log = logging.getLogger(__name__)

CREATES_IN_FLIGHT = 16  # pod/service creates sent at once by all workers together (controller.runtime.creates)
HELD_SENDERS = 8  # --pods-first: held Services and status writes sent at once (controller.runtime.burst)
# A pod's status change queues its job this much later, so the pods of a job that start or
# exit together cost one pass and one status write instead of one each; kube-controller-
# manager's Job controller does the same with 1 s (syncJobBatchPeriod). Creates, deletes
# and deletion marks still queue at once (expectations wait on them). Measured at 1,000
# PyTorchJobs x 8 pods on kwok (make bench-scale): see bench/README.md. Not for a pod of a
# whole-job restart scope that failed: the job's other pods wait on that restart, now.
POD_UPDATE_BATCH = 0.5


def connection_pool_size(*, workers: int, kinds: int, creates: int = CREATES_IN_FLIGHT, pods_first: bool = True) -> int:
    """HTTP connections a Manager may hold at once, so none is opened and dropped per request.

    A watch per informer (each job kind; pods, services, ControllerRevisions, 4 MPI helpers,
    HPAs, PodGroups, PriorityClasses), a request per worker, per create in flight, for the Event sender and
    (--pods-first) per sender of held writes, and 2 spare (the Lease, a relist)."""
    return kinds + 10 + workers + creates + 1 + (HELD_SENDERS if pods_first else 0) + 2


class Manager:
    def __init__(self, client: Client, kinds: list[Kind], *, namespace: str | None = None, workers: int = 4,
                 options: Options | None = None, watch_timeout: int = 300,
                 clock: Callable[[], datetime] | None = None, metrics: Metrics | None = None,
                 gang_scheduler_name: str | None = None,
                 pods_first: bool = True, pod_update_batch: float = POD_UPDATE_BATCH,
                 stuck_after: float = STUCK_AFTER, progress: ProgressOptions | None = None) -> None:
        self.client, self.namespace, self.workers = client, namespace, workers
        self.pod_update_batch = pod_update_batch
        self.kinds = {k.name: k for k in kinds}
        self._by_operator = {k.facts.operator_name: k for k in kinds}
        self.metrics = metrics or Metrics()
        if client.observer is None:
            client.observer = self.metrics.api_request
        self.queue: WorkQueue = self.metrics.queue()
        self.expectations = Expectations()
        self.held = Held(senders=HELD_SENDERS) if pods_first else None
        self.recorder = EventRecorder(client, pod_burst=self.held)
        self.job_informers = {
            k.name: Informer(client, job_resource(k), handler=self._job_handler(k), namespace=namespace,
                             watch_timeout=watch_timeout, transform=jsondata.cached)
            for k in kinds
        }
        operators = ",".join(sorted(self._by_operator))
        selector = f"{OPERATOR_LABEL} in ({operators})"
        # the reconcile reads a pod's metadata and status and a service's metadata, never a spec
        self.pod_informer = self._child_informer(PODS, selector, watch_timeout, transform=jsondata.cached_without_spec)
        self.service_informer = self._child_informer(SERVICES, selector, watch_timeout,
                                                     transform=jsondata.cached_without_spec)
        # a kind's add-ons follow its adapter's facts: a launcher gets MPI's own pod pass (its
        # helpers are labelled with the kind's operator name), an autoscaled kind the HPA step
        pod_passes: dict[str, PodPass] = {}
        for kind in (k for k in self.kinds.values() if k.adapter.launcher is not None):
            helpers = f"{OPERATOR_LABEL}={kind.facts.operator_name}"
            pod_passes[kind.name] = MPI(**{res.plural: self._child_informer(res, helpers, watch_timeout)
                                           for res in (CONFIGMAPS, SERVICEACCOUNTS, ROLES, ROLEBINDINGS)})
        autoscaled = [k.name for k in self.kinds.values() if k.facts.autoscaled]
        hpa = Autoscalers(self._watched(HPAS, watch_timeout)) if autoscaled else None
        job_steps: dict[str, JobStep] = {name: hpa for name in autoscaled if hpa is not None}
        gang = self._gang(scheduler_for(gang_scheduler_name), watch_timeout)
        # each run's record and whole-job attempt (controller.jobs.run_records): labelled like the pods
        self.creates = CreatePool(client, size=CREATES_IN_FLIGHT, held=self.held)
        # (a run's record is created beside its first pods, through the same pool)
        records = RunRecords(self._child_informer(CONTROLLERREVISIONS, selector, watch_timeout), pool=self.creates)
        self.reconciler = Reconciler(
            client=client, kinds=self.kinds, jobs=self.job_informers, pods=self.pod_informer,
            services=self.service_informer, expectations=self.expectations, recorder=self.recorder,
            queue=self.queue, options=options or Options(), gang=gang, pod_passes=pod_passes, job_steps=job_steps,
            creates=self.creates,
            held=self.held,
            records=records,
            stuck_after=stuck_after,
            **({"clock": clock} if clock else {}),
        )
        self._threads: list[threading.Thread] = []
        self._started = False
        self.reconciles = 0
        self.errors = 0
        self.bugs = bugs.Bugs()
        self.metrics.watch_informers(self.informers)
        self.metrics.watch_stuck(self.reconciler.stuck.counts)
        self.metrics.watch_progress(self._jobs)
        # the progress endpoint (controller.progress): reports from the jobs' pods into their status
        self.progress = Progress(self, progress) if progress is not None else None

    def _jobs(self) -> list[tuple[str, dict[str, Any]]]:
        return [(kind, job) for kind, informer in self.job_informers.items() for job in informer.items()]

    # ------------------------------------------------------------------ informers
    def informers(self) -> list[Informer]:
        r = self.reconciler
        parts = {id(part): part for part in (*r.pod_passes.values(), *r.job_steps.values(), r.gang, r.records)
                 if part is not None}
        extra = [informer for part in parts.values() for informer in part.informers()]
        return [*self.job_informers.values(), self.pod_informer, self.service_informer, *extra]

    def _child_informer(self, res: Resource, selector: str, watch_timeout: int, *,
                        transform: jsondata.Transform = jsondata.cached) -> Informer:
        informer = Informer(self.client, res, namespace=self.namespace, label_selector=selector, index=child_index,
                            watch_timeout=watch_timeout, handler=lambda et, old, new: None, transform=transform)
        informer.handler = self._child_handler(res)
        informer.on_relist = self._relisted(informer)
        return informer

    def _gang(self, scheduler: Scheduler | None, watch_timeout: int) -> PodGroups | None:
        if scheduler is None:
            return None
        priority_classes = Informer(self.client, PRIORITY_CLASSES, watch_timeout=watch_timeout,
                                    handler=lambda et, old, new: None,  # read at the next pass; no requeue
                                    transform=jsondata.cached)
        return PodGroups(scheduler, podgroups=self._watched(scheduler.resource, watch_timeout, keys=self.podgroup_keys),
                         priority_classes=priority_classes)

    def _watched(self, res: Resource, watch_timeout: int, *,
                 keys: Callable[[dict[str, Any] | None], list[str]] | None = None) -> Informer:
        """An unfiltered informer (PodGroups and HPAs carry no labels of ours) mapped to owners."""
        informer = Informer(self.client, res, namespace=self.namespace, watch_timeout=watch_timeout,
                            handler=lambda et, old, new: None, transform=jsondata.cached)
        informer.handler = self._child_handler(res, keys=keys)
        informer.on_relist = self._relisted(informer)
        return informer

    def _relisted(self, informer: Informer) -> Callable[[float], None]:
        """After a relist, what it cannot show will never be seen: stop waiting, run the job."""
        def relisted(began: float) -> None:
            exists = lambda ns, name: informer.get(ns, name) is not None  # noqa: E731
            for key in self.expectations.drop_unobservable(informer.resource.plural, exists, began):
                self.queue.add(key)
        return relisted

    def _job_handler(self, kind: Kind) -> Callable[[str, Any, Any], None]:
        def handle(etype: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            obj = new or old
            if obj is not None and self.progress is not None and etype == "ADDED":
                self.progress.saw_namespace(obj["metadata"].get("namespace", ""))
            if etype == "MODIFIED" and only_progress_changed(old, new):
                return  # a progress write (controller.progress): the pass would change nothing
            if obj is not None:
                self.queue.add(job_key(kind.name, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))
        return handle

    def _child_handler(self, res: Resource, *,
                       keys: Callable[[dict[str, Any] | None], list[str]] | None = None) -> Callable[[str, Any, Any], None]:
        owners = keys or self.owner_keys
        pods = res is PODS

        def handle(etype: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            if etype == "DELETED":
                for key in self.namesake_keys(old, owners=owners(old)):
                    self.queue.add(key)
            for key in {*owners(old), *owners(new)}:
                item = expectation_item(res, (new or old)["metadata"]["name"])  # type: ignore[index]
                if etype == "ADDED":
                    self.expectations.created(key, item)
                if etype == "DELETED" or (new is not None and new["metadata"].get("deletionTimestamp")):
                    self.expectations.deleted(key, item)
                    self.queue.add(key)
                elif etype == "MODIFIED" and pods and self.pod_update_batch > 0 and not ends_attempt(old, new):
                    self.queue.add_after(key, self.pod_update_batch)  # fold in the job's other pods' changes
                else:
                    self.queue.add(key)
        return handle

    def owner_keys(self, obj: dict[str, Any] | None) -> list[str]:
        """The job key(s) a child belongs to: its controller reference, else its labels."""
        if obj is None:
            return []
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        for ref in meta.get("ownerReferences") or []:
            if ref.get("controller") and str(ref.get("apiVersion", "")).startswith("kubeflow.org/"):
                return [job_key(ref["kind"], ns, ref["name"])] if ref.get("kind") in self.kinds else []
        labels = meta.get("labels") or {}
        kind = self._by_operator.get(labels.get(OPERATOR_LABEL, ""))
        if kind is not None and labels.get(JOB_NAME_LABEL):
            return [job_key(kind.name, ns, labels[JOB_NAME_LABEL])]
        return []

    def namesake_keys(self, obj: dict[str, Any] | None, *, owners: list[str]) -> list[str]:
        """The jobs of other kinds named as a deleted child's job: a framework or target switch
        (a PyTorchJob replaced by an XGBoostJob of the same name) leaves the old job's pods and
        Services holding the new job's names (`x-master-0`) until they are gone, and their
        deletion is the old job's event, not the new one's. Upstream retries the refused create
        with backoff; here the name coming free queues the new job, so nothing polls."""
        labels = (obj or {}).get("metadata", {}).get("labels") or {}
        name, ns = labels.get(JOB_NAME_LABEL), (obj or {}).get("metadata", {}).get("namespace", "")
        if not name:
            return []
        return [key for kind, informer in self.job_informers.items()
                if (key := job_key(kind, ns, name)) not in owners and informer.get(ns, name) is not None]

    def podgroup_keys(self, obj: dict[str, Any] | None) -> list[str]:
        """A PodGroup's owner, else (one shipped by GitOps, no owner) the jobs of its name."""
        if obj is None:
            return []
        meta = obj["metadata"]
        if any(ref.get("controller") for ref in meta.get("ownerReferences") or []):
            return self.owner_keys(obj)
        ns, name = meta.get("namespace", ""), meta["name"]
        return [job_key(kind, ns, name) for kind, informer in self.job_informers.items() if informer.get(ns, name)]

    # ------------------------------------------------------------------ lifecycle
    def start(self, *, sync_timeout: float = 60.0, abort: threading.Event | None = None) -> None:
        """List and watch everything, wait for the caches, then start the workers.

        `abort` (e.g. SIGTERM during the first list) returns early without workers."""
        for informer in self.informers():
            informer.start()
        deadline = time.monotonic() + sync_timeout
        for informer in self.informers():
            while not informer.wait_synced(min(0.1, max(0.0, deadline - time.monotonic()))):
                if abort is not None and abort.is_set():
                    return
                if time.monotonic() >= deadline:
                    raise TimeoutError(f"informer for {informer.resource.plural} did not sync in {sync_timeout}s")
        if self.progress is not None:
            self.progress.start()
        for i in range(self.workers):
            thread = threading.Thread(target=self._work, name=f"reconcile-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._started = True
        log.info("train-controller started: kinds=%s namespace=%s workers=%d",
                 ",".join(self.kinds), self.namespace or "(all)", self.workers)

    def ready(self) -> bool:
        """Workers running on synced caches (what `/readyz` asks of a leader)."""
        return self._started and self.workers_alive() == self.workers and all(
            informer.synced for informer in self.informers())

    def workers_alive(self) -> int:
        return sum(thread.is_alive() for thread in self._threads)

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful: no new keys, watches closed, in-flight reconciles finished, Events sent."""
        self._started = False
        self.queue.shutdown()
        for informer in self.informers():
            informer.stop()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()
        if self.progress is not None:
            self.progress.stop()
        self.creates.shutdown()
        if self.held is not None:
            self.held.close()  # sends the held Service creates (and their Events); held statuses are recomputed by the next leader
        self.recorder.close()

    def __enter__(self) -> Manager:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _work(self) -> None:
        while True:
            try:
                key = self.queue.get()
            except ShutDown:
                return
            if key is None:
                continue
            if self.queue.is_shutdown:  # stopping: finish what is in flight, start nothing new
                self.queue.done(key)
                return
            try:
                self.process(key)
            except Exception:  # process reports the reconcile's errors; this is a bug in that reporting
                log.exception("processing %s failed; retried with backoff", key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    def process(self, key: str) -> None:
        """Reconcile one key and schedule its follow-up (exported for tests)."""
        self.reconciles += 1
        started = time.monotonic()
        try:
            wake = self.reconciler.reconcile(key)
        except (errors.ApiError, InvalidJob) as exc:
            self.errors += 1
            self.metrics.reconciled(key, result="error", seconds=time.monotonic() - started)
            delay = self.queue.add_rate_limited(key)
            # a stale cache (409) is routine and retried at once; a refusal or an invalid job is news
            level = logging.DEBUG if isinstance(exc, errors.Conflict) else logging.WARNING
            log.log(level, "reconcile %s: %s (retry in %.2fs)", key, exc, delay)
            return
        except Exception as exc:  # a bug: visible once, retried with backoff, never the end of the worker
            self.errors += 1
            self.metrics.reconciled(key, result="error", seconds=time.monotonic() - started, panic=True)
            self._report_bug(key, exc, self.queue.add_rate_limited(key))
            return
        seconds = time.monotonic() - started
        self.metrics.reconciled(key, result="success" if wake is None else "requeue_after", seconds=seconds)
        log.debug("reconciled %s in %.3fs (again in %s s)", key, seconds, "-" if wake is None else f"{wake:.2f}")
        self.queue.forget(key)
        self.bugs.succeeded(key)
        if wake is not None:
            self.queue.add_after(key, wake)

    def _report_bug(self, key: str, exc: Exception, delay: float) -> None:
        """Traceback the first time this error is seen, a line per key, an Event per key and error."""
        seen = self.bugs.failed(key, exc)
        if seen.new:
            log.error("reconcile %s failed with an unexpected error, a bug (retry in %.2fs)", key, delay, exc_info=exc)
        elif seen.new_for_key:
            log.error("reconcile %s failed: %s (a bug; the traceback is logged for %s; retry in %.2fs)",
                      key, bugs.describe(exc), seen.first_key, delay)
        else:
            log.debug("reconcile %s failed again: %s (retry in %.2fs)", key, bugs.describe(exc), delay)
        if not seen.new_for_key:
            return
        job = bugs.job_of(key, self.job_informers)
        if job is not None:
            kind = self.kinds[key.split("/", 1)[0]]
            self.recorder.event(job, "Warning", reason=bugs.REASON, message=bugs.event_message(exc),
                                component=kind.facts.operator_name)
