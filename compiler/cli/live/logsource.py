"""Which pods and container `train-compile logs` reads, and how their lines are printed.

A job's pods are found by the labels its maker puts on them (`pods.POD_LABELS`), narrowed
by `--replica` (the replica type, any case: `worker`, `Worker`; a Trainer replicated job's
name) and `--index`. The container is the one `--container` names, else the program's:
the kind's container (`pytorch`, `tensorflow`, the MPI launcher's `mpi` ...) or Trainer's
`node`, else the pod's first. Lines get a `[pod] ` prefix when several pods can show up, so
interleaved output stays readable; a container that never started has no log, and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from compiler.cli.live.pods import PodLabels, labels_for
from foundation.cluster.resource import Resource


@dataclass(frozen=True)
class JobRef:
    namespace: str
    name: str
    kind: Resource

    @property
    def api_version(self) -> str:
        return self.kind.api_version

    @property
    def labels(self) -> PodLabels:
        return labels_for(self.api_version)

    @property
    def selector(self) -> str:
        return f"{self.labels.job}={self.name}"


@dataclass(frozen=True)
class Pick:
    replica: Optional[str] = None
    index: Optional[int] = None
    container: Optional[str] = None

    def wants(self, pod: dict[str, Any], labels: PodLabels) -> bool:
        own = (pod.get("metadata") or {}).get("labels") or {}
        if self.replica is not None and str(own.get(labels.replica, "")).lower() != self.replica.lower():
            return False
        index = next((own[k] for k in labels.index if k in own), None)
        return self.index is None or str(index) == str(self.index)

    def container_of(self, pod: dict[str, Any], kind: str) -> str:
        names = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        if self.container:
            return self.container
        from foundation.frameworks import BY_KIND
        from compiler.targets.trainer_v2_rules import CONTAINER

        adapter = BY_KIND.get(kind)
        program = adapter.facts.container if adapter else CONTAINER
        return program if program in names else str(names[0] if names else program)


def expected_pods(job: Optional[dict[str, Any]], pick: Pick, *, replica_specs: Optional[str]) -> Optional[int]:
    """How many pods the selection can hold, from the live job's replicas (None: unknown)."""
    if job is None or replica_specs is None:
        return None
    specs = (job.get("spec") or {}).get(replica_specs) or {}
    counts = [int(s.get("replicas", 1)) for rt, s in specs.items()
              if pick.replica is None or rt.lower() == pick.replica.lower()]
    return min(1, sum(counts)) if pick.index is not None else sum(counts)


def instance(pod: dict[str, Any], container: str) -> Optional[tuple[str, int]]:
    """(pod uid, restart count) of the container's current run, None while it never started:
    a log exists once a container ran, and each restart is a new log."""
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        if c.get("name") == container:
            state = c.get("state") or {}
            if "running" in state or "terminated" in state:
                return (str((pod.get("metadata") or {}).get("uid")), int(c.get("restartCount") or 0))
            if c.get("lastState", {}).get("terminated"):  # waiting to restart: the last run's log is there
                return (str((pod.get("metadata") or {}).get("uid")), int(c.get("restartCount") or 0))
    return None


def ended(pod: Optional[dict[str, Any]], container: str, *, run: tuple[str, int]) -> bool:
    """Whether the run `run` of `container` is over: the pod is gone or another pod took
    its name, or the container's state is no longer that run's `running`."""
    if pod is None or str((pod.get("metadata") or {}).get("uid")) != run[0]:
        return True
    if (pod.get("metadata") or {}).get("deletionTimestamp") is not None:
        return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        if c.get("name") == container:
            return int(c.get("restartCount") or 0) != run[1] or "running" not in (c.get("state") or {})
    return True


class Lines:
    """Bytes of one stream into whole lines, each written with the prefix."""

    def __init__(self, prefix: str, write: Any) -> None:
        self.prefix, self.write, self.rest = prefix, write, b""

    def feed(self, chunk: bytes) -> None:
        *lines, self.rest = (self.rest + chunk).split(b"\n")
        if lines:
            self.write("".join(f"{self.prefix}{line.decode('utf-8', 'replace')}\n" for line in lines))

    def close(self) -> None:
        if self.rest:
            self.write(f"{self.prefix}{self.rest.decode('utf-8', 'replace')}\n")
            self.rest = b""


class Refused(Exception):
    """The selection names what the job cannot have: one line saying what it has."""


def refusal(job: dict[str, Any], pick: Pick, *, replica_types: tuple[str, ...], replica_specs: Optional[str],
            pods: list[dict[str, Any]], labels: PodLabels) -> Optional[str]:
    """Why `pick` can never match a pod of `job` (None: it can): a replica type the kind or the
    job does not have, an index past its replicas, a container its pods do not have. Read from
    the live job's replica specs (a kubeflow.org/v1 kind) or from its pods (a TrainJob's)."""
    meta = job.get("metadata") or {}
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    specs = ((job.get("spec") or {}).get(replica_specs) or {}) if replica_specs else {}
    counts = {rt: int(s.get("replicas", 1)) for rt, s in specs.items()} if specs else _pod_counts(pods, labels)
    if pick.replica is not None and counts:
        chosen = [rt for rt in counts if rt.lower() == pick.replica.lower()]
        if not chosen:
            known = [rt for rt in replica_types if rt.lower() == pick.replica.lower()]
            has = ", ".join(f"{rt} x{n}" for rt, n in counts.items())
            if replica_types and not known:
                kinds = ", ".join(replica_types)
                return (f"{job.get('kind')} has no replica type {pick.replica} (its types: {kinds}); "
                        f"{name} has {has}")
            return f"{name} has no {known[0] if known else pick.replica} pods ({has})"
        counts = {rt: counts[rt] for rt in chosen}
    if pick.index is not None and counts and pick.index >= max(counts.values()):
        has = ", ".join(f"{n} {rt} pod{'s' if n != 1 else ''} (index {'0' if n == 1 else f'0-{n - 1}'})"
                        for rt, n in counts.items())
        return f"{name} has {has}; no index {pick.index}"
    if pick.container is not None:
        names = _containers(specs, counts, pods)
        if names and pick.container not in names:
            return f"{name}'s pods have no container {pick.container} (containers: {', '.join(sorted(names))})"
    return None


def _pod_counts(pods: list[dict[str, Any]], labels: PodLabels) -> dict[str, int]:
    out: dict[str, int] = {}
    for pod in pods:
        rt = str(((pod.get("metadata") or {}).get("labels") or {}).get(labels.replica, ""))
        if rt:
            out[rt] = out.get(rt, 0) + 1
    return out


def _containers(specs: dict[str, Any], counts: dict[str, int], pods: list[dict[str, Any]]) -> set[str]:
    """The containers (init containers too) the chosen replica types' pods have or will have."""
    names: set[str] = set()
    for rt in counts:
        template = ((specs.get(rt) or {}).get("template") or {}).get("spec") or {}
        names |= {c.get("name") for c in [*(template.get("initContainers") or []), *(template.get("containers") or [])]}
    for pod in pods:
        spec = pod.get("spec") or {}
        names |= {c.get("name") for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]}
    return {n for n in names if n}
