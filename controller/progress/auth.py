"""Who sent a progress report: a TokenReview of its bearer token, and the job its pod belongs to.

A report is trusted only as far as its token proves: the API server's TokenReview says the
token is valid, unexpired and meant for `AUDIENCE` (`spec.audiences`), and names the pod the
token is bound to (the `authentication.kubernetes.io/pod-name` and `pod-uid` extras a
projected token carries); that pod, found in the controller's own pod cache with the same
uid, must be controlled by the job the report is for. Anything short of it is refused:
401 when the token proves nothing (absent, forged, expired, another audience, its pod gone),
403 when it proves a pod that is not the job's (another job's, another namespace's, or a
token bound to no pod at all).

Why a TokenReview rather than verifying the JWT ourselves as the Trainer does (OIDC
discovery of the issuer's keys): it needs no discovery and no key cache, works with any
issuer the API server trusts, and tells a token of a deleted pod from a live one. What it
costs is one API request per token, so answers are cached by the token's hash until the
token expires (at most `CACHE_SECONDS`): a pod re-reads its rotating token file and sends the
same token for most of an hour, so a steady reporter costs one review per rotation. A token
that is not even a JWT for our audience is refused without a request, and a refused token is
remembered for `NEGATIVE_SECONDS`, so a flood of garbage costs the API server nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource
from foundation.progress.endpoint import AUDIENCE

log = logging.getLogger(__name__)

TOKENREVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
POD_NAME, POD_UID = "authentication.kubernetes.io/pod-name", "authentication.kubernetes.io/pod-uid"
CACHE_SECONDS = 300.0  # an accepted token is reviewed again after this, to notice its pod's deletion
NEGATIVE_SECONDS = 10.0
CACHE_LIMIT = 50_000  # tokens remembered at once (a pod holds one or two): past it the cache starts over


class Refused(Exception):
    """A report the controller will not take: `code` 401 or 403, `reason` for the metric."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code, self.reason = code, reason


@dataclass(frozen=True)
class PodIdentity:
    namespace: str
    pod: str
    uid: str


def bearer(header: str | None) -> str:
    """The credentials of an `Authorization: Bearer <token>` header (scheme in any case)."""
    parts = (header or "").split()
    return parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else ""


def _claims(token: str) -> dict[str, Any] | None:
    """The JWT's payload, unverified (only to skip a review of what cannot pass)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


class Authenticator:
    """TokenReview with an answer cache; thread-safe (the server's request threads share it)."""

    def __init__(self, client: Client, *, audience: str = AUDIENCE, clock: Callable[[], float] = time.time) -> None:
        self.client, self.audience, self.clock = client, audience, clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, PodIdentity | Refused]] = {}
        self.reviews = 0
        self._review_failed = False  # said once at WARNING until a review succeeds again

    def identify(self, header: str | None) -> PodIdentity:
        """The pod the token is bound to; raises Refused."""
        token = bearer(header)
        if not token:
            raise Refused(401, "no-token", "no bearer token: send the pod's projected token (Authorization: Bearer ...)")
        claims = _claims(token)
        now = self.clock()
        if claims is None:
            raise Refused(401, "not-a-token", "the bearer token is not a JWT")
        aud = claims.get("aud")
        if self.audience not in (aud if isinstance(aud, list) else [aud]):
            raise Refused(401, "audience", f"the token is not for the audience {self.audience}")
        exp = claims.get("exp")
        if isinstance(exp, (int, float)) and exp <= now:
            raise Refused(401, "expired", "the token has expired")
        key = hashlib.sha256(token.encode()).hexdigest()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and hit[0] > now:
            if isinstance(hit[1], Refused):
                raise hit[1]
            return hit[1]
        answer = self._review(token)
        until = now + (CACHE_SECONDS if isinstance(answer, PodIdentity) else NEGATIVE_SECONDS)
        if isinstance(answer, PodIdentity) and isinstance(exp, (int, float)):
            until = min(until, float(exp))
        with self._lock:
            if len(self._cache) >= CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = (until, answer)
        if isinstance(answer, Refused):
            raise answer
        return answer

    def _review(self, token: str) -> PodIdentity | Refused:
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": token, "audiences": [self.audience]}}
        self.reviews += 1
        try:
            review = self.client.create(TOKENREVIEWS, None, body)
        except errors.ApiError as exc:  # the API server is down or refuses us: not the token's fault
            log.log(logging.DEBUG if self._review_failed else logging.WARNING, "cannot review progress tokens: %s", exc)
            self._review_failed = True
            raise Refused(503, "review-failed", f"cannot review the token now: {exc}") from exc
        self._review_failed = False
        status = review.get("status") or {}
        if not status.get("authenticated") or self.audience not in (status.get("audiences") or [self.audience]):
            return Refused(401, "unauthenticated", "the token is not valid (forged, expired, revoked, or its pod is gone)")
        user = status.get("user") or {}
        name = user.get("username", "")
        extra = user.get("extra") or {}
        pod, uid = (extra.get(POD_NAME) or [""])[0], (extra.get(POD_UID) or [""])[0]
        parts = name.split(":")
        if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"] or not pod or not uid:
            return Refused(403, "not-a-pod", f"the token of {name or 'an unnamed user'} is bound to no pod")
        return PodIdentity(parts[2], pod, uid)


def authorize(identity: PodIdentity, job: dict[str, Any] | None, pod: dict[str, Any] | None, *,
              kind: str, namespace: str, name: str) -> None:
    """Raise Refused(403) unless the token's pod is a live pod controlled by `job`."""
    what = f"{kind} {namespace}/{name}"
    if identity.namespace != namespace:
        raise Refused(403, "other-namespace", f"pod {identity.namespace}/{identity.pod} may not report for {what}")
    if job is None:
        raise Refused(403, "no-job", f"{what} does not exist")
    meta = (pod or {}).get("metadata") or {}
    if meta.get("uid") != identity.uid:
        raise Refused(403, "not-the-jobs-pod", f"pod {identity.pod} is not a pod of {what}")
    owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    if owner is None or owner.get("uid") != job["metadata"].get("uid"):
        raise Refused(403, "not-the-jobs-pod", f"pod {identity.pod} is not a pod of {what}")
