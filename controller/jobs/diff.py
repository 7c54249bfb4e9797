"""Pure diff of observed children against the replica specs (upstream's pod/service pass).

For one replica type: group the observed pods by their `replica-index` label into
slices, decide which indexes need a pod, which pods are surplus (index >= replicas),
which failed pods restart (delete + recreate under the same name: `OnFailure`,
`Always`, or `ExitCode` with exit code >= 128 or unknown) and which fail the job
(`ExitCode` with 1-127; foundation.runs.exits), and count the replica status. The reconciler executes the
returned plan; nothing here talks to the API server.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from controller.jobs import status as st
from foundation.runs import exits
from schemas import upstream

log = logging.getLogger(__name__)


@dataclass
class PodPlan:
    replica_type: str
    create: list[int] = field(default_factory=list)
    delete: list[dict[str, Any]] = field(default_factory=list)  # index out of range
    restart: list[dict[str, Any]] = field(default_factory=list)  # failed, retryable
    permanent_failure: bool = False  # ExitCode policy, exit code 1-127 (or 0)
    exited: list[tuple[dict[str, Any], int]] = field(default_factory=list)  # (pod, exit code) for ExitedWithCode
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class ServicePlan:
    replica_type: str
    create: list[int] = field(default_factory=list)
    delete: list[dict[str, Any]] = field(default_factory=list)


def of_type(objs: Iterable[dict[str, Any]], replica_type: str) -> list[dict[str, Any]]:
    rt = replica_type.lower()
    return [o for o in objs if (o["metadata"].get("labels") or {}).get(upstream.TYPE_LABEL) == rt]


def slices(objs: Iterable[dict[str, Any]], replicas: int) -> list[list[dict[str, Any]]]:
    """Objects grouped by index, sized max(replicas, highest index + 1); bad indexes skipped."""
    grouped: dict[int, list[dict[str, Any]]] = {}
    for obj in objs:
        raw = (obj["metadata"].get("labels") or {}).get(upstream.INDEX_LABEL)
        try:
            index = int(str(raw))
        except ValueError:
            log.warning("%s has no valid %s label; ignored", obj["metadata"]["name"], upstream.INDEX_LABEL)
            continue
        if index < 0:
            continue
        grouped.setdefault(index, []).append(obj)
    size = max([replicas, *(i + 1 for i in grouped)])
    return [grouped.get(i, []) for i in range(size)]


def plan_pods(pods: list[dict[str, Any]], replica_type: str, replica: dict[str, Any], *, container: str) -> PodPlan:
    plan = PodPlan(replica_type)
    wanted = int(replica.get("replicas", 1))
    policy = replica.get("restartPolicy")
    counted: list[dict[str, Any]] = []
    for index, group in enumerate(slices(of_type(pods, replica_type), wanted)):
        if len(group) > 1:
            log.warning("too many pods for %s %d: %s", replica_type, index, [p["metadata"]["name"] for p in group])
            continue
        if not group:
            if index < wanted:
                plan.create.append(index)
            continue
        pod = group[0]
        terminating = bool(pod["metadata"].get("deletionTimestamp"))
        if index >= wanted and not terminating:
            plan.delete.append(pod)
        code = st.exit_code(pod, container)
        if code != st.EXIT_CODE_UNKNOWN:
            plan.exited.append((pod, code))
        if (pod.get("status") or {}).get("phase") == "Failed":
            if exits.retries(policy, code):  # 0xbeef, the "unknown" sentinel, retries under ExitCode
                if not terminating and pod not in plan.delete:
                    plan.restart.append(pod)
            elif policy == exits.EXIT_CODE:
                plan.permanent_failure = True
        counted.append(pod)
    plan.counts = st.count(counted)
    return plan


def plan_services(services: list[dict[str, Any]], replica_type: str, replica: dict[str, Any]) -> ServicePlan:
    plan = ServicePlan(replica_type)
    wanted = int(replica.get("replicas", 1))
    for index, group in enumerate(slices(of_type(services, replica_type), wanted)):
        if len(group) > 1:
            log.warning("too many services for %s %d", replica_type, index)
            continue
        if not group and index < wanted:
            plan.create.append(index)
        elif group and index >= wanted and not group[0]["metadata"].get("deletionTimestamp"):
            plan.delete.append(group[0])
    return plan
