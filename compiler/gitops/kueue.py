"""What Kueue changes on a job it manages, for the engines to leave alone, on queued jobs only.

Kueue's webhook suspends a job on create; admission flips `runPolicy.suspend` and merges
its flavor's node labels, tolerations, scheduling gates, labels and annotations into
every pod template (restoring them on eviction); MultiKueue sets `runPolicy.managedBy`.
An engine that re-applied git over those fields would suspend a running job or strip its
flavor. Kueue manages only a job labelled with a queue (`kueue.x-k8s.io/queue-name`,
what `scheduling.queue` writes); on any other job those fields are git's
(`policy.suspend`, `gpuType`, `nodeSelector`, `tolerations`, `podTemplate`), and ignoring
them everywhere meant `policy.suspend: true` added in git never reached a job that
existed, and removing it never resumed one: each engine keeps an ignored field at the
cluster's value (Flux applies it so, Argo CD too under RespectIgnoreDifferences). So the
fields are ignored on queued jobs only: Flux by a label selector in each ignore rule's
target (`.spec.ignore` takes JSON pointers, so the pod template fields are spelled out
per replica type the kind knows; an absent path is simply equal on both sides), Argo CD
(whose ignoreDifferences select by group, kind, name and namespace only) by a jq
`select` on the label in front of every path. One list feeds both, so the engines
ignore the same things.
"""

from __future__ import annotations

from typing import Any

from foundation.frameworks import BY_KIND
from foundation.frameworks import stock_runtimes as trainer
from compiler.gitops.health import GROUP
from schemas.upstream import QUEUE_LABEL

RUN_POLICY_POINTERS = ("/spec/runPolicy/suspend", "/spec/runPolicy/managedBy")
POD_TEMPLATE_FIELDS = (
    "metadata.labels", "metadata.annotations",
    "spec.nodeSelector", "spec.tolerations", "spec.schedulingGates",
)
QUEUED_JQ = f'select(.metadata.labels["{QUEUE_LABEL}"] != null)'  # the label exists (any queue)


def _queued(path: str) -> str:
    """A jq path that selects nothing on a job without a queue label."""
    return f"{QUEUED_JQ} | {path}"


def _jq(pointer: str) -> str:
    return "." + pointer.strip("/").replace("/", ".")


# Kubeflow Trainer v2's TrainJob (the trainer-v2 target) has no replica specs: Kueue flips
# `spec.suspend`, MultiKueue sets `spec.managedBy`, and admission writes the flavor's pod
# settings into a `runtimePatches` entry of Kueue's own (the list is keyed by manager);
# the Trainer's webhook stamps `time` on every entry, ours included. Argo CD compares a
# list whole, so the foreign entries and the stamps are ignored by jq, on every TrainJob
# (no entry but ours exists on an unqueued one). Flux applies server-side, where another
# manager's list entry is not Flux's to diff, so it needs the pointers only.
TRAINJOB = {"group": trainer.GROUP, "version": trainer.VERSION, "kind": trainer.TRAINJOB}
TRAINJOB_POINTERS = ("/spec/suspend", "/spec/managedBy")
TRAINJOB_QUEUED = {**TRAINJOB, "labelSelector": QUEUE_LABEL}
TRAINJOB_JQ = (
    *(_queued(_jq(p)) for p in TRAINJOB_POINTERS),
    '.spec.runtimePatches[] | select(.manager != "trainforge.dev/compiler")',  # compiler/targets/trainer_v2 MANAGER
    ".spec.runtimePatches[].time",
)


def queued_target(kind: str, version: str = "v1") -> dict[str, Any]:
    """A Flux ignore rule's target: the queued jobs of a kubeflow.org `kind` at `version` (v1; the
    mpi-operator's MPIJob is v2beta1, with the same fields Kueue manages)."""
    return {"group": GROUP, "version": version, "kind": kind, "labelSelector": QUEUE_LABEL}


def jq_paths(kind: str) -> list[str]:
    """Every Kueue-managed field of a queued job of `kind`, as Argo CD jq paths."""
    specs = BY_KIND[kind].facts.replica_specs
    return [*(_queued(_jq(p)) for p in RUN_POLICY_POINTERS),
            *(_queued(f".spec.{specs}[].template.{field}") for field in POD_TEMPLATE_FIELDS)]


def json_pointers(kind: str) -> list[str]:
    """Every Kueue-managed field of `kind` as JSON pointers (RFC 6901), replica by replica."""
    facts = BY_KIND[kind].facts
    pointers = list(RUN_POLICY_POINTERS)
    for replica_type in facts.replica_types:
        for field in POD_TEMPLATE_FIELDS:
            pointers.append(f"/spec/{facts.replica_specs}/{replica_type}/template/{field.replace('.', '/')}")
    return pointers
