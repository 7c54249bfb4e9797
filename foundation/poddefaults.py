"""Kubernetes' own defaulting of a pod, as far as it follows from the pod template alone.

The API server defaults every pod it creates (core/v1 `SetDefaults_*`, Kubernetes v1.32), and
the Training Operator's CRDs add one schema default of their own (a port's `protocol: TCP`).
So a template that writes `imagePullPolicy: IfNotPresent` on a tagged image, or limits without
requests, makes the same pods as one that leaves them out; `kubectl get -o yaml` prints the
filled-in values. The importer's round trip (`compiler/importing/sameness.py`) compares two
jobs as the pods their templates make, so it fills both sides in with `fill`; and what it
writes into a spec it writes without them (`strip`), as a person would.

Each default is one small rule on one object (pod spec, container, port, volume, probe,
field reference) that can fill the default in or take it out again when the value is the
default. Only defaults that depend on nothing outside the template are here: the service
account admission plugin's token volume or a LimitRange's requests depend on the namespace,
so a template never shows them.
"""

from __future__ import annotations

from typing import Any, Iterator

Obj = dict[str, Any]

POD_SPEC = {
    "dnsPolicy": "ClusterFirst",
    "schedulerName": "default-scheduler",
    "terminationGracePeriodSeconds": 30,
    "enableServiceLinks": True,
    "hostNetwork": False,
    "hostPID": False,
    "hostIPC": False,
}
CONTAINER = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "stdin": False,
    "stdinOnce": False,
    "tty": False,
}
PORT = {"protocol": "TCP"}
PROBE = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
HTTP_GET = {"path": "/", "scheme": "HTTP"}
FIELD_REF = {"apiVersion": "v1"}
MOUNT = {"readOnly": False}
FILE_MODE = 420  # 0644: secret, configMap, downwardAPI and projected volumes
MODE_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
CONTAINER_LISTS = ("initContainers", "containers")
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def image_pull_policy(image: Any) -> str:
    """`Always` for an image without a tag or tagged `latest` (and no digest), else `IfNotPresent`."""
    text = str(image or "")
    if "@" in text:
        return "IfNotPresent"
    name = text.rsplit("/", 1)[-1]
    tag = name.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _apply(obj: Obj, defaults: Obj, fill: bool) -> None:
    """Fill the defaults in (a `false` one is left out instead: absent is how it reads), or take
    out each value that is its default."""
    for key, value in defaults.items():
        if fill and value is not False:
            if obj.get(key) is None:
                obj[key] = value if not isinstance(value, dict) else dict(value)
        elif key in obj and obj[key] == value and type(obj[key]) is type(value):
            del obj[key]


def _dicts(value: Any) -> Iterator[Obj]:
    return (item for item in (value if isinstance(value, list) else []) if isinstance(item, dict))


def _container(container: Obj, fill: bool, host_network: bool) -> None:
    _apply(container, CONTAINER, fill)
    _apply(container, {"imagePullPolicy": image_pull_policy(container.get("image"))}, fill)
    for port in _dicts(container.get("ports")):
        _apply(port, PORT, fill)
        if host_network and "containerPort" in port:  # hostNetwork pods listen on the node's ports
            _apply(port, {"hostPort": port["containerPort"]}, fill)
    for mount in _dicts(container.get("volumeMounts")):
        _apply(mount, MOUNT, fill)
    for env in _dicts(container.get("env")):
        field = (env.get("valueFrom") or {}).get("fieldRef")
        if isinstance(field, dict):
            _apply(field, FIELD_REF, fill)
    for name in PROBES:
        probe = container.get(name)
        if isinstance(probe, dict):
            _apply(probe, PROBE, fill)
            if isinstance(probe.get("httpGet"), dict):
                _apply(probe["httpGet"], HTTP_GET, fill)
    resources = container.get("resources")
    if fill and isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        # a resource with a limit and no request asks for the limit (SetDefaults_Pod)
        if not isinstance(resources.get("requests"), dict):
            resources["requests"] = {}
        for key, limit in resources["limits"].items():
            resources["requests"].setdefault(key, limit)


def _volume(volume: Obj, fill: bool) -> None:
    for source in MODE_SOURCES:
        if isinstance(volume.get(source), dict):
            _apply(volume[source], {"defaultMode": FILE_MODE}, fill)
    host_path = volume.get("hostPath")
    if isinstance(host_path, dict):
        _apply(host_path, {"type": ""}, fill)
    for key in ("persistentVolumeClaim",):
        if isinstance(volume.get(key), dict):
            _apply(volume[key], {"readOnly": False}, fill)


def _pod_spec(spec: Obj, fill: bool) -> None:
    _apply(spec, POD_SPEC, fill)
    host_network = bool(spec.get("hostNetwork"))
    for kind in CONTAINER_LISTS:
        for container in _dicts(spec.get(kind)):
            _container(container, fill, host_network)
    for volume in _dicts(spec.get("volumes")):
        _volume(volume, fill)


def fill(template: Obj) -> Obj:
    """`template` (a PodTemplateSpec, changed in place and returned) with the defaults filled in."""
    spec = template.get("spec")
    if isinstance(spec, dict):
        _pod_spec(spec, True)
    return template


def strip(template: Obj) -> Obj:
    """`template` (changed in place and returned) without the values that are the defaults: the
    template as a person writes it. Requests equal to their limits stay (writing both is common)."""
    spec = template.get("spec")
    if isinstance(spec, dict):
        _pod_spec(spec, False)
    return template
