"""Pods of a previous run or attempt: what a suspension (or a whole-job restart) leaves behind
while its pods terminate.

A suspension (Kueue's eviction, or `runPolicy.suspend: true` from git) deletes every pod
of the job with the pods' grace period (30 s by default), and the kubelet keeps each one,
`deletionTimestamp` set and often still `Running`, until its containers have stopped.
When the job is resumed inside that window, upstream v1.9.4 counts such a pod as a failed
replica (semantics §6: a Running pod being deleted is failed), creates nothing for the
index it holds, and fails the job ("1 Master replica(s) failed"). Those pods belong to the
run that was suspended, not to the one that resumes, so here they are neither active,
succeeded nor failed, feed no backoff or restart decision, and their index gets its new
pod only once they are gone: the pod name is deterministic, so the new pod cannot be
created before. The old pod's final deletion is a watch event that queues the job, which
is the requeue; nothing polls and nothing sleeps.

How such a pod is recognised, durably: the suspending pass writes the annotation `MARK`
on each pod before it deletes it (and on any pod already terminating then, e.g. one
deleted behind the controller's back: it is of the suspended run as well). The pod carries
it until it is gone, so the mark survives a controller restart or a new leader; the pass
that resumes the job reads it from the pod like every later pass, and needs nothing else.
What was not chosen, and why:

- the job's status: the CRD's status schema has no field for it (unknown fields are
  pruned), and the job's metadata belongs to git (Argo CD / Flux would see drift);
- the pods' `creationTimestamp` against the resume time (`startTime`, the `Resumed`
  condition): both have one-second resolution and come from two clocks (the API server's
  and the controller's), and a resume 0.1 s after the suspension is exactly the case;
- `deletionTimestamp` alone: a pod deleted behind the controller's back during the
  current run has one too, and upstream counts it as failed, as we still do;
- remembering the pods' uids in memory: lost with the process.

A whole-job restart (controller.jobs.restarts) ends an attempt instead of a run: its pods
are told apart by their attempt annotation, older than the one on the run's record (one
write for all of them, instead of a mark per pod: controller.jobs.retiring says why); while
they terminate they count for nothing either, and no pod of the next attempt is created
until all are gone.

Cost: one PATCH per pod and suspension (the delete follows it). A mark written, then a
crash before the delete, leaves a marked live pod: a suspended pass deletes it as usual;
if the job was resumed meanwhile, the suspension never completed (its status is written
after the deletes), and the pass deletes the marked pod and replaces it, as it would
have been.
"""

from __future__ import annotations

from typing import Any

from foundation.runs.record import PREVIOUS as MARK  # annotation on the pod; the value says why
SUSPENDED = "suspend"


def is_previous(pod: dict[str, Any]) -> bool:
    """A pod the controller took away from its run (marked before it was deleted)."""
    return MARK in (pod["metadata"].get("annotations") or {})


def split(pods: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """(the current run's pods, the previous runs' pods by name)."""
    current, previous = [], {}
    for pod in pods:
        if is_previous(pod):
            previous[pod["metadata"]["name"]] = pod
        else:
            current.append(pod)
    return current, previous


def to_mark(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The pods a suspending pass marks: every pod of the job not marked yet."""
    return [pod for pod in pods if not is_previous(pod)]


def mark_patch(pod: dict[str, Any], why: str = SUSPENDED) -> dict[str, Any]:
    """A merge patch adding the mark; the uid precondition keeps it off a same-named successor."""
    return {"metadata": {"uid": pod["metadata"].get("uid"), "annotations": {MARK: why}}}
