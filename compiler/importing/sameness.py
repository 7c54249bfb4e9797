"""When two manifests are the same job: the contract of `train-compile import`'s round trip.

An imported spec, compiled again (`train-compile render`), must give the original job back.
"The same job" is defined here, once, and `import --check` and the corpus test use it:

two jobs are the same when they are equal, field for field, after both went through what
the cluster does to a job anyway. That is, after each side is put in its `canonical` form:

- what the API server writes and a person never does is left out: `status`, and in
  `metadata` the `uid`, `resourceVersion`, `creationTimestamp`, `generation`, `selfLink`,
  `managedFields` and the `kubectl.kubernetes.io/last-applied-configuration` annotation;
  trainforge's own `trainforge.dev/*` labels and annotations are left out too, and so are
  the marks a GitOps engine puts on what it syncs (`ENGINE_MARKS`: Flux's
  `kustomize.toolkit.fluxcd.io/name` and `/namespace` labels, Argo CD's
  `argocd.argoproj.io/tracking-id` annotation): the engine writes its own on every sync;
- a job without `metadata.namespace` is in `default` (where a GitOps tree puts it);
- null is absent, and so is an empty map or list (except a volume's source: `emptyDir: {}`);
  `runPolicy.suspend: false` is the CRDs' default;
- the operator's defaulting of the kind (`foundation/frameworks/`, the same code
  train-controller runs): replica counts, restart policies, the framework port,
  `cleanPodPolicy`, ...; and the restartPolicy the operator writes into each pod over its
  template's (`ExitCode` as `Never`);
- Kubernetes' defaulting of the pods each template makes (`foundation/poddefaults.py`):
  `imagePullPolicy` from the image's tag, requests from limits, a port's protocol, ...;
- quantities are compared by amount (`cpu: 90` is `"90"`, `1Gi` is `1024Mi`);
- lists Kubernetes keys by a field and whose order does nothing (volumes, volume mounts,
  ports, pull secrets, ...) are compared by that key; every other list in order (env,
  containers, init containers, args, tolerations...).

So `restartPolicy` left out and `OnFailure` written are the same job on a PyTorchJob, and
a different image is not. `differences` lists what differs, each with its field path and
both values, for a person to read.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Iterator, Optional

from compiler.importing.amounts import Amount, plain
from compiler.importing.kinds import JobKind, kind_of
from compiler.strategic import MERGE_KEYS
from compiler.targets.lowering import JOB_FIELD_QUANTITIES, POD_TEMPLATE_QUANTITIES
from foundation import jsondata, poddefaults
from schemas.marks import SOURCE

Obj = dict[str, Any]
SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "managedFields",
                   "deletionTimestamp", "deletionGracePeriodSeconds", "clusterName")
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
OWN_PREFIX = SOURCE.split("/")[0] + "/"  # trainforge.dev/
# what Flux (kustomize-controller) and Argo CD (annotation tracking, its default since 3.0)
# write on each object they sync; Argo CD's label tracking writes app.kubernetes.io/instance,
# which is a common label of its own too (Helm's), and is kept
ENGINE_MARKS = {"labels": frozenset({"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"}),
                "annotations": frozenset({"argocd.argoproj.io/tracking-id"})}
DEFAULT_NAMESPACE = "default"
# keyed lists whose order changes nothing in the pod: compared by key (the rest of strategic's
# MERGE_KEYS, containers and env, keep their order: init containers run in it, $(VAR) reads
# the variables before it)
UNORDERED = {"volumes", "volumeMounts", "ports", "imagePullSecrets", "resourceClaims", "volumeDevices",
             "hostAliases", "topologySpreadConstraints", "schedulingGates"}
VOLUME_LISTS = ("volumes",)  # their items' sources may be empty maps that mean something
ABSENT = object()  # a side of a difference where the field is not set


class Item(str):
    """A keyed list item in a difference's path: its key's value (`key` names the key)."""

    key: str = "name"

    @classmethod
    def of(cls, value: str, key: str) -> "Item":
        item = cls(value)
        item.key = key
        return item


ORDER = "(order)"  # the last part of a path whose list has its items in another order


@dataclass(frozen=True)
class Difference:
    loc: tuple[Any, ...]  # keys, indexes and `Item`s, e.g. (..., "containers", Item("pytorch"), "image")
    original: Any  # ABSENT when the original lacks it
    roundtripped: Any

    @property
    def path(self) -> str:
        """e.g. spec.pytorchReplicaSpecs.Worker.template.spec.containers[pytorch].image"""
        out = ""
        for part in self.loc:
            text = str(part)
            if isinstance(part, (int, Item)) or "." in text or "/" in text:
                out += f"[{text}]"
            elif part == ORDER:
                out += f" {ORDER}"
            else:
                out += f".{text}" if out else text
        return out

    def text(self) -> str:
        return f"{self.path}: {show(self.original)} -> {show(self.roundtripped)}"


def show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    import json

    return json.dumps(value, default=str, sort_keys=True)


# --- the canonical form ----------------------------------------------------------------------


def canonical(job: Obj, kind: Optional[JobKind] = None, *, owned: bool = False) -> Obj:
    """`job` in the form two jobs are compared in (module docstring); `job` is not changed unless
    the caller `owned` it (a job just rendered for the comparison: no copy to make)."""
    kind = kind or kind_of(job)
    out = job if owned else jsondata.copy(job)
    out.pop("status", None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        clean_metadata(meta)
        if not meta.get("namespace"):
            meta["namespace"] = DEFAULT_NAMESPACE
    if kind is not None:
        for loc in kind.unknown_fields(out):
            drop(out, loc)
        kind.default(out)
        for _, template in kind.templates(out):
            canonical_template(template, whole_pod=kind.whole_pods)
        if isinstance(out.get("spec"), dict):
            amounts(out["spec"], JOB_FIELD_QUANTITIES)
        run_policy = (out.get("spec") or {}).get("runPolicy")
        if isinstance(run_policy, dict) and run_policy.get("suspend") is False:
            del run_policy["suspend"]
    return pruned(out)


def drop(obj: Obj, loc: tuple[Any, ...]) -> None:
    """Delete the field at `loc` of `obj` (in place), if it is there."""
    node: Any = obj
    for key in loc[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(loc[-1], None)


def clean_metadata(meta: Obj) -> list[str]:
    """Drop what the API server writes and trainforge's own marks from `meta` (in place); the
    names of what was there."""
    dropped = [key for key in SERVER_METADATA if key in meta]
    for key in dropped:
        del meta[key]
    for part in ("labels", "annotations"):
        values = meta.get(part)
        if isinstance(values, dict):
            engine = ENGINE_MARKS[part]
            for key in [k for k in values if str(k).startswith(OWN_PREFIX) or k == LAST_APPLIED or k in engine]:
                dropped.append(f"{part}.{key}" if key != LAST_APPLIED else f"annotations.{LAST_APPLIED}")
                del values[key]
    return dropped


def canonical_template(template: Obj, *, whole_pod: bool = True) -> None:
    """A pod template (in place): marks dropped, the pod defaults filled (a whole pod's, not a
    patch's), quantities by amount."""
    meta = template.get("metadata")
    if isinstance(meta, dict):
        clean_metadata(meta)
    if whole_pod:
        poddefaults.fill(template)
    _amounts(template, QUANTITY_TRIE)


@functools.lru_cache(maxsize=16)
def _trie(paths: tuple[tuple[str, ...], ...]) -> dict:
    root: dict = {}
    for path in paths:
        node = root
        for key in path:
            node = node.setdefault(key, {})
        node[""] = {}
    return root


QUANTITY_TRIE = _trie(POD_TEMPLATE_QUANTITIES)


def amounts(node: Any, paths: tuple[tuple[str, ...], ...]) -> None:
    """The quantities at `paths` of `node` (in place) as `Amount`s, compared by amount."""
    _amounts(node, _trie(paths))


def _amounts(node: Any, trie: dict) -> None:
    """Quantities under `trie` as `Amount`s (in place)."""
    if isinstance(node, dict):
        for key, sub in trie.items():
            if key == "*":
                for k in list(node):
                    node[k] = _leaf(node[k], sub)
            elif key and key in node:
                node[key] = _leaf(node[key], sub)
    elif isinstance(node, list) and "*" in trie:
        for i, item in enumerate(node):
            node[i] = _leaf(item, trie["*"])


def _leaf(value: Any, trie: dict) -> Any:
    if "" in trie and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
        made = Amount(text)
        return made if isinstance(made.value, Decimal) else value
    _amounts(value, trie)
    return value


def pruned(node: Any, field: str = "", keep_empty: bool = False) -> Any:
    """A copy without nulls, empty maps and empty lists (except the empty maps of a volume,
    `keep_empty`: its source, `emptyDir: {}`), lists Kubernetes keys and does not order
    sorted by their key (`UNORDERED`). One pass: it was two and a sort, ~40% of the importer."""
    if node.__class__ is dict:
        out = {}
        for key, value in node.items():
            if value is None:
                continue
            if value.__class__ is dict or value.__class__ is list:
                value = pruned(value, key, False)
                if not value and not (keep_empty and value.__class__ is dict):
                    continue
            out[key] = value
        return out
    if node.__class__ is list:
        volumes = field in VOLUME_LISTS
        items = [pruned(item, "", volumes) if item.__class__ in (dict, list) else item for item in node]
        if field in UNORDERED:
            key = keyed(field, items)
            if key is not None:
                return sorted(items, key=lambda i: str(i[key]))
        return items
    return node


def keyed(field: str, items: Any) -> Optional[str]:
    """The key `items` of list `field` are compared by, when every item has a distinct one."""
    key = MERGE_KEYS.get(field)
    if key is None or not isinstance(items, list) or not all(isinstance(i, dict) and key in i for i in items):
        return None
    values = [str(i[key]) for i in items]
    return key if len(set(values)) == len(values) else None


# --- the differences ---------------------------------------------------------------------------


def differences(original: Obj, roundtripped: Obj, kind: Optional[JobKind] = None) -> list[Difference]:
    """What differs between two jobs, in their canonical forms; [] when they are the same job."""
    return list(diff(canonical(original, kind), canonical(roundtripped, kind)))


def diff(a: Any, b: Any, loc: tuple[Any, ...] = (), field: str = "") -> Iterator[Difference]:
    """Differences between two canonical values. Equal subtrees are skipped at C speed (`==`: a
    quantity by amount; a `true` where a `1` was cannot come from a compiled spec, whose values
    are the manifest's own)."""
    if a == b:
        return
    if isinstance(a, dict) and b is ABSENT or a is ABSENT and isinstance(b, dict):  # each leaf of a map one side lacks
        a, b = (a, {}) if b is ABSENT else ({}, b)
    if isinstance(a, dict) and isinstance(b, dict):
        for key in [*a, *(k for k in b if k not in a)]:
            yield from diff(a.get(key, ABSENT), b.get(key, ABSENT), loc + (key,), str(key))
    elif isinstance(a, list) and isinstance(b, list) and (key := keyed(field, a)) and keyed(field, b) == key:
        left, right = {str(i[key]): i for i in a}, {str(i[key]): i for i in b}
        for name in [*left, *(n for n in right if n not in left)]:
            item = loc + (Item.of(name, key),)
            if name in left and name in right:
                yield from diff(left[name], right[name], item)
            else:  # an item one side lacks is one difference, the whole item
                yield Difference(item, plain(left.get(name, ABSENT)), plain(right.get(name, ABSENT)))
        common = [n for n in left if n in right]
        if field not in UNORDERED and common != [n for n in right if n in left]:
            yield Difference(loc + (ORDER,), common, [n for n in right if n in left])
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and any(
            isinstance(i, (dict, list)) for i in a + b):
        for i, (x, y) in enumerate(zip(a, b)):
            yield from diff(x, y, loc + (i,))
    elif not same(a, b):
        yield Difference(loc, plain(a) if a is not ABSENT else a, plain(b) if b is not ABSENT else b)


def same(a: Any, b: Any) -> bool:
    """Equal leaves (or whole values): a quantity by amount, anything else by value and type (a
    YAML `true` is no `1`, an `"8"` no `8`)."""
    if a is b:
        return True
    kind = a.__class__
    if (kind is dict or kind is list) and a == b:
        return True
    if kind is Amount or b.__class__ is Amount:
        return a == b
    if kind is not b.__class__:
        return False
    if kind is dict:
        return len(a) == len(b) and all(key in b and same(value, b[key]) for key, value in a.items())
    if kind is list:
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b
