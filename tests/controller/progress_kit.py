"""Helpers for the progress tests: real pod-bound tokens, raw reports, and re-signed tokens.

A training pod's token comes from the kubelet; here the API server's TokenRequest mints the
same thing without one (`serviceaccounts/<sa>/token` with `boundObjectRef` kind Pod: the
token carries the pod's name and uid, and stops being valid when that pod is deleted). An
expired token cannot be minted (TokenRequest's minimum lifetime is 10 minutes), so
`resigned` takes a real token, moves its times into the past and signs it again with the
control plane's own service-account key: a token the API server issued in every respect but
its age.
"""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from foundation.cluster.kube import Client, Resource
from foundation.progress.endpoint import AUDIENCE

SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")


def mint(client: Client, pod: dict[str, Any], *, audience: str = AUDIENCE, seconds: int = 600) -> str:
    """A token bound to `pod` for `audience`, as the kubelet's projected volume holds it."""
    meta = pod["metadata"]
    sa = pod["spec"].get("serviceAccountName") or "default"
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [audience], "expirationSeconds": seconds,
                     "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": meta["name"], "uid": meta["uid"]}}}
    answer = client.call("POST", SERVICEACCOUNTS, verb="create", namespace=meta["namespace"], name=sa, sub="token",
                         body=body)
    return answer["status"]["token"]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def claims(token: str) -> dict[str, Any]:
    return json.loads(_unb64(token.split(".")[1]))


def resigned(token: str, key_file: Path, **changes: Any) -> str:
    """`token` with its claims changed and signed again (ES256) with the API server's SA key."""
    header, payload, _ = token.split(".")
    body = {**json.loads(_unb64(payload)), **changes}
    signing_input = f"{header}.{_b64(json.dumps(body).encode())}".encode()
    key = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return f"{signing_input.decode()}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"


def expired(token: str, key_file: Path) -> str:
    now = int(time.time())
    return resigned(token, key_file, iat=now - 7200, nbf=now - 7200, exp=now - 3600)


class Poster:
    """Raw HTTPS requests to the endpoint (what the client library would send, and what it never would)."""

    def __init__(self, port: int, ca_pem: bytes) -> None:
        self.port = port
        self.context = ssl.create_default_context(cadata=ca_pem.decode())

    def post(self, path: str, token: str | None, body: Any, *, raw: bytes | None = None) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
        try:
            headers = {"Content-Type": "application/json"}
            if token is not None:
                headers["Authorization"] = f"Bearer {token}"
            conn.request("POST", path, body=raw if raw is not None else json.dumps(body).encode(), headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, (json.loads(data) if data else {})
        finally:
            conn.close()


def report(progress: int, *, eta: int | None = None, metrics: dict[str, str] | None = None,
           when: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"progressPercentage": progress,
                              "lastUpdatedTime": when or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if eta is not None:
        status["estimatedRemainingSeconds"] = eta
    if metrics:
        status["metrics"] = [{"name": k, "value": v} for k, v in metrics.items()]
    return {"trainerStatus": status}
