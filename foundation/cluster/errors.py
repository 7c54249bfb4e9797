"""The controller's own error hierarchy for everything the API server answers.

Callers branch on meaning (gone, already there, lost a race, our bug, try again later),
never on HTTP codes or on `kubernetes` exception types, and every message reads
`failed to <verb> <Kind> <ns>/<name>: <reason>` so a log line or Event says what failed.
"""

from __future__ import annotations


class ApiError(Exception):
    """A request the API server refused or that never reached it."""

    retryable = False

    def __init__(self, verb: str, kind: str, namespace: str | None, name: str | None, reason: str, *, code: int = 0) -> None:
        self.verb, self.kind, self.namespace, self.name = verb, kind, namespace, name
        self.reason, self.code = reason, code
        target = "/".join(part for part in (namespace, name) if part) or "(all)"
        super().__init__(f"failed to {verb} {kind} {target}: {reason}")


class NotFound(ApiError):
    """404: the object (or its namespace) does not exist."""


class AlreadyExists(ApiError):
    """409 AlreadyExists on create: deterministic names make this a second guard."""


class Conflict(ApiError):
    """409 on update: our resourceVersion is stale; re-queue and recompute."""

    retryable = True


class Invalid(ApiError):
    """422/400: the object we built is not acceptable; retrying will not help."""


class Forbidden(ApiError):
    """403: RBAC does not allow it (install manifests out of date?)."""


class Expired(ApiError):
    """410 Gone: the resourceVersion is too old for a watch; relist."""


class Retryable(ApiError):
    """429, 5xx, timeouts and connection errors: back off and try again."""

    retryable = True
