"""Malformed jobs: a field of a type the controller cannot read, found before anything reads it.

Why this exists: the API server only refuses what the CRD's schema types. The shipped CRDs
(controller/install/crds) type the job's own fields but let each replica's pod `template`
preserve unknown fields (upstream's full PodTemplateSpec schema weighs 600 KB a kind), and a
CRD installed by an older release or another tool may not type the spec at all. So a job the
server accepted can hold a container that is a string, `ports: {http: 80}`, `replicas: "2"`
or a null replica spec, and the reconcile would trip over it on every retry.

What upstream v1.9.4 shows: it decodes jobs into Go types. With its own CRDs the API server
refuses such jobs at apply time (`... in body must be of type object`); with a looser CRD
its informer cannot decode the object, and as client-go fails a list whose items do not
decode, jobs of that kind would stop reconciling. Neither is a contract to keep, so a malformed job is treated like one upstream's webhook
would have refused (controller.jobs.checks): `Failed` with reason `{Kind}FailedValidation`, a
Warning event with the same message, no retry, for every kind (MPIJob and MXJob too: unlike
their upstream checks, which report and retry, only an edit of the spec can change this
answer). Messages read like the API server's schema errors, all problems at once:
`spec.pytorchReplicaSpecs[Worker].template.spec.containers[1]: Invalid value: "string": must
be of type object`.

What is checked is what the controller reads or extends (`_TEMPLATE` below), with the type
the Pod API gives it, plus `replicas` as the int32 it is. Other template fields go to the
pod create unread, and the API server's pod validation answers for them (a `FailedCreatePod`
Warning event with its message and a retry with backoff, as upstream). A null field reads as
absent, as the API server reads a null in a typed field; a null replica spec or list item is
an error (upstream would dereference nil).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from controller.jobs.generations import PerGeneration
from controller.jobs.kinds import Kind
from schemas.quantity import read

INT32_MAX = 2**31 - 1

Check = Callable[[Any, str], Iterator[str]]


def problems(job: dict[str, Any], kind: Kind) -> list[str]:
    """Every type problem of the job's replica specs (empty: the controller can read it), kept
    per (uid, generation) (controller.jobs.generations)."""
    return _kept.get(job, lambda: _problems(job, kind), kind.name)


_kept = PerGeneration()


def _problems(job: dict[str, Any], kind: Kind) -> list[str]:
    field = kind.facts.replica_specs
    specs = (job.get("spec") or {}).get(field)
    path = f"spec.{field}"
    if specs is None:
        return []  # required by the CRD; the validation rules report it as upstream words it
    if not isinstance(specs, dict):
        return [_wrong(path, specs, "object")]
    found: list[str] = []
    for rtype, replica in specs.items():
        found.extend(_REPLICA(replica, f"{path}[{rtype}]"))
    return found


def _type_name(value: Any) -> str:
    """The JSON type, as the API server names it in `Invalid value: "<type>"`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _wrong(path: str, value: Any, want: str) -> str:
    return f'{path}: Invalid value: "{_type_name(value)}": must be of type {want}'


def _obj(fields: dict[str, Check] | None = None, *, values: Check | None = None, nullable: bool = True) -> Check:
    def check(value: Any, path: str) -> Iterator[str]:
        if value is None and nullable:
            return
        if not isinstance(value, dict):
            yield _wrong(path, value, "object")
            return
        for name, sub in (fields or {}).items():
            if name in value:
                yield from sub(value[name], f"{path}.{name}")
        if values is not None:
            for key, item in value.items():
                yield from values(item, f"{path}[{key}]")
    return check


def _list(items: Check) -> Check:
    def check(value: Any, path: str) -> Iterator[str]:
        if value is None:
            return
        if not isinstance(value, list):
            yield _wrong(path, value, "array")
            return
        for index, item in enumerate(value):
            yield from items(item, f"{path}[{index}]")
    return check


def _string(value: Any, path: str) -> Iterator[str]:
    if value is not None and not isinstance(value, str):
        yield _wrong(path, value, "string")


def _int32(value: Any, path: str) -> Iterator[str]:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        yield _wrong(path, value, "integer")
    elif not -INT32_MAX - 1 <= value <= INT32_MAX:
        yield f"{path}: Invalid value: {value}: must be less than or equal to {INT32_MAX}"


def _required_int32(value: Any, path: str) -> Iterator[str]:
    if value is None:
        yield f"{path}: Required value"
    else:
        yield from _int32(value, path)


def _quantity(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        yield _wrong(path, value, "string")
        return
    try:
        read(value)
    except ValueError:
        yield f'{path}: Invalid value: "{value}": must be a quantity such as 500m, 2 or 4Gi'


def _item(fields: dict[str, Check] | None = None) -> Check:
    return _obj(fields, nullable=False)


_STRINGS = _list(_string)
_STRING_MAP = _obj(values=_string)
_CONTAINER = _item({
    "name": _string, "image": _string, "command": _STRINGS, "args": _STRINGS,
    "env": _list(_item({"name": _string})),
    "ports": _list(_item({"name": _string, "containerPort": _required_int32})),
    "volumeMounts": _list(_item()),
    "resources": _obj({"limits": _obj(values=_quantity), "requests": _obj(values=_quantity)}),
})
_TEMPLATE = _obj({
    "metadata": _obj({"labels": _STRING_MAP, "annotations": _STRING_MAP, "finalizers": _STRINGS}),
    "spec": _obj({
        "containers": _list(_CONTAINER), "initContainers": _list(_CONTAINER), "volumes": _list(_item()),
        "restartPolicy": _string, "schedulerName": _string, "priorityClassName": _string,
        "serviceAccountName": _string,
    }),
})
_REPLICA = _obj({"replicas": _int32, "restartPolicy": _string, "template": _TEMPLATE}, nullable=False)
