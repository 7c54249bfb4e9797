"""The progress wire protocol: Kubeflow Trainer v2.3's TrainJobStatus request, its names and limits.

Why the Trainer's and not one of our own: the Hugging Face `Trainer` (transformers >= 4.57)
and the Kubeflow SDK already report to `KUBEFLOW_TRAINER_SERVER_URL` when they find it, so a
server that speaks the same protocol under the same environment gets their reports for free,
and training code written for one target runs unchanged on the other. The facts come from
Trainer v2.3.0 (`pkg/statusserver`, the `TrainJobStatus` runtime plugin and the TrainJob CRD):

- the request: `POST` with `Authorization: Bearer <token>` and a JSON body
  `{"trainerStatus": {"progressPercentage", "estimatedRemainingSeconds", "metrics",
  "lastUpdatedTime"}}`; no `trainerStatus` is a no-op answered 200;
- the limits: the body at most 64 KiB (413 past it); `progressPercentage` an integer 0-100,
  `estimatedRemainingSeconds` an integer >= 0 (int32), at most 256 metrics, each a `name` and
  a string `value` of 1-64 characters; `lastUpdatedTime` required (the CRD's CEL rule);
- bad input is answered 422 (`Invalid`) with a `metav1.Status` body, as the Trainer answers it.

`validate` applies exactly these rules (a JSON number where the Go struct has a string, or
`45.0` where it has an int32, fails Go's decoder, so it fails here) and returns the status
object to store, or the reason it cannot.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timezone
from typing import Any

from foundation.runs.clock import parse_time

# The environment the Trainer's TrainJobStatus plugin gives each trainer container; the
# compiler gives train-controller's jobs the same names (foundation.progress.endpoint).
ENV_URL = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN = "KUBEFLOW_TRAINER_SERVER_TOKEN"
MOUNT_PATH = "/var/run/secrets/kubeflow/trainer"
TOKEN_FILE, CA_FILE = "token", "ca.crt"
VOLUME_NAME = "kubeflow-trainer-token"
TOKEN_EXPIRY_SECONDS = 3600  # the kubelet rotates the projected token at 80% of this

TRAINER_STATUS = "trainerStatus"  # the request's key and the job status's field, on both targets
MAX_BODY_BYTES = 1 << 16
MAX_METRICS = 256
MAX_METRIC_CHARS = 64
INT32_MAX = 2**31 - 1


class InvalidReport(ValueError):
    """A report the Trainer would refuse: the message names the field and says what is wrong."""


@dataclass(frozen=True)
class Report:
    """One accepted report: the `trainerStatus` object to store (None: a no-op report) and when
    it was observed, to the microsecond the sender gave (the stored time keeps whole seconds,
    too coarse to order reports of several ranks within one second)."""

    status: dict[str, Any] | None
    observed: float = 0.0


def validate(body: bytes) -> Report:
    """The report in `body`, checked as the Trainer checks it; raises InvalidReport."""
    if len(body) > MAX_BODY_BYTES:
        raise InvalidReport(f"the report is {len(body)} bytes; at most {MAX_BODY_BYTES} are accepted")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidReport(f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidReport("the body must be a JSON object with a trainerStatus object")
    raw = data.get(TRAINER_STATUS)
    if raw is None:
        return Report(None)
    if not isinstance(raw, dict):
        raise InvalidReport(f"{TRAINER_STATUS}: must be an object")
    out: dict[str, Any] = {}
    for field, top in (("progressPercentage", 100), ("estimatedRemainingSeconds", INT32_MAX)):
        value = raw.get(field)
        if value is None:
            continue
        if not _is_int(value) or not 0 <= value <= top:
            raise InvalidReport(f"{TRAINER_STATUS}.{field}: must be an integer from 0 to {top}, got {_shown(value)}")
        out[field] = value
    metrics = _metrics(raw.get("metrics"))
    if metrics:
        out["metrics"] = metrics
    when = raw.get("lastUpdatedTime")
    parsed = parse_time(when) if isinstance(when, str) else None
    if parsed is None or "T" not in str(when):
        raise InvalidReport(f"{TRAINER_STATUS}.lastUpdatedTime: required, an RFC 3339 time such as "
                            f"2026-01-23T10:30:45Z, got {_shown(when)}")
    # stored as metav1.Time writes it: UTC, whole seconds
    out["lastUpdatedTime"] = parsed.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Report(out, parsed.timestamp())


def _metrics(raw: Any) -> list[dict[str, str]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InvalidReport(f"{TRAINER_STATUS}.metrics: must be a list of {{name, value}} objects")
    if len(raw) > MAX_METRICS:
        raise InvalidReport(f"{TRAINER_STATUS}.metrics: {len(raw)} metrics; at most {MAX_METRICS} are accepted")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise InvalidReport(f"{TRAINER_STATUS}.metrics[{i}]: must be an object with name and value")
        for key in ("name", "value"):
            value = item.get(key)
            if not isinstance(value, str):
                raise InvalidReport(f"{TRAINER_STATUS}.metrics[{i}].{key}: must be a string "
                                    f"(values are sent as strings, e.g. \"0.25\"), got {_shown(value)}")
            if not 1 <= len(value) <= MAX_METRIC_CHARS:
                raise InvalidReport(f"{TRAINER_STATUS}.metrics[{i}].{key}: must be 1 to {MAX_METRIC_CHARS} "
                                    f"characters, got {len(value)}")
        out.append({"name": item["name"], "value": item["value"]})
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def carry_progress(status: dict[str, Any], current: dict[str, Any]) -> None:
    """Give a status the controller is about to write the progress the job has now: the field
    is the progress endpoint's, and a pass's status (held, or computed from an older copy)
    must never take back what a report wrote since."""
    if current.get(TRAINER_STATUS) is None:
        status.pop(TRAINER_STATUS, None)
    else:
        status[TRAINER_STATUS] = current[TRAINER_STATUS]


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    """A `metav1.Status` failure, the body of every refusal (the Trainer's and the API server's shape)."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
