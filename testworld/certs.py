"""Throw-away PKI for one test control plane.

Why it is shaped so: kube-apiserver needs a serving cert, a client CA (we
authenticate as admin with a client cert whose O=system:masters, which bypasses
RBAC the way a real cluster-admin does, while every other identity is subject
to ``--authorization-mode=RBAC``) and a service-account signing key. Everything
is ECDSA P-256: generating those keys takes microseconds, where RSA-2048 would add
noticeable time to every control plane start. Nothing here is meant to be secure
beyond a single test run on loopback.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_VALIDITY = _dt.timedelta(days=7)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


class TinyCA:
    """A self-signed CA that signs serving and client certificates."""

    def __init__(self, common_name: str = "trainforge-envtest-ca") -> None:
        self._key = _key()
        now = _dt.datetime.now(_dt.timezone.utc)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        self._name = name
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False,
                ),
                critical=True,
            )
            .sign(self._key, hashes.SHA256())
        )

    @property
    def cert_pem(self) -> bytes:
        return _cert_pem(self.cert)

    def write(self, directory: Path, stem: str = "ca") -> KeyPair:
        return KeyPair(
            cert=_write(directory / f"{stem}.crt", self.cert_pem),
            key=_write(directory / f"{stem}.key", _key_pem(self._key)),
        )

    def _issue(
        self,
        subject: x509.Name,
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName] | None = None,
    ) -> tuple[bytes, bytes]:
        key = _key()
        now = _dt.datetime.now(_dt.timezone.utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _dt.timedelta(minutes=5))
            .not_valid_after(now + _VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        return _cert_pem(cert), _key_pem(key)

    def serving_pair(self, directory: Path, stem: str, hosts: list[str]) -> KeyPair:
        """Server cert valid for the given DNS names / IP addresses."""
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])])
        cert, key = self._issue(subject, ExtendedKeyUsageOID.SERVER_AUTH, sans)
        return KeyPair(_write(directory / f"{stem}.crt", cert), _write(directory / f"{stem}.key", key))

    def client_pair(self, directory: Path, stem: str, user: str, groups: list[str]) -> KeyPair:
        """Client cert: kube-apiserver reads the user from CN and groups from O."""
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, user)]
        attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        cert, key = self._issue(x509.Name(attrs), ExtendedKeyUsageOID.CLIENT_AUTH)
        return KeyPair(_write(directory / f"{stem}.crt", cert), _write(directory / f"{stem}.key", key))


def service_account_keys(directory: Path) -> KeyPair:
    """Signing key (private) and verification key (public) for SA tokens."""
    key = _key()
    pub = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return KeyPair(cert=_write(directory / "sa.pub", pub), key=_write(directory / "sa.key", _key_pem(key)))
