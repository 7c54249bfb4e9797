"""Send the admission table to a real API server and read its answers back as error sets.

Shared by the policy test (our policies on the session control plane) and the differential
test (upstream's webhook and our policies side by side in one World). Requests go through
the kubernetes client's REST layer so the answer's HTTP status, reason, message and
`Warning` headers are all seen exactly as kubectl would see them.
"""

from __future__ import annotations

import copy
import json
import re
import time
from dataclasses import dataclass
from typing import Any

import yaml
from admission_cases import PLURAL, Case

from controller.generators import admission_policies

_PREFIX = re.compile(r"^.*?(?:denied request|denied the request): ", re.S)
_SPLIT = re.compile(r", (?=(?:metadata|spec)\.)")
_UPSTREAM_MB = '"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"'
_OURS_MB = '"kueue.x-k8s.io/multikueue", "kubeflow.org/training-operator"'
VAP_WARNING = re.compile(r"^Validation failed for ValidatingAdmissionPolicy '[^']+' with binding '[^']+': ")


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    message: str
    warnings: tuple[str, ...]

    @property
    def refused(self) -> bool:
        return self.status >= 400

    def errors(self) -> list[str]:
        """The refusal's field errors, upstream's random order of supported managedBy values normalised."""
        if not self.refused:
            return []
        text = _PREFIX.sub("", self.message, count=1).replace(_UPSTREAM_MB, _OURS_MB)
        if text.startswith("[") and text.endswith("]"):
            return sorted(_SPLIT.split(text[1:-1]))
        return [text]

    def warning_texts(self) -> list[str]:
        return [VAP_WARNING.sub("", w) for w in self.warnings]


def _warnings(headers: Any) -> tuple[str, ...]:
    found = []
    for value in headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]:
        if value:  # `299 - "text"`
            found.append(value.split(" ", 2)[2].strip().strip('"').replace('\\"', '"'))
    return tuple(found)


def raw_call(api: Any, method: str, path: str, body: Any) -> tuple[int, dict[str, Any], Any]:
    """(status, JSON answer, headers) through `api`, a foundation.cluster.connection.Connection (no
    generated-client internals: their signatures change between kubernetes releases)."""
    headers = {"Accept": "application/json", "Content-Type": "application/json", **api.auth()}
    resp = api.urlopen(method, path, body=None if body is None else json.dumps(body).encode(), headers=headers,
                       timeout=60)
    try:
        raw = resp.read()
    finally:
        resp.release_conn()
    return int(resp.status), json.loads(raw) if raw else {}, resp.headers


def call(api: Any, method: str, path: str, body: Any) -> Answer:
    status, data, got = raw_call(api, method, path, body)
    return Answer(status, data.get("reason", "") if status >= 400 else "", data.get("message", ""),
                  _warnings(got) if got is not None else ())


def job_path(kind: str, namespace: str, name: str | None = None) -> str:
    base = f"/apis/kubeflow.org/v1/namespaces/{namespace}/{PLURAL[kind]}"
    return f"{base}/{name}" if name else base


def named(case: Case, index: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The case's job(s) with a name unique in the namespace (cases about names keep theirs)."""
    new, old = copy.deepcopy(case.job), copy.deepcopy(case.old)
    if new["metadata"]["name"] == "n":
        for body in (new, old):
            if body is not None:
                body["metadata"]["name"] = f"case-{index}"
    return new, old


def send(api: Any, namespace: str, case: Case, index: int) -> Answer:
    """Create the case's job; for an update, create `old` first and replace it with the job."""
    new, old = named(case, index)
    name = new["metadata"]["name"]
    if old is None:
        return call(api, "POST", job_path(case.kind, namespace), new)
    first = call(api, "POST", job_path(case.kind, namespace), old)
    assert not first.refused, f"the stored job of an update case was refused: {first.message}"
    for _ in range(10):  # upstream's operator writes the stored job's status meanwhile: 409, read again
        stored = raw_call(api, "GET", job_path(case.kind, namespace, name), None)[1]
        new["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
        answer = call(api, "PUT", job_path(case.kind, namespace, name), new)
        if answer.status != 409:
            return answer
        time.sleep(0.1)
    raise AssertionError(f"the update kept conflicting: {answer.message}")


def our_policies(namespace: str, suffix: str) -> list[dict[str, Any]]:
    """The shipped policies, with bindings renamed by `suffix` and scoped to `namespace`."""
    docs = []
    for text in admission_policies.render().values():
        for doc in yaml.safe_load_all(text):
            if not doc or doc["kind"] == "Kustomization":
                continue
            if doc["kind"] == "ValidatingAdmissionPolicyBinding":
                doc["metadata"]["name"] += suffix
                doc["spec"]["matchResources"] = {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}
            docs.append(doc)
    return docs


def wait_every_policy(api: Any, namespace: str, cases: list[Case], timeout: float = 60) -> None:
    """Each policy takes effect on its own a moment after it is written (one per kind, and
    PyTorchJob's warnings in a second one): wait for every kind's refusal, then until a case
    that only warns gets its warnings. Waiting for PyTorchJob's alone once left 17 cases of
    other kinds admitted in a full make test under load."""
    for kind in sorted({c.kind for c in cases}):
        wait_enforced(api, namespace, kind, timeout)
    deadline = time.monotonic() + timeout
    for index, case in enumerate(cases):
        if case.warnings and not case.errors and case.old is None:
            new, _ = named(case, 90_000 + index)
            while True:
                answer = call(api, "POST", job_path(case.kind, namespace), new)
                call(api, "DELETE", job_path(case.kind, namespace, new["metadata"]["name"]), None)
                if answer.warning_texts() == list(case.warnings):
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"{case.kind} warnings not given in {namespace} after {timeout}s")
                time.sleep(0.3)


def wait_enforced(api: Any, namespace: str, kind: str = "PyTorchJob", timeout: float = 30) -> None:
    """Policies take effect a moment after they are written: wait until a bad name is refused."""
    from admission_cases import job

    deadline = time.monotonic() + timeout
    probe = job(kind, "0-probe")
    while time.monotonic() < deadline:
        answer = call(api, "POST", job_path(kind, namespace), probe)
        if answer.refused:
            return
        call(api, "DELETE", job_path(kind, namespace, "0-probe"), None)
        time.sleep(0.3)
    raise AssertionError(f"admission not enforced in {namespace} after {timeout}s")
