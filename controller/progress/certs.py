"""The progress server's TLS: a serving certificate, and its CA where the pods can read it.

Pods verify the server with the CA certificate the compiler mounts from the ConfigMap
`train-controller-progress-ca` of their namespace (foundation.progress.endpoint), so:

- **Serving certificate.** From `--progress-cert-dir` when it holds `tls.crt` and `tls.key`
  (cert-manager or your own PKI; then put your CA in the ConfigMaps yourself, or let the
  controller copy the dir's `ca.crt`), else self-managed: a CA and a certificate for the
  Service's DNS names (and 127.0.0.1/localhost) kept in the Secret `SECRET` of the
  controller's namespace. The first replica creates it and every replica and later leader
  reads the same one, so the CA the pods hold stays valid across restarts and leader
  changes. ECDSA P-256: generated in milliseconds; CA and certificate last 10 years, and
  nothing renews them (no write the install would have to grant and no test could reach):
  to rotate, delete the Secret and restart the controller (the pods' CA ConfigMaps follow,
  and the kubelet refreshes their projected copy within a minute or so).
- **CA ConfigMaps.** The leader writes the CA certificate into `CA_CONFIGMAP` in each
  namespace it sees a job in (created, or updated when it differs), once per namespace per
  process, labelled so it is recognisably the controller's.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import logging
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from foundation.cluster import errors
from foundation.cluster.kube import CONFIGMAPS, Client, Resource
from foundation.progress.endpoint import CA_CONFIGMAP, CA_KEY, SERVICE

log = logging.getLogger(__name__)

SECRETS = Resource("", "v1", "secrets", "Secret")
SECRET = "train-controller-progress-certs"
LABELS = {"app.kubernetes.io/name": "train-controller", "app.kubernetes.io/component": "progress"}
VALIDITY = dt.timedelta(days=3650)


@dataclass(frozen=True)
class ServingCert:
    cert_pem: bytes
    key_pem: bytes
    ca_pem: bytes

    def context(self) -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory() as tmp:  # ssl loads a chain from files only
            cert, key = Path(tmp) / "tls.crt", Path(tmp) / "tls.key"
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            ctx.load_cert_chain(cert, key)
        return ctx


def dns_names(namespace: str, service: str = SERVICE) -> list[str]:
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local", "localhost"]


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


def new_ca() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(_name("train-controller-progress-ca"))
            .issuer_name(_name("train-controller-progress-ca")).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def sign(ca_pem: bytes, ca_key_pem: bytes, names: list[str]) -> tuple[bytes, bytes]:
    ca = x509.load_pem_x509_certificate(ca_pem)
    ca_key = serialization.load_pem_private_key(ca_key_pem, password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.timezone.utc)
    sans = [x509.DNSName(n) for n in names] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + VALIDITY)
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))  # type: ignore[arg-type]
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def from_dir(path: Path) -> ServingCert | None:
    cert, key, ca = path / "tls.crt", path / "tls.key", path / "ca.crt"
    if not (cert.is_file() and key.is_file()):
        return None
    return ServingCert(cert.read_bytes(), key.read_bytes(), ca.read_bytes() if ca.is_file() else cert.read_bytes())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _secret_body(namespace: str, ca: tuple[bytes, bytes], names: list[str]) -> dict:
    cert, key = sign(*ca, names)
    return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
            "metadata": {"name": SECRET, "namespace": namespace, "labels": LABELS},
            "data": {"tls.crt": _b64(cert), "tls.key": _b64(key), "ca.crt": _b64(ca[0]), "ca.key": _b64(ca[1])}}


def self_managed(client: Client, namespace: str) -> ServingCert:
    """The Secret's certificate: created when absent (one replica wins the create), else read."""
    names = dns_names(namespace)
    try:
        secret = client.get(SECRETS, namespace, SECRET)
    except errors.NotFound:
        try:
            secret = client.create(SECRETS, namespace, _secret_body(namespace, new_ca(), names))
            log.info("created the progress server's CA and certificate in Secret %s/%s", namespace, SECRET)
        except errors.AlreadyExists:  # the other replica created it first
            secret = client.get(SECRETS, namespace, SECRET)
    data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    return ServingCert(data["tls.crt"], data["tls.key"], data["ca.crt"])


def publish_ca(client: Client, namespace: str, ca_pem: bytes) -> None:
    """Make `CA_CONFIGMAP` in `namespace` hold `ca_pem` (create, or update when it differs)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CA_CONFIGMAP, "namespace": namespace, "labels": LABELS},
            "data": {CA_KEY: ca_pem.decode()}}
    try:
        client.create(CONFIGMAPS, namespace, body, answer=False)
        return
    except errors.AlreadyExists:
        pass
    current = client.get(CONFIGMAPS, namespace, CA_CONFIGMAP)
    if (current.get("data") or {}).get(CA_KEY) != body["data"][CA_KEY]:
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        client.update(CONFIGMAPS, body)
