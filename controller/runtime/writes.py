"""The one write path of the reconciler: every request it makes that changes the cluster.

A job's children (pods, services, PodGroups, MPI's helpers, HPAs) are created and deleted
here, on upstream's rules, written once (semantics §6): the expectation is raised before the
request (a pass never acts on a cache that has not seen its own writes); AlreadyExists counts
as created and NotFound as deleted (names are deterministic: the watch will show the object,
or its absence); another error lowers the expectation again, is recorded as a Failed Event
when the object's kind is announced, and fails the pass (retried with backoff); success of an
announced kind is its `SuccessfulCreate{Kind}` / `SuccessfulDelete{Kind}` Event. And so are the
reconciler's own writes: the job's `/status`, its deletion when its TTL has passed, the
adoption of an orphan, a pod's suspension mark, and the runs' records (ControllerRevisions).

Expectations are raised in one place (`_expect`) and lowered in one (`_unexpect`, when a request
will bring no watch event), whichever way a create travels: at once; inside a pod pass with a
batch open, concurrently (controller.runtime.creates: the batch calls `_send` on its threads, so
it never touches the expectations); or, with --pods-first, held until the pod burst is over
(controller.runtime.burst), its Event emitted when it is answered. The watch lowers them on the
other side (the manager's handlers).

What differs between children is data, given per call: whether the kind is announced with
Events (pods, services, PodGroup deletes: as upstream; MPI's helpers and PodGroup creates:
not), whether an expectation is kept (an HPA, a run record, the job itself have none: nothing
waits for their watch), the noun of its Event message.

This is plumbing: it knows requests, expectations and Events, not jobs. What it needs of a
reconcile pass is the small `Pass` protocol: the job's key, the pass's Events and open create
batch, and `admit_pod`, the pass's own answer to whether a pod may be created now (the run
semantics behind that answer are controller.jobs', not this module's).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from controller.runtime.burst import Held
from controller.runtime.expectations import Expectations, Item
from foundation.cluster import errors
from foundation.cluster.kube import PODS, SERVICES, Client, Resource

log = logging.getLogger(__name__)

Event = tuple[str, str, str]  # (type, reason, message)
CREATED, EXISTED = "created", "existed"


def job_key(kind: str, namespace: str, name: str) -> str:
    """The work queue's key of a job: `Kind/namespace/name`."""
    return f"{kind}/{namespace}/{name}"


class CreateBatch(Protocol):
    """A pass's open batch of creates (controller.runtime.creates.Batch)."""

    def add(self, res: Resource, obj: dict[str, Any], send: Callable[..., None]) -> None: ...

    def wait(self) -> None: ...


class Pass(Protocol):
    """What the write path needs of one reconcile pass (module docstring)."""

    @property
    def key(self) -> str:
        """The job's work-queue key (`job_key`): expectations and retries are counted by it."""
        ...

    @property
    def events(self) -> list[Event]:
        """The pass's Events, in order: a write appends its outcome's."""
        ...

    @property
    def creates(self) -> CreateBatch | None:
        """The pass's open batch of pod and Service creates, if any."""
        ...

    def admit_pod(self, pod: dict[str, Any]) -> bool:
        """Whether `pod` may be created now (False: the create answers EXISTED, nothing is sent);
        the pass may mark the pod on the way."""
        ...

    def before_delete(self, pod: dict[str, Any]) -> None:
        """Called before one of the job's pods is deleted (the pass may write what the pod showed)."""
        ...


P = TypeVar("P", bound=Pass)


def expectation_item(res: Resource, name: str) -> Item:
    """What the expectations count for a child: its resource and name (the watch reports both)."""
    return (res.plural, name)


def created_event(res: Resource, name: str) -> Event:
    return ("Normal", f"SuccessfulCreate{res.kind}", f"Created {res.kind.lower()}: {name}")


def failed_create_event(res: Resource, exc: errors.ApiError) -> Event:
    return ("Warning", f"FailedCreate{res.kind}", f"Error creating: {exc.reason}")


def _written(answer: Any) -> dict[str, Any] | None:
    return answer if isinstance(answer, dict) and answer.get("metadata") else None


@dataclass
class Writes(Generic[P]):
    """Creates, deletes, updates and patches the reconciler makes (module docstring).

    `emit` records Events on a pass's job after the pass (a held create answered later);
    `retry` queues a job again with backoff (a held create that failed)."""

    client: Client
    expectations: Expectations
    emit: Callable[[P, list[Event]], None]
    retry: Callable[[str], None]
    held: Held | None = None

    # ------------------------------------------------------------------ expectations: the one place
    def _expect(self, key: str, item: Item, *, delete: bool = False, held: bool = False) -> None:
        """Before the request: the job's next passes wait until the watch shows it done."""
        if delete:
            self.expectations.expect_delete(key, [item])
        else:
            self.expectations.expect_create(key, [item], held=held)

    def _unexpect(self, key: str, item: Item, *, delete: bool = False) -> None:
        """The request brings no watch event (refused, AlreadyExists/NotFound, or never sent)."""
        if delete:
            self.expectations.deleted(key, item)
        else:
            self.expectations.created(key, item)

    # ------------------------------------------------------------------ a job's children: creates
    def create(self, ctx: P, res: Resource, obj: dict[str, Any], *, announce: bool = True) -> str:
        """Create `obj` for the job of `ctx`; CREATED, or EXISTED when AlreadyExists or the pass
        does not admit the pod (also CREATED when the create was only started: a batch or a held
        create answers later)."""
        if res is PODS and not ctx.admit_pod(obj):
            return EXISTED
        key, item = ctx.key, expectation_item(res, obj["metadata"]["name"])
        if res is SERVICES and self.held is not None and self.held.in_burst():
            self._expect(key, item, held=True)
            self._hold(key, ctx, res, obj)
            return CREATED
        self._expect(key, item)
        if ctx.creates is not None and res in (PODS, SERVICES):
            # answered, and its Event filled in, when the pass waits
            ctx.creates.add(res, obj, lambda skip=False: self._send(key, res, obj, skip=skip))
            return CREATED
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

    def _send(self, key: str, res: Resource, obj: dict[str, Any], *, skip: bool = False) -> None:
        """Create `obj`, already expected (`skip`: not sent after all, an earlier create of its
        batch failed); AlreadyExists and other errors propagate."""
        item = expectation_item(res, obj["metadata"]["name"])
        if skip:
            self._unexpect(key, item)
            return
        try:
            self.client.create(res, obj["metadata"]["namespace"], obj, answer=False)
        except Exception:
            self._unexpect(key, item)  # the watch will show no new object of ours
            raise

    def _hold(self, key: str, ctx: P, res: Resource, obj: dict[str, Any]) -> None:
        """Send the (held-expected) create once the pod burst is over (controller.runtime.burst)."""
        assert self.held is not None
        item = expectation_item(res, obj["metadata"]["name"])

        def send() -> None:
            self.expectations.sent(key, item)  # its wait's deadline starts with its request
            try:
                self._send(key, res, obj)
            except errors.AlreadyExists:
                return
            except errors.ApiError as exc:
                self.emit(ctx, [failed_create_event(res, exc)])
                log.warning("create %s %s/%s: %s (job retried)", res.kind, obj["metadata"]["namespace"],
                            obj["metadata"]["name"], exc)
                self.retry(key)
                return
            self.emit(ctx, [created_event(res, obj["metadata"]["name"])])

        self.held.create(send)

    # ------------------------------------------------------------------ a job's children: deletes
    def delete(self, ctx: P, res: Resource, obj: dict[str, Any], *, announce: bool = True,
               noun: str | None = None) -> None:
        """Delete `obj` (by uid) for the job of `ctx`; its Event names it `{noun}: name`
        (default: the kind in lower case, as upstream's pod and service Events)."""
        if ctx.creates is not None:
            ctx.creates.wait()  # the creates upstream's order puts first land first (or fail the pass)
        if res is PODS:
            ctx.before_delete(obj)
        key, meta = ctx.key, obj["metadata"]
        item = expectation_item(res, meta["name"])
        self._expect(key, item, delete=True)
        try:
            self.client.delete(res, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
        except errors.NotFound:
            self._unexpect(key, item, delete=True)
            return
        except errors.ApiError as exc:
            self._unexpect(key, item, delete=True)
            if announce:
                ctx.events.append(("Warning", f"FailedDelete{res.kind}", f"Error deleting: {exc.reason}"))
            raise
        if announce:
            ctx.events.append(("Normal", f"SuccessfulDelete{res.kind}",
                               f"Deleted {noun or res.kind.lower()}: {meta['name']}"))

    # ------------------------------------------------------------------ writes nothing waits for
    def create_unexpected(self, res: Resource, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Create an object no pass waits for (an HPA, a run record); the written object, or
        None when it exists already (its ADDED event requeues the job)."""
        try:
            return _written(self.client.create(res, obj["metadata"]["namespace"], obj))
        except errors.AlreadyExists:
            return None

    def delete_unexpected(self, res: Resource, obj: dict[str, Any]) -> None:
        """Delete `obj` by its uid (an HPA, a superseded run record, the job past its TTL); gone is done."""
        meta = obj["metadata"]
        try:
            self.client.delete(res, meta.get("namespace"), meta["name"], uid=meta.get("uid"))
        except errors.NotFound:
            pass

    def update(self, res: Resource, body: dict[str, Any], *, sub: str | None = None) -> dict[str, Any] | None:
        """PUT `body` (or its `sub`resource: the job's status) with the resourceVersion of the
        cached copy it came from: a stale copy fails with 409 (retried) instead of overwriting
        what another writer changed."""
        return _written(self.client.update(res, body, sub=sub))

    def patch(self, res: Resource, obj: dict[str, Any], body: dict[str, Any], *,
              content_type: str = "application/merge-patch+json") -> dict[str, Any]:
        """PATCH `obj` with `body` (a merge patch unless said otherwise): a pod's mark, an orphan's
        adoption, a run record's annotations; the object as written. Its preconditions are the
        body's (a uid, a resourceVersion); errors propagate for the caller to judge."""
        meta = obj["metadata"]
        return self.client.patch(res, meta.get("namespace"), meta["name"], body, content_type=content_type)
