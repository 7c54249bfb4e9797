"""The first-class spec fields of a `kubeflow.org/v1` job: what lowering would write, read backwards.

`compiler/targets/lowering.py` and the overlays write each spec field to a known place of
the job (the image to the framework container of every role, `resources.memory` to its
requests and limits, `storage` to a PVC volume mounted in every role's container...). This
module reads a manifest from those places, in its canonical form (`sameness.canonical`:
defaults filled, so an unset restart policy reads as the kind's), and writes a field only
where the manifest says the same thing everywhere that field would reach: a volume mounted
in one role only stays out of `storage`. Whatever is left (a second container, hostNetwork,
a worker-only nodeSelector, limits apart from requests) is found by compiling the spec and
comparing (`compiler/importing/residual.py`), so a field read too eagerly here costs a longer
`podTemplate`, never a different job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from compiler.importing import overrides
from compiler.importing.pods import (
    DIGITS,
    Roles,
    env,
    gpu_resource,
    role_resources,
    storage,
)
from compiler.importing.sameness import plain, same
from compiler.importing.shapes import Shape
from foundation.frameworks.base import Adapter
from schemas.trainjob import API_VERSION
from schemas.types import DNS1035
from schemas.upstream import QUEUE_LABEL

if TYPE_CHECKING:
    from compiler.importing.kinds import JobKind

Obj = dict[str, Any]
PLACEMENT = ("nodeSelector", "tolerations", "affinity")  # scheduling fields a role may have its own of


def scheduling(job: Obj, roles: Optional[Roles]) -> Obj:
    """spec.scheduling: the Kueue queue label, and (v1 kinds: `roles`) the PriorityClass, gang
    scheduling and the main role's placement."""
    out: Obj = {}
    queue = ((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL)
    if queue:
        out["queue"] = queue
    if roles is None:
        return out
    policy = ((job.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy") or {}
    priority = policy.get("priorityClass")
    if priority and roles.alike(lambda t: roles.pod(t).get("priorityClassName")) == priority:
        out["priority"] = priority
    main = roles.main().replica_type
    for field in PLACEMENT:  # the main role's; another role's own is its entry's (`overrides`)
        value = roles.pod(main).get(field)
        if value:
            out[field] = plain(value)
    gang = _gang(policy, roles)
    if gang is not None:
        out["gang"] = gang
    return out


def _gang(policy: Obj, roles: Roles) -> Any:
    """scheduling.gang: a schedulingPolicy with minAvailable and every pod on one gang scheduler
    (`true` for volcano, the environment default's default; the object with a timeout or for
    coscheduling). minAvailable and minResources are the compiler's to compute: a manifest whose
    figures differ is found by the comparison."""
    from overlays.scheduling import SCHEDULERS

    if policy.get("minAvailable") is None:
        return None
    name = roles.alike(lambda t: roles.pod(t).get("schedulerName"))
    scheduler = next((s for s in SCHEDULERS.values() if s.scheduler_name == name), None)
    if scheduler is None:
        return None
    timeout = policy.get("scheduleTimeoutSeconds")
    if scheduler.volcano and timeout is None:
        return True
    return dict(scheduler=scheduler.name, **({"timeoutSeconds": timeout} if isinstance(timeout, int) else {}))


def policy(kind: JobKind, job: Obj, roles: Roles, replicas: dict[str, Obj]) -> Obj:
    """spec.policy: the main role's restart policy (when not the kind's default for it) and the
    run policy."""
    out: Obj = {}
    main = roles.main().replica_type
    restart = replicas[main].get("restartPolicy")
    if restart is not None and restart != kind.default_restart(main):
        out["restart"] = restart
    run = (job.get("spec") or {}).get("runPolicy") or {}
    for field, spelled in (("backoffLimit", "backoffLimit"), ("activeDeadlineSeconds", "activeDeadline"),
                           ("ttlSecondsAfterFinished", "ttlAfterFinished")):
        if isinstance(run.get(field), int):
            out[spelled] = run[field]
    if run.get("cleanPodPolicy") not in (None, kind.clean_pods_default):
        out["cleanPods"] = run["cleanPodPolicy"]
    if run.get("suspend") is True:
        out["suspend"] = True
    return out


def service_account(roles: Roles) -> Optional[Obj]:
    name = roles.alike(lambda t: roles.pod(t).get("serviceAccountName"))
    return {"name": name} if isinstance(name, str) and DNS1035.match(name) else None


def metadata(raw: Obj, canon: Obj, lifted_queue: bool) -> Obj:
    meta = canon.get("metadata") or {}
    out: Obj = {"name": meta.get("name")}
    if (raw.get("metadata") or {}).get("namespace"):
        out["namespace"] = meta["namespace"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if not (lifted_queue and k == QUEUE_LABEL)}
    if labels:
        out["labels"] = labels
    if meta.get("annotations"):
        out["annotations"] = dict(meta["annotations"])
    return out


def spec_fields(adapter: Adapter, roles: Roles, gpu: str) -> Obj:
    """The job's own fields: the main role's image, resources, env and working directory, the
    command of the role that runs the spec's command, nodes and what the plan read beside them.
    What another role has otherwise is its `roles` entry (`overrides`)."""
    main, commanding = roles.main().replica_type, roles.commanding().replica_type
    container, runner = roles.container(main), roles.container(commanding)
    spec: Obj = {"framework": adapter.name, "image": container.get("image")}
    for field in ("command", "args"):
        if runner.get(field):
            spec[field] = list(runner[field])
    if container.get("workingDir") and roles.alike(lambda t: roles.container(t).get("workingDir")):
        spec["workingDir"] = container["workingDir"]
    lifted_env = env(container)
    if lifted_env:
        spec["env"] = lifted_env
    if roles.shape.nodes != 1:
        spec["nodes"] = roles.shape.nodes
    spec_resources = role_resources(roles, main, gpu)
    if spec_resources:
        spec["resources"] = spec_resources
    spec.update(roles.shape.extra)
    return spec


def lift(raw: Obj, canon: Obj, kind: JobKind, shape: Shape, templates: dict[str, Obj],
         replicas: dict[str, Obj]) -> Obj:
    """The TrainJob document of a canonical job of a replica-spec kind whose replicas have `shape`."""
    adapter = kind.adapter
    roles = Roles(adapter, shape, templates)
    gpu = gpu_resource([roles.container(p.replica_type) for p in shape.plans])
    spec = spec_fields(adapter, roles, gpu)
    spec.update(_job_fields(adapter, canon, spec))
    volumes = storage(roles)
    if volumes:
        spec["storage"] = volumes
    sched = scheduling(canon, roles)
    if sched:
        spec["scheduling"] = sched
    pol = policy(kind, canon, roles, replicas)
    if pol:
        spec["policy"] = pol
    account = service_account(roles)
    if account:
        spec["serviceAccount"] = account
    own = overrides.entries(kind, roles, spec, gpu, replicas)
    if own:
        spec["roles"] = own
    return {"apiVersion": API_VERSION, "kind": "TrainJob",
            "metadata": metadata(raw, canon, lifted_queue="queue" in sched), "spec": spec}


def _job_fields(adapter: Adapter, canon: Obj, spec: Obj) -> Obj:
    """processesPerNode, from the kind's own field for it (nprocPerNode, slotsPerWorker): the
    field whose value `processesPerNode` changes, read back when it is not what `auto` writes."""
    if not adapter.facts.processes_per_node:
        return {}
    auto, two = (adapter.job_fields(_probe(spec, ppn)) for ppn in ("auto", 2))
    job_spec = canon.get("spec") or {}
    for field, value in auto.items():
        if same(value, two.get(field)):
            continue
        have = job_spec.get(field)
        text = str(plain(have)) if have is not None and not isinstance(have, bool) else ""
        if not same(have, value) and DIGITS.match(text):
            return {"processesPerNode": int(text)}
    return {}


def _probe(spec: Obj, processes: Any) -> Any:
    from compiler.importing.shapes import probe

    fields = {k: v for k, v in spec.items() if k in ("framework", "nodes", "resources", "elastic", "roles", "mpi")}
    return probe({**fields, "processesPerNode": processes})
