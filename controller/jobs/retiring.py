"""Taking pods away from their run: the durable mark, then the delete (controller.jobs.runs).

Three things end a pod's part in a run while the job goes on: a suspension (Kueue's
eviction, `runPolicy.suspend`), a whole-job restart (controller.jobs.restarts), and a
suspension cut short by a crash (a marked pod still alive). In each the pod is first marked
(`runs.MARK`, one PATCH guarded by its uid, so a successor of the same name is never marked)
and then deleted through `Writes`, which records the expectation before the request. The
mark is what lets every later pass, of this controller or the next leader, leave a
terminating pod out of the counts and out of every restart or backoff decision.

A restart retires every pod of a job at once; a 64-pod job would otherwise pay 128 round
trips in a row, so the marks and deletes go side by side through the pass's create pool
(at most its size in flight for the whole controller, as the creates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller.jobs import runs
from controller.jobs.status import Ctx
from controller.runtime import errors
from controller.runtime.creates import CreatePool
from controller.runtime.informer import Informer
from controller.runtime.kube import PODS, Client
from controller.runtime.writes import Writes


@dataclass
class Retirer:
    client: Client
    writes: Writes
    pods: Informer
    creates: CreatePool | None = None

    def mark(self, pod: dict[str, Any], why: str) -> bool:
        """Write the mark; False when the pod is gone or its name belongs to a successor."""
        meta = pod["metadata"]
        try:
            written = self.client.patch(PODS, meta.get("namespace"), meta["name"], runs.mark_patch(pod, why))
        except (errors.NotFound, errors.Conflict, errors.Invalid):
            return False
        if isinstance(written, dict) and written.get("metadata"):
            self.pods.remember(written)  # the next pass must not read the unmarked copy
        return True

    def mark_all(self, pods: list[dict[str, Any]], why: str) -> None:
        """Mark `pods` (a suspending pass: its cleanup deletes them after)."""
        self._each(pods, lambda pod: self.mark(pod, why))

    def retire(self, ctx: Ctx, pods: list[dict[str, Any]]) -> None:
        """Mark (unless marked) and delete each of `pods`; the first failure fails the pass."""
        why = runs.RESTARTED if ctx.run is not None and ctx.run.whole_job else runs.SUSPENDED

        def one(pod: dict[str, Any]) -> None:
            if runs.is_previous(pod) or self.mark(pod, why):
                self.writes.delete(ctx, PODS, pod)

        self._each(pods, one)

    def _each(self, pods: list[dict[str, Any]], action: Any) -> None:
        if self.creates is None or len(pods) < 2:
            for pod in pods:
                action(pod)
            return
        outcomes = [self.creates.submit(action, pod) for pod in pods]
        for outcome in outcomes:
            outcome.result()
