"""What Kueue changes on a job it manages, for the engines to leave alone.

Kueue's webhook suspends a job on create; admission flips `runPolicy.suspend` and merges
its flavor's node labels, tolerations, scheduling gates, labels and annotations into
every pod template (restoring them on eviction); MultiKueue sets `runPolicy.managedBy`.
An engine that re-applied git over those fields would suspend a running job or strip its
flavor. Argo CD takes the fields as `ignoreDifferences` (JSON pointers plus jq paths over
every replica type); Flux's `.spec.ignore` takes JSON pointers only, so the pod template
fields are spelled out per replica type the kind knows (an absent path is simply equal
on both sides). One list feeds both, so the engines ignore the same things.
"""

from __future__ import annotations

from compiler.frameworks import BY_KIND
from schemas.upstream import QUEUE_LABEL

RUN_POLICY_POINTERS = ("/spec/runPolicy/suspend", "/spec/runPolicy/managedBy")
POD_TEMPLATE_FIELDS = (
    "metadata.labels", "metadata.annotations",
    "spec.nodeSelector", "spec.tolerations", "spec.schedulingGates",
)


# Kubeflow Trainer v2's TrainJob (the trainer-v2 target) has no replica specs: Kueue flips
# `spec.suspend`, MultiKueue sets `spec.managedBy`, and admission writes the flavor's pod
# settings into a `runtimePatches` entry of Kueue's own (the list is keyed by manager);
# the Trainer's webhook stamps `time` on every entry, ours included. Argo CD compares a
# list whole, so the foreign entries and the stamps are ignored by jq. Flux applies
# server-side, where another manager's list entry is not Flux's to diff, so it needs the
# pointers only.
# Kueue manages only a TrainJob labelled with a queue; on any other, `spec.suspend` is
# git's (`policy.suspend`), and ignoring it everywhere meant neither engine could resume a
# job whose `suspend: true` left git (each keeps an ignored field at the cluster's value:
# Flux applies it so, Argo CD too under RespectIgnoreDifferences). So suspend and
# managedBy are ignored on queued TrainJobs only: Flux by a label selector in the
# ignore rule's target, Argo CD (whose ignoreDifferences select by group, kind, name and
# namespace only) by a jq `select` on the label.
TRAINJOB = {"group": "trainer.kubeflow.org", "version": "v1alpha1", "kind": "TrainJob"}
TRAINJOB_POINTERS = ("/spec/suspend", "/spec/managedBy")
TRAINJOB_QUEUED = {**TRAINJOB, "labelSelector": QUEUE_LABEL}  # the label exists (any queue)
TRAINJOB_JQ = (
    *(f'select(.metadata.labels["{QUEUE_LABEL}"] != null) | .{p.strip("/").replace("/", ".")}'
      for p in TRAINJOB_POINTERS),
    '.spec.runtimePatches[] | select(.manager != "trainforge.dev/compiler")',  # compiler/targets/trainer_v2 MANAGER
    ".spec.runtimePatches[].time",
)


def jq_paths(kind: str) -> list[str]:
    """The pod template fields of every replica of `kind`, as Argo CD jq paths."""
    specs = BY_KIND[kind].facts.replica_specs
    return [f".spec.{specs}[].template.{field}" for field in POD_TEMPLATE_FIELDS]


def json_pointers(kind: str) -> list[str]:
    """Every Kueue-managed field of `kind` as JSON pointers (RFC 6901), replica by replica."""
    facts = BY_KIND[kind].facts
    pointers = list(RUN_POLICY_POINTERS)
    for replica_type in facts.replica_types:
        for field in POD_TEMPLATE_FIELDS:
            pointers.append(f"/spec/{facts.replica_specs}/{replica_type}/template/{field.replace('.', '/')}")
    return pointers
