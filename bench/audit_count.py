"""API requests of one client, counted by the API server's audit log.

Why the audit log: `apiserver_request_total` has no user or user-agent label, and in a
test world kwok, kube-scheduler and the benchmark write the same resources as the
controller (pod status, bindings, jobs). Each controller under test runs as a user of its
own; the audit policy records that user's requests only (Metadata level, so the log stays
small and cheap at 80,000 pods) and everything else at level None. A request is counted
once, by its audit ID: a watch writes a ResponseStarted line and, when it ends, a
ResponseComplete one.
"""

from __future__ import annotations

import datetime
from collections import Counter
from pathlib import Path
from typing import Iterable, Optional

import orjson

WRITE_VERBS = ("create", "update", "patch", "delete", "deletecollection")


def policy(user: str) -> str:
    """An audit policy recording `user`'s requests only."""
    return ("apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [\"RequestReceived\"]\nrules:\n"
            f"- level: Metadata\n  users: [{orjson.dumps(user).decode()}]\n- level: None\n")


def _timestamp(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def count(paths: Iterable[Path], user: str, *,
          since: Optional[datetime.datetime] = None) -> Counter[tuple[str, str]]:
    """Requests by (verb, resource[/subresource]) that `user` sent, received at or after `since`."""
    out: Counter[tuple[str, str]] = Counter()
    seen: set[str] = set()
    for path in paths:
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:  # the line being written right now
                continue
            if (event.get("user") or {}).get("username") != user or event["auditID"] in seen:
                continue
            if since is not None and _timestamp(event["requestReceivedTimestamp"]) < since:
                continue
            seen.add(event["auditID"])
            ref = event.get("objectRef") or {}
            resource = ref.get("resource", event.get("requestURI", "?"))
            if ref.get("apiGroup"):
                resource = f"{ref['apiGroup']}/{resource}"
            if ref.get("subresource"):
                resource += f"/{ref['subresource']}"
            out[(event["verb"], resource)] += 1
    return out


def writes(counts: Counter[tuple[str, str]]) -> int:
    return sum(n for (verb, _), n in counts.items() if verb in WRITE_VERBS)


def reads(counts: Counter[tuple[str, str]]) -> int:
    return sum(n for (verb, _), n in counts.items() if verb not in WRITE_VERBS)
