"""Admission webhooks of engines run off-cluster: served on 127.0.0.1, trusted through the world's CA.

Why it is shaped so: JobSet, Kubeflow Trainer and Kueue ship their webhook
configurations for an in-cluster Service (``clientConfig.service``) and rotate their own
certificates. Here each engine is a process on loopback, so the same configurations are
installed with every ``clientConfig`` turned into ``url: https://127.0.0.1:PORT<path>``
plus a ``caBundle`` holding the World's CA (``ControlPlane.ca_file``), the engine serves
a certificate that CA signed (``serving_certs``), and its own rotation is off. The
configurations come from the engine's module (rendered with ``kubectl kustomize``, so the
module's own patches, e.g. objectSelectors, apply), never written here. Timeouts are
raised to the API's maximum: on a loaded 2-core machine a webhook's first answers can
take seconds, and a timed-out call fails the request (failurePolicy Fail).

API: ``serving_certs(world, directory)`` writes ``tls.crt``/``tls.key``;
``rendered(world, folder)`` the documents ``kubectl kustomize folder`` prints;
``on_loopback(config, port, ca, name=)`` one configuration rewritten;
``apply(world, docs)`` server-side applies them.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from .certs import KeyPair
from .part import LOOPBACK

if TYPE_CHECKING:
    from .world import World

MAX_TIMEOUT = 30  # admissionregistration/v1 allows 1..30 seconds (default 10)
KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def serving_certs(world: World, directory: Path) -> KeyPair:
    """``directory/tls.crt`` and ``tls.key`` for 127.0.0.1, signed by the world's CA
    (controller-runtime's webhook server reads exactly these names from its cert dir)."""
    directory.mkdir(parents=True, exist_ok=True)
    return world.plane.serving_pair(directory, "tls")


def ca_bundle(world: World) -> bytes:
    assert world.plane.ca_file is not None
    return world.plane.ca_file.read_bytes()


def rendered(world: World, folder: Path) -> list[dict[str, Any]]:
    """The objects of a kustomization folder, as ``kubectl kustomize`` renders them."""
    return [d for d in yaml.safe_load_all(world.kubectl("kustomize", str(folder)).stdout) if d]


def on_loopback(config: dict[str, Any], port: int, ca: bytes, *, name: str | None = None) -> dict[str, Any]:
    """``config`` (a webhook configuration) calling ``https://127.0.0.1:port`` at each
    webhook's service path, trusting ``ca``, with the longest timeout; renamed if ``name``."""
    out = copy.deepcopy(config)
    out["metadata"] = {"name": name or config["metadata"]["name"]}
    for hook in out.get("webhooks") or []:
        path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path") or "/"
        hook["clientConfig"] = {"url": f"https://{LOOPBACK}:{port}{path}",
                                "caBundle": base64.b64encode(ca).decode()}
        hook["timeoutSeconds"] = MAX_TIMEOUT
    return out


def apply(world: World, docs: list[dict[str, Any]], manager: str = "testworld") -> None:
    """Server-side apply ``docs`` as one List."""
    world.kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={manager}", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
