"""Taking pods away from their run: the durable mark, then the delete (controller.jobs.runs).

Four things end a pod's part in a run while the job goes on: a suspension (Kueue's
eviction, `runPolicy.suspend`), a whole-job restart (controller.jobs.restarts), a suspension
cut short by a crash (a marked pod still alive), and an edit of a job whose run had not
started (controller.jobs.run_records: the run is replaced). A suspension's pod is first
marked (`runs.MARK`, one PATCH guarded by its uid, so a successor of the same name is never
marked), then deleted through `Writes`, which records the expectation before the request.
The mark is what lets every later pass, of this controller or the next leader, leave a
terminating pod out of the counts and out of every restart or backoff decision. A whole-job
restart needs no mark per pod: its one durable mark is the attempt written on the run's
record before any pod goes, against which each pod's own attempt annotation is older. In
`make bench-controller` the 64 marks of a 64-pod restart were about a third of its time (the
API server's CPU is what they compete for; bench/README.md, "whole-job restart").

A restart retires every pod of a job at once; a 64-pod job would otherwise pay 64 round
trips in a row, so the deletes (and a suspension's marks) go side by side through the
pass's create pool (at most its size in flight for the whole controller, as the creates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.jobs import runs
from controller.jobs.status import Ctx
from foundation.cluster import errors
from controller.runtime.creates import CreatePool
from controller.runtime.informer import Informer
from foundation.cluster.kube import PODS
from controller.runtime.writes import Writes


@dataclass
class Retirer:
    writes: Writes
    pods: Informer
    creates: CreatePool

    def mark(self, pod: dict[str, Any], why: str) -> bool:
        """Write the mark; False when the pod is gone or its name belongs to a successor."""
        try:
            written = self.writes.patch(PODS, pod, runs.mark_patch(pod, why))
        except (errors.NotFound, errors.Conflict, errors.Invalid):
            return False
        if isinstance(written, dict) and written.get("metadata"):
            self.pods.remember(written)  # the next pass must not read the unmarked copy
        return True

    def mark_all(self, pods: list[dict[str, Any]], why: str) -> None:
        """Mark `pods` (a suspending pass: its cleanup deletes them after)."""
        self._each(pods, lambda pod: self.mark(pod, why))

    def retire(self, ctx: Ctx, pods: list[dict[str, Any]], *, mark: bool = True) -> None:
        """Delete each of `pods`, a suspension's marked first (unless marked); the first failure
        fails the pass. A whole-job restart's pods are not marked one by one: the attempt on the
        run's record, written once before (controller.jobs.restarts), already makes every pod
        whose attempt annotation is lower one of an earlier attempt, for every pass and leader;
        nor are the pods of a run replaced before it started (`mark=False`): each names the record
        it was built from, which is no longer the job's (controller.jobs.run_records)."""
        whole_job = ctx.run is not None and ctx.run.whole_job

        def one(pod: dict[str, Any]) -> None:
            if not mark or whole_job or runs.is_previous(pod) or self.mark(pod, runs.SUSPENDED):
                self.writes.delete(ctx, PODS, pod)

        self._each(pods, one)

    def _each(self, pods: list[dict[str, Any]], action: Any) -> None:
        if len(pods) < 2:
            for pod in pods:
                action(pod)
            return
        outcomes = [self.creates.submit(action, pod) for pod in pods]
        for outcome in outcomes:
            outcome.result()
