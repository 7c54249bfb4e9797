"""Refuse to start, saying what to install, when an API the flags rely on is not served.

Without this, a missing CRD shows up a minute later as "informer for podgroups did not
sync", which names neither the CRD nor the flag that asked for it. One `list ?limit=1`
per resource at start is cheap; a 404 means the API server does not serve it. A 403
(RBAC) is not this module's business: the request log and the ClusterRole say more.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.jobs.gang import Scheduler
from controller.jobs.kinds import Kind, job_resource
from foundation.cluster import errors
from foundation.cluster.kube import Client, Resource

INSTALL_JOBS = "install them with `kubectl apply --server-side -k controller/install`, or leave the kind out of --frameworks"
INSTALL_GANG = {
    True: "install Volcano (https://volcano.sh) first, or drop --gang-scheduler-name",
    False: "install the scheduler-plugins coscheduling CRDs (sigs.k8s.io/scheduler-plugins) first, or drop --gang-scheduler-name",
}


class MissingAPI(Exception):
    """A resource the controller was asked to watch is not served; the message says what to do."""


def missing(client: Client, resources: Iterable[Resource], namespace: str | None) -> list[Resource]:
    """The resources that answer 404 to a one-item list (in `namespace` when set)."""
    absent = []
    for res in resources:
        try:
            client.list(res, namespace=namespace if res.namespaced else None, limit=1)
        except errors.NotFound:
            absent.append(res)
    return absent


def crd_name(res: Resource) -> str:
    return f"{res.plural}.{res.group}"


def check(client: Client, kinds: Iterable[Kind], gang: Scheduler | None, namespace: str | None) -> None:
    """Raise MissingAPI naming every missing CRD and the fix, or return."""
    problems = []
    jobs = missing(client, [job_resource(k) for k in kinds], namespace)
    if jobs:
        problems.append(f"the CRDs {', '.join(crd_name(r) for r in jobs)} are not installed: {INSTALL_JOBS}")
    if gang is not None and missing(client, [gang.resource], namespace):
        problems.append(f"--gang-scheduler-name={gang.name} needs the PodGroup CRD {crd_name(gang.resource)} "
                        f"({gang.resource.api_version}), which this cluster does not serve: {INSTALL_GANG[gang.volcano]}")
    if problems:
        raise MissingAPI("; ".join(problems))
