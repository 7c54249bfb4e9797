"""A job's current run as the cluster shows it: its pods, when it began and started, what it runs.

Read by `train-compile status` (a running job's age, the run's Warning Events, a change held
for the next run) and `plan --live` (the run a merge would touch, its GPUs): pure, the
cluster's objects in.

Which pods are a job's: the labels their maker puts on them (`POD_LABELS`, by the job's API
group or, where a version differs, its apiVersion): the kubeflow.org/v1 operator (and
train-controller) label each pod with the job, its replica type (lowercased) and index; the
mpi-operator (kubeflow.org/v2beta1 MPIJob) with the job and its role (launcher, worker), the
launcher being a batch Job's pod with a generated name; Kubeflow Trainer's pods come from a
JobSet, whose labels name the JobSet (the TrainJob's name), the replicated job and the Job's
completion index.

A run begins when the job is created or resumed (`foundation.runs`): the job's
`status.startTime`, which the operator (and train-controller) set at the first pass and reset
at a resume, else the newer of its creation and its `Suspended` condition's turn to False. It
*started* when the first container of its pods started (`foundation.runs.started`, the rule
train-controller holds edits by: `first_start` of the run's pods, the run's beginning its floor). A job
whose pods are gone (cleaned up, or never made) has no start. `status` measures "Running
for" from the start, not from the newest condition (which moves at every restart), and shows
only Warning Events of the current run: those last seen at or after its start (before it
started: its beginning), so an earlier run's, or a typo'd image's fixed since, do not stand
beside a healthy run.

What the run runs: under train-controller, its run record (`foundation.runs.record`), the
ControllerRevision of the job with the highest number (its pods name it); its `data` is the run spec
(`foundation.runs.spec`). Under the upstream operator (or before any pod exists) there is no
record: the operator builds each pod from the job as it is when it makes the pod.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from foundation.frameworks import mpi_operator
from foundation.frameworks import stock_runtimes as trainer
from foundation.frameworks.base import GROUP as V1_GROUP
from foundation.runs.clock import parse_time
from foundation.runs import started as runstart
from foundation.runs.record import ENDED, number, owned_by
from schemas import upstream


@dataclass(frozen=True)
class PodLabels:
    job: str  # its value is the job's name
    replica: str  # the replica type (or replicated job)
    index: tuple[str, ...]  # the pod's index: the first of these the pod has


JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
POD_LABELS = {
    V1_GROUP: PodLabels(upstream.JOB_NAME_LABEL, upstream.TYPE_LABEL, (upstream.INDEX_LABEL,)),
    trainer.GROUP: PodLabels(JOBSET_NAME, "jobset.sigs.k8s.io/replicatedjob-name",
                             ("batch.kubernetes.io/job-completion-index", "jobset.sigs.k8s.io/job-index")),
    # the mpi-operator labels its pods with the job and a job-role (launcher, worker), no
    # replica type; its workers (and a launcher that is a worker) carry the index
    mpi_operator.API_VERSION: PodLabels(upstream.JOB_NAME_LABEL, upstream.ROLE_LABEL, (upstream.INDEX_LABEL,)),
}


def labels_for(api_version: str) -> PodLabels:
    """By apiVersion where one version's maker labels its own way, else by API group."""
    return POD_LABELS.get(api_version) or POD_LABELS[api_version.split("/")[0]]


def gpus_held(pods: list[dict[str, Any]]) -> int:
    """The GPUs (`*/gpu` limits) the pods that are placed on a node and not finished hold now."""
    total = 0
    for pod in pods:
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if not spec.get("nodeName") or meta.get("deletionTimestamp") or \
                (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        for c in spec.get("containers") or []:
            for name, value in ((c.get("resources") or {}).get("limits") or {}).items():
                if str(name).endswith("/gpu") and str(value).isdigit():
                    total += int(value)
    return total


@dataclass(frozen=True)
class RunView:
    began: Optional[str]  # RFC 3339: the job's creation or its last resume
    started: Optional[str] = None  # the first container start of the run (None: not started, or unknown)
    record: Optional[dict[str, Any]] = None  # train-controller's run record (None: none, or unreadable)

    @property
    def since(self) -> Optional[str]:
        """Where the run's own time starts: its start, else its beginning."""
        return self.started or self.began

    @property
    def name(self) -> Optional[str]:
        return str(self.record["metadata"]["name"]) if self.record else None

    @property
    def number(self) -> Optional[int]:
        return number(self.record) if self.record else None

    @property
    def data(self) -> Optional[dict[str, Any]]:
        """The run spec the run's pods are built from (None: no record)."""
        if self.record is None or (self.record["metadata"].get("annotations") or {}).get(ENDED):
            return None  # an ended run (suspended): the next one starts from the job as it is
        data = self.record.get("data")
        return data if isinstance(data, dict) else None


def began(job: dict[str, Any]) -> Optional[str]:
    """When the job's current run began: `status.startTime` (the operator's and train-controller's
    first pass sets it, a resume resets it; `activeDeadlineSeconds` counts from it), else the
    newer of its creation and its last resume (a `Suspended` condition turned False)."""
    meta, status = job.get("metadata") or {}, job.get("status") or {}
    if parse_time(status.get("startTime")) is not None:
        return str(status["startTime"])
    times = [meta.get("creationTimestamp")]
    times += [c.get("lastTransitionTime") for c in status.get("conditions") or []
              if isinstance(c, dict) and c.get("type") == "Suspended" and c.get("status") == "False"]
    return _latest(times)


def current(job: dict[str, Any], pods: list[dict[str, Any]], records: list[dict[str, Any]]) -> RunView:
    """The job's current run from its pods and the run records read in its namespace."""
    begin = began(job)
    uid = (job.get("metadata") or {}).get("uid")
    record = runstart.current_record(r for r in records if owned_by(r, uid))  # the controller's rule
    run_pods = runstart.of_run(pods, record["metadata"]["name"] if record else None)
    return RunView(begin, runstart.first_start(run_pods, since=begin), record)


def _latest(times: list[Any]) -> Optional[str]:
    parsed = [(t, str(raw)) for raw in times if (t := parse_time(raw)) is not None]
    return max(parsed)[1] if parsed else None


def held(data: dict[str, Any], live: dict[str, Any], adapter: Any) -> dict[tuple[Any, ...], tuple[Any, Any]]:
    """The job object's changes since its run began that the run does not run: path in the
    job's terms (`spec....`, or the restart-scope annotation) -> (the run's value, the job's),
    from the run spec `data` against the job's (both defaulted alike: `foundation.runs.spec`)."""
    from foundation.jsondiff import ABSENT, leaves
    from foundation.runs.spec import JOB, run_spec
    from schemas.marks import RESTART_SCOPE, RESTART_SCOPE_JOB

    now = run_spec(live, adapter)
    out: dict[tuple[Any, ...], tuple[Any, Any]] = {}
    if data.get("restartScope") != now["restartScope"]:
        out[("metadata", "annotations", RESTART_SCOPE)] = tuple(  # type: ignore[assignment]
            RESTART_SCOPE_JOB if side.get("restartScope") == JOB else None for side in (data, now))
    for path, old, new in leaves(data.get("spec"), now["spec"], _both, ("spec",)):
        out[path] = (None if old is ABSENT else old, None if new is ABSENT else new)
    return out


def _both(old: Any, new: Any) -> Optional[list[tuple[Any, Any, Any]]]:
    """Down both sides: every key of either (the job's first), named list items by name at the
    job's positions (containers, env), other lists by position when their lengths agree."""
    from foundation.jsondiff import ABSENT

    if isinstance(old, dict) and isinstance(new, dict):
        return [(k, old.get(k, ABSENT), new.get(k, ABSENT)) for k in [*new, *(k for k in old if k not in new)]]
    if isinstance(old, list) and isinstance(new, list):
        named = all(isinstance(i, dict) and "name" in i for i in [*old, *new])
        if named and {i["name"] for i in old} == {i["name"] for i in new}:
            before = {i["name"]: i for i in old}
            return [(at, before[item["name"]], item) for at, item in enumerate(new)]
        if len(old) == len(new):
            return [(i, a, b) for i, (a, b) in enumerate(zip(old, new))]
    return None
