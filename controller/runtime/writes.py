"""The one write path for a job's children: pods, services, PodGroups, MPI's helpers, HPAs.

Every create and delete a reconcile makes goes through `Writes`, so upstream's rules for them
hold everywhere, written once (semantics §6): the expectation is recorded before the request
(a pass never acts on a cache that has not seen its own writes); AlreadyExists counts as
created and NotFound as deleted (names are deterministic: the watch will show the object,
or its absence); another error lowers the expectation again, is recorded as a Failed Event
when the object's kind is announced, and fails the pass (retried with backoff); success of
an announced kind is its `SuccessfulCreate{Kind}` / `SuccessfulDelete{Kind}` Event.

What differs between children is data, given per call: whether the kind is announced with
Events (pods, services, PodGroup deletes: as upstream; MPI's helpers and PodGroup creates:
not), whether an expectation is kept (an HPA has none: nothing waits for its watch), the
noun of its Event message. Where a create is sent is decided here too: inside a pod pass
with a batch open, pods and services go out concurrently (controller.runtime.creates); with
--pods-first a service waits out the pod burst (controller.runtime.burst) and its Event is emitted
when it is answered.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.runtime import errors
from controller.runtime.burst import Held
from controller.runtime.expectations import Expectations
from controller.runtime.kube import PODS, SERVICES, Client, Resource

if TYPE_CHECKING:
    from controller.jobs.kinds import Kind  # the job's kind, passed through to `emit`

log = logging.getLogger(__name__)

Event = tuple[str, str, str]  # (type, reason, message)
CREATED, EXISTED = "created", "existed"


def job_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def key_of(ctx: Any) -> str:
    return job_key(ctx.kind.name, ctx.namespace, ctx.name)


def expectation_item(res: Resource, name: str) -> tuple[str, str]:
    """What the expectations count for a child: its resource and name (the watch reports both)."""
    return (res.plural, name)


def created_event(res: Resource, name: str) -> Event:
    return ("Normal", f"SuccessfulCreate{res.kind}", f"Created {res.kind.lower()}: {name}")


def failed_create_event(res: Resource, exc: errors.ApiError) -> Event:
    return ("Warning", f"FailedCreate{res.kind}", f"Error creating: {exc.reason}")


@dataclass
class Writes:
    """Creates, deletes and updates of a job's children, on upstream's rules (module docstring).

    `emit` records Events on a job outside a pass (a held create answered later); `retry`
    queues a job again with backoff (a held create that failed)."""

    client: Client
    expectations: Expectations
    emit: Callable[[dict[str, Any], Kind, list[Event]], None]
    retry: Callable[[str], None]
    held: Held | None = None

    # ------------------------------------------------------------------ creates
    def create(self, ctx: Any, res: Resource, obj: dict[str, Any], *, announce: bool = True) -> str:
        """Create `obj` for the job of `ctx`; CREATED, or EXISTED when AlreadyExists (also when
        the create was only started: a batch or a held create answers later)."""
        if res is PODS:
            if obj["metadata"]["name"] in ctx.previous or ctx.hold_pods:
                return EXISTED  # a previous run's pod still holds the name, or any pod (controller.jobs.runs)
            if ctx.run is not None:
                ctx.run.stamp(obj)  # the run's revision (and attempt) on the pod (controller.jobs.run_revisions)
        key = key_of(ctx)
        if res is SERVICES and self.held is not None and self.held.in_burst():
            self._hold(key, ctx, res, obj)
            return CREATED
        if ctx.creates is not None and res in (PODS, SERVICES):
            ctx.creates.add(res, obj)  # answered, and its Event filled in, when the pass waits
            return CREATED
        self.expectations.expect_create(key, [expectation_item(res, obj["metadata"]["name"])])
        try:
            self._send(key, res, obj)
        except errors.AlreadyExists:
            return EXISTED
        except errors.ApiError as exc:
            if announce:
                ctx.events.append(failed_create_event(res, exc))
            raise
        if announce:
            ctx.events.append(created_event(res, obj["metadata"]["name"]))
        return CREATED

    def _send(self, key: str, res: Resource, obj: dict[str, Any]) -> None:
        """Create `obj`, already expected; AlreadyExists and other errors lower the expectation
        and propagate."""
        item = expectation_item(res, obj["metadata"]["name"])
        try:
            self.client.create(res, obj["metadata"]["namespace"], obj, answer=False)
        except errors.ApiError:
            self.expectations.created(key, item)  # the watch will show no new object of ours
            raise

    def _hold(self, key: str, ctx: Any, res: Resource, obj: dict[str, Any]) -> None:
        """Expect the create now, send it once the pod burst is over (controller.runtime.burst)."""
        assert self.held is not None
        job, kind = ctx.job, ctx.kind
        item = expectation_item(res, obj["metadata"]["name"])
        self.expectations.expect_create(key, [item], held=True)

        def send() -> None:
            self.expectations.sent(key, item)
            try:
                self._send(key, res, obj)
            except errors.AlreadyExists:
                return
            except errors.ApiError as exc:
                self.emit(job, kind, [failed_create_event(res, exc)])
                log.warning("create %s %s/%s: %s (job retried)", res.kind, obj["metadata"]["namespace"],
                            obj["metadata"]["name"], exc)
                self.retry(key)
                return
            self.emit(job, kind, [created_event(res, obj["metadata"]["name"])])

        self.held.create(send)

    # ------------------------------------------------------------------ deletes
    def delete(self, ctx: Any, res: Resource, obj: dict[str, Any], *, announce: bool = True,
               noun: str | None = None) -> None:
        """Delete `obj` (by uid) for the job of `ctx`; its Event names it `{noun}: name`
        (default: the kind in lower case, as upstream's pod and service Events)."""
        if ctx.creates is not None:
            ctx.creates.wait()  # the creates upstream's order puts first land first (or fail the pass)
        key, meta = key_of(ctx), obj["metadata"]
        item = expectation_item(res, meta["name"])
        self.expectations.expect_delete(key, [item])
        try:
            self.client.delete(res, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
        except errors.NotFound:
            self.expectations.deleted(key, item)
            return
        except errors.ApiError as exc:
            self.expectations.deleted(key, item)
            if announce:
                ctx.events.append(("Warning", f"FailedDelete{res.kind}", f"Error deleting: {exc.reason}"))
            raise
        if announce:
            ctx.events.append(("Normal", f"SuccessfulDelete{res.kind}",
                               f"Deleted {noun or res.kind.lower()}: {meta['name']}"))

    # ------------------------------------------------------------------ unexpected writes
    def create_unexpected(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Create a child nothing waits for (an HPA: no pass depends on its watch); None when
        it exists already (its ADDED event requeues the job)."""
        try:
            return self.client.create(res, obj["metadata"]["namespace"], obj)
        except errors.AlreadyExists:
            return None

    def delete_unexpected(self, res: Resource, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        try:
            self.client.delete(res, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
        except errors.NotFound:
            pass

    def update(self, res: Resource, body: dict[str, Any]) -> dict[str, Any] | None:
        """PUT `body` with the resourceVersion of the cached copy it came from: a stale copy
        fails with 409 (retried) instead of overwriting what another writer changed."""
        written = self.client.update(res, body)
        return written if isinstance(written, dict) and written.get("metadata") else None
