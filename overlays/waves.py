"""Argo CD sync waves: what a job needs exists before the job does.

A job applied before its ServiceAccount fails its pods (the ServiceAccount admission
plugin rejects them and the operator backs off), and a gang-scheduled job needs its
PodGroup first. Argo CD applies a wave, waits until everything in it is healthy, then
applies the next; so ServiceAccounts, Roles, RoleBindings and PodGroups go in wave -1
and the job stays in the default wave 0; so does a TrainJob's own TrainingRuntime or
ClusterTrainingRuntime (Trainer's webhook refuses a TrainJob whose runtime does not exist yet:
`compiler.targets.trainer_v2_restarts`, `compiler.targets.trainer_v2_sources`).
None of those kinds has an Argo CD health check, so wave -1 is done as soon as it is applied. The Namespace objects of the tree
(`compiler.emit.namespaces`) go in wave -1 too: Argo CD orders by wave before kind, so a
Namespace left in wave 0 would come after the ServiceAccount that needs it ("namespaces
... not found"); within wave -1 Argo CD applies Namespaces first. Flux needs no waves:
it applies Namespaces (and CRDs) in a stage of their own before everything else; a job's own
TrainingRuntime, which it would dry-run with the TrainJob, gets a Kustomization of its own
(`compiler.emit.prerequisites`).

PersistentVolumeClaims deliberately stay in wave 0 with the job. Argo CD reports a
Pending claim as Progressing, and a claim of a `WaitForFirstConsumer` storage class (the
default class on GKE, EKS and AKS) stays Pending until a pod uses it: in an earlier wave
it would hold the job back forever (argo-cd issue 12840). In the same wave nothing is
lost: Argo CD sorts claims before custom resources, and a pod whose claim is not there
yet waits in Pending rather than failing.

The annotation is written into the compiled objects, so the kustomize tree and
`train-compile render` (the Config Management Plugin path) carry the same waves. Each
step that adds such an object passes it through `annotate` (rbac, scheduling, and the
Namespaces of `compiler.emit.namespaces`), so every step still writes only its own component;
which kinds go early is decided here alone.
"""

from __future__ import annotations

from typing import Any

from schemas.jsoncopy import json_copy
from schemas.upstream import SYNC_WAVE_ANNOTATION

ANNOTATION = SYNC_WAVE_ANNOTATION
PREREQUISITE_WAVE = "-1"
JOB_WAVE = "0"  # Argo CD's default; the job carries no annotation
EARLY_KINDS = frozenset({"Namespace", "ServiceAccount", "Role", "RoleBinding", "PodGroup", "TrainingRuntime",
                         "ClusterTrainingRuntime"})


def wave_of(obj: dict[str, Any]) -> int:
    """The wave Argo CD puts `obj` in."""
    return int(obj.get("metadata", {}).get("annotations", {}).get(ANNOTATION, JOB_WAVE))


def annotate(obj: dict[str, Any]) -> dict[str, Any]:
    """A copy of `obj`, in wave -1 if it is a prerequisite kind (else unchanged).

    `json_copy`, not `copy.deepcopy`: the objects are JSON-shaped, and a repository puts
    thousands in wave -1, which `json_copy` copies far cheaper (bench/README.md, "Figures
    the compiler's code cites")."""
    if obj.get("kind") not in EARLY_KINDS or wave_of(obj) < 0:
        return obj
    out = json_copy(obj)
    out.setdefault("metadata", {}).setdefault("annotations", {})[ANNOTATION] = PREREQUISITE_WAVE
    return out

