"""Drift: where the live job is not what its spec compiles to now, and why it matters.

Only what the compiled job sets is compared (its labels, annotations and `spec`, leaf by
leaf): the API server and the controllers add defaults and status, which are no drift.
List items with a `name` (containers, env, volumes) or a `manager` (Trainer's
`runtimePatches`, where Kueue adds an entry of its own) are matched by it, so what others
add beside git's items is not drift; other lists are matched by position, or compared
whole when their lengths differ. What Kueue changes on a job it manages (the job carries
a queue label) is left out, the same fields the generated Argo CD and Flux objects ignore
(`compiler.gitops.kueue`). Each difference is put down to someone through
the live job's `managedFields` (the field manager whose entry owns the field, or an
atomic list or map above it; status writes are left out):

- `changed-in-cluster`: a manager other than the one that applies git's objects (the
  owner of the `trainforge.dev/source` annotation, else the one owning most of `spec`)
  set it: `kubectl edit`, a patch, another controller. A GitOps engine puts git's value
  back on its next sync, or keeps fighting it.
- `not-synced`: git changed and the cluster has not (the engine has not synced yet, or
  the sync fails).

Three more say an edit will not run although the cluster took it:
- `held`: train-controller runs a job's run from the spec recorded when it began (its run
  record, `foundation.runs.current`): a synced change of that spec waits for the next run
  (a suspend and resume, or a new name). Where git or the job object differ as well, the
  run's value is said on the same line as theirs (`Drift.run`): one field, one line, three
  sides; after a `kubectl patch` of a running job, the job object may be the odd one out.
- `will-not-run`: the job changed after it finished; a finished job never runs again
  until it is deleted and created anew.
- `old-pods`: under the upstream operator (no run record), a running pod's image is not its
  replica's template image any more: the operator builds each pod from the job as it is
  when it creates the pod, so the next pod it creates runs the new image beside the old ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Optional

from foundation.jsondiff import leaves
from foundation.runs.state import JobState
from schemas.marks import SOURCE

Path = tuple[Any, ...]
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


@dataclass(frozen=True)
class Drift:
    path: str  # in the diagnostics' syntax: spec.pytorchReplicaSpecs.Worker.replicas, ...containers[0].image
    git: Any  # what the spec compiles to now (None: git does not set it)
    cluster: Any  # what the live job has (None: it has none)
    why: str  # changed-in-cluster | not-synced | held | will-not-run | old-pods
    message: str
    run: Any = None  # what the run runs (its record's value, or a running pod's); None: not known or the same
    at: Path = ()  # `path` as steps (keys, indexes): where `compiler.cli.live.terms` finds the spec's field


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN.match(str(part)):
            out += f".{part}" if out else str(part)
        else:
            out += f"[{json.dumps(part)}]"
    return out


_ITEM_KEYS = ("name", "manager")


def _item_key_of(items: list[Any]) -> Optional[str]:
    return next((k for k in _ITEM_KEYS if items and all(isinstance(i, dict) and k in i for i in items)), None)


def _descend(git: Any, live: Any) -> Optional[list[tuple[Any, Any, Any]]]:
    """Only what git sets; list items by name (or manager) at the live object's positions (where
    managedFields are looked up), other lists by position when the lengths agree."""
    if isinstance(git, dict) and isinstance(live, dict):
        return [(key, value, live.get(key)) for key, value in git.items()]
    if isinstance(git, list) and isinstance(live, list):
        key = _item_key_of(git)
        if key is not None:
            at = {item[key]: i for i, item in enumerate(live) if isinstance(item, dict) and key in item}
            if all(item[key] in at for item in git):
                return [(at[item[key]], item, live[at[item[key]]]) for item in git]
        elif len(git) == len(live):
            return [(i, g, c) for i, (g, c) in enumerate(zip(git, live))]
    return None


def _leaves(git: Any, live: Any, *, path: Path) -> list[tuple[Path, Any, Any]]:
    """(path, git's value, live value) of every difference under `path`."""
    return list(leaves(git, live, _descend, path))


def differences(compiled: dict[str, Any], live: dict[str, Any]) -> list[tuple[Path, Any, Any]]:
    meta, live_meta = compiled.get("metadata") or {}, live.get("metadata") or {}
    out = []
    for key in ("labels", "annotations"):
        out += _leaves(meta.get(key) or {}, live_meta.get(key) or {}, path=("metadata", key))
    return out + _leaves(compiled.get("spec"), live.get("spec"), path=("spec",))


def owner(live: dict[str, Any], path: Path) -> Optional[dict[str, Any]]:
    """The managedFields entry (status writes left out) that owns `path`, or an atomic field above it."""
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if not entry.get("subresource") and _owns(entry.get("fieldsV1") or {}, live, path=path):
            return entry
    return None


def _owns(node: dict[str, Any], value: Any, *, path: Path) -> bool:
    for part in path:
        if not node:  # an empty set: the field above is owned whole (atomic)
            return True
        child = None
        if isinstance(part, int) and isinstance(value, list) and part < len(value):
            child = next((node[k] for k in node if _item_key(k, value[part], index=part)), None)
            value = value[part]
        else:
            child = node.get(f"f:{part}")
            value = value.get(part) if isinstance(value, dict) else None
        if child is None:
            return False
        node = child
    return True


def _item_key(key: str, item: Any, *, index: int) -> bool:
    kind, _, text = key.partition(":")
    try:
        if kind == "k":
            wanted = json.loads(text)
            return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())
        if kind == "v":
            return bool(json.loads(text) == item)
    except ValueError:
        return False
    return kind == "i" and text == str(index)


def applier(live: dict[str, Any]) -> Optional[dict[str, Any]]:
    """The manager that applies git's objects: whoever set the source annotation, else the
    entry owning the most of `spec`."""
    marked = owner(live, ("metadata", "annotations", SOURCE))
    if marked is not None:
        return marked
    entries = [e for e in (live.get("metadata") or {}).get("managedFields") or [] if not e.get("subresource")]
    return max(entries, key=lambda e: _count((e.get("fieldsV1") or {}).get("f:spec") or {}), default=None)


def _count(node: dict[str, Any]) -> int:
    return sum(_count(child) if child else 1 for child in node.values())


def kueue_fields(live: dict[str, Any]) -> list[Path]:
    """The fields Kueue manages on `live` (none unless it carries a queue label)."""
    from foundation.frameworks import BY_KIND
    from compiler.gitops import kueue
    from schemas.upstream import QUEUE_LABEL

    if QUEUE_LABEL not in ((live.get("metadata") or {}).get("labels") or {}):
        return []
    kind = str(live.get("kind"))
    pointers = kueue.json_pointers(kind) if kind in BY_KIND else list(kueue.TRAINJOB_POINTERS)
    return [tuple(pointer.strip("/").split("/")) for pointer in pointers]


def drift(compiled: dict[str, Any], live: dict[str, Any], *, state: JobState,
          run: Optional[dict[Path, tuple[Any, Any]]] = None, record: Optional[str] = None) -> list[Drift]:
    """Git against the cluster for one job (see the module's paragraph); `run`: the fields the
    run's record keeps at another value than the job object (`foundation.runs.current.held`),
    each said on the same line as git's side of it, so one field is one line."""
    applied = applier(live)
    managed = kueue_fields(live)
    held = dict(run or {})
    out = []
    for path, git, cluster in differences(compiled, live):
        if any(path[:len(m)] == m for m in managed):
            continue
        own = owner(live, path)
        if own is not None and applied is not None and own.get("manager") != applied.get("manager"):
            why = "changed-in-cluster"
            message = f"changed in the cluster by {own.get('manager')} ({own.get('operation')}) at {own.get('time')}"
        else:
            why = "not-synced"
            message = "git changed it and the cluster has not: not synced yet, or the sync fails"
        if state.finished:
            message += f"; the job is {state.state}, so it will not run"
        if path not in held:
            out.append(Drift(dotted(path), git, cluster, why, message, at=path))
            continue
        ran, _ = held.pop(path)
        if ran == git:  # the job object is the odd one: the run goes on with git's value
            message += "; the run goes on with git's value, the job's waits for its next run"
        else:
            message += f"; and the run has its own until its next run ({TAKE})"
        out.append(Drift(dotted(path), git, cluster, why, message, ran, path))
    for path, (ran, now) in held.items():  # synced, and held for the next run
        out.append(Drift(dotted(path), now, now, "held",
                         f"synced; held for the next run by the run's record {record} ({TAKE})", ran, path))
    changed = (applied or {}).get("time")
    if state.finished and changed and state.since and changed > state.since:
        out.append(Drift("spec", None, None, "will-not-run",
                         f"the job changed at {changed}, after it finished ({state.state}) at {state.since}: "
                         "the edit will not run; delete the job to run it again"))
    return out


TAKE = "to run it now: suspend and resume the job, or give it a new name"


def old_pods(live: dict[str, Any], pods: list[dict[str, Any]], *, replica_specs: str, type_label: str) -> list[Drift]:
    """Running pods whose image is no longer their replica template's (a kubeflow.org/v1 job the
    upstream operator runs: it builds each pod from the job as it is when it creates the pod)."""
    specs = (live.get("spec") or {}).get(replica_specs) or {}
    found: dict[tuple[Path, Any], tuple[Any, Any, list[str]]] = {}
    for pod in pods:
        meta, status = pod.get("metadata") or {}, pod.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed") or meta.get("deletionTimestamp"):
            continue
        label = str((meta.get("labels") or {}).get(type_label, ""))
        rtype = next((rt for rt in specs if rt.lower() == label.lower()), None)
        if rtype is None:
            continue
        template = ((specs[rtype].get("template") or {}).get("spec") or {}).get("containers") or []
        running = {c.get("name"): c.get("image") for c in (pod.get("spec") or {}).get("containers") or []}
        for i, container in enumerate(template):
            image = running.get(container.get("name"))
            if image is not None and image != container.get("image"):
                path = ("spec", replica_specs, rtype, "template", "spec", "containers", i, "image")
                found.setdefault((path, image), (container.get("image"), image, []))[2].append(str(meta.get("name")))
    running: dict[Any, list[str]] = {}  # image -> every pod running it (one message for the field's line)
    for (_, image), (_, _, names) in found.items():
        running.setdefault(image, []).extend(names)
    out = []
    for (path, image), (want, _, _) in found.items():
        names = sorted(running[image])
        out.append(Drift(dotted(path), want, want, "old-pods",
                         f"{'pod' if len(names) == 1 else 'pods'} {', '.join(names)} "
                         f"{'runs' if len(names) == 1 else 'run'} {image}: the operator builds each pod it creates "
                         "from the job as it is then, so the next pod created runs the new image beside the running "
                         "ones (a mixed run)", image, path))
    return out
