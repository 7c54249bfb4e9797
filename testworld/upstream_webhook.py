"""The upstream operator serving its real validating webhook to the world's API server.

Where it sits: `tests/admission` sends one table of jobs to upstream's webhook (v1.9.4) and
to trainforge's ValidatingAdmissionPolicies on one API server, each in its own namespace,
and requires the same refusals. This part is `testworld.upstream.Operator` plus what a
cluster install gives the webhook: a Service the API server can reach and a certificate for
it. Here the API server calls `https://127.0.0.1:PORT/validate-...` directly.

Why it is shaped so:
- The operator's certificate rotator (open-policy-agent/cert-controller) keeps whatever it
  finds in its Secret when that is valid for 90 more days: a CA whose certificate names
  `training-operator-ca` and a serving certificate for `training-operator.<ns>.svc`. So we
  put our own there before it starts, a serving certificate that also names 127.0.0.1, and
  the base class copies it into the operator's cert dir as a kubelet would.
- The ValidatingWebhookConfiguration is the module's own (`manifests/base/webhook/`, the
  kustomize patch's name), with each `clientConfig.service` turned into that URL plus our
  CA and a `namespaceSelector` limiting it to the operator's namespace, so no other test's
  jobs ever reach it. The rotator writes the same CA into it again.
- One per World: the configuration's name is a constant of the operator.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from . import gobuild
from .part import PartError, free_port
from .upstream import (
    BUILD,
    CERT_SECRET,
    NAMESPACES,
    PRIMARY,
    SECRETS,
    WEBHOOK_CONFIG,
    WEBHOOKS,
    Operator,
    _create,
)

CA_NAME = "training-operator-ca"  # pkg/cert: the rotator checks the CA certificate for this name
SERVICE = "training-operator"  # --webhook-service-name default
VALIDITY = dt.timedelta(days=365)  # the rotator renews anything valid for less than 90 days


def _rsa() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: rsa.RSAPrivateKey) -> bytes:  # PKCS#1, as the rotator writes and reads its own
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())


def certificates(dns_name: str, host: str = "127.0.0.1") -> dict[str, bytes]:
    """The Secret's four entries: a CA the rotator accepts and a serving pair for `dns_name` and `host`."""
    now = dt.datetime.now(dt.timezone.utc)
    ca_key, key = _rsa(), _rsa()
    ca_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_NAME),
                            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "training-operator")])
    ca = (x509.CertificateBuilder().subject_name(ca_subject).issuer_name(ca_subject)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + VALIDITY)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=True,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectAlternativeName([x509.DNSName(CA_NAME)]), critical=False)
          .sign(ca_key, hashes.SHA256()))
    serving = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, dns_name)]))
               .issuer_name(ca_subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + VALIDITY)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
               .add_extension(x509.SubjectAlternativeName([x509.DNSName(dns_name),
                                                           x509.IPAddress(ipaddress.ip_address(host))]), critical=False)
               .sign(ca_key, hashes.SHA256()))
    return {"ca.crt": _pem(ca), "ca.key": _key_pem(ca_key), "tls.crt": _pem(serving), "tls.key": _key_pem(key)}


def module_webhooks(version: str = PRIMARY) -> list[dict[str, Any]]:
    """The webhooks of the module's manifests/base/webhook/manifests.yaml (from the Go module cache)."""
    work = Path(tempfile.mkdtemp(prefix="trainforge-webhook-manifests-"))
    try:
        info = gobuild.module_info(BUILD.module, version, work, gobuild.go_env(), work / "download.log")
    except gobuild.BuildError as err:  # GoMissing included
        raise PartError(f"upstream webhook manifests: {err}") from err
    path = Path(info["Dir"]) / "manifests" / "base" / "webhook" / "manifests.yaml"
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    return [hook for doc in docs if doc.get("kind") == "ValidatingWebhookConfiguration" for hook in doc["webhooks"]]


def configuration(webhooks: list[dict[str, Any]], port: int, ca: bytes, namespace: str) -> dict[str, Any]:
    """The module's webhooks called at 127.0.0.1:`port`, trusted through `ca`, for `namespace` only."""
    hooks = []
    for hook in webhooks:
        hook = dict(hook)
        path = hook["clientConfig"]["service"]["path"]
        hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": base64.b64encode(ca).decode()}
        hook["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
        hooks.append(hook)
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOK_CONFIG}, "webhooks": hooks}


class WebhookOperator(Operator):
    """`Operator(namespace)` whose validating webhook the API server calls for jobs in `namespace`."""

    def __init__(self, namespace: str, *, version: str = PRIMARY, **kwargs: Any) -> None:
        self.port = free_port()
        extra = [*kwargs.pop("extra_args", ()), f"--webhook-server-port={self.port}"]  # the last one wins
        kwargs.setdefault("system_namespace", "training-operator-webhook")
        super().__init__(namespace, version=version, extra_args=extra, **kwargs)
        self.name = f"{self.name}-webhook"

    def prepare(self) -> None:
        assert self.client is not None
        secret = certificates(f"{SERVICE}.{self.system_namespace}.svc")
        for name in (self.system_namespace, self.namespace):
            _create(self.client, NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        _create(self.client, SECRETS, self.system_namespace, {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": CERT_SECRET},
            "data": {k: base64.b64encode(v).decode() for k, v in secret.items()}})
        _create(self.client, WEBHOOKS, None,
                configuration(module_webhooks(self.release.version), self.port, secret["ca.crt"], self.namespace))
        super().prepare()  # the objects exist now; it creates nothing twice

    def after(self, world: Any) -> None:
        super().after(world)
        self.wait(self._serving, "the webhook served on 127.0.0.1", timeout=60)

    def _serving(self) -> bool:
        """The webhook answers: a job with a name upstream refuses is refused in our namespace."""
        assert self.client is not None
        from foundation.cluster import errors
        from foundation.cluster.kube import Resource

        jobs = Resource("kubeflow.org", "v1", "jaxjobs", "JAXJob")
        probe = {"apiVersion": "kubeflow.org/v1", "kind": "JAXJob", "metadata": {"name": "0-webhook-probe"},
                 "spec": {"jaxReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
                     {"name": "jax", "image": "example.com/probe:1"}]}}}}}}
        try:
            self.client.create(jobs, self.namespace, probe)
        except errors.ApiError as err:
            return "denied the request" in str(err)
        self.client.delete(jobs, self.namespace, "0-webhook-probe")
        time.sleep(0.2)
        return False
