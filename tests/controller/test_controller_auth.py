"""Every kubeconfig credential the controller supports, on the real API server
(foundation.cluster.connection): a bearer token, a token file that rotates (kubeconfig
`tokenFile` and the in-cluster service-account files), a client certificate, an exec
plugin (run again when its token expires and after a 401), `insecure-skip-tls-verify`,
`tls-server-name` and an HTTP proxy. Each test asks the server who it is
(SelfSubjectReview), so a request that merely got through as someone else would fail.

Tokens are real ServiceAccount tokens from the TokenRequest API, bound to a Secret so a
test can revoke one by deleting the Secret, as a rotated-away kubelet token expires.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from controller_kit import PODS_FIRST

from foundation.cluster import errors
from foundation.cluster.connection import AUTH_TTL
from foundation.cluster.kube import Client, Resource

# nothing here runs a Manager, so make test's second pass in upstream's order has nothing to add
pytestmark = pytest.mark.skipif(not PODS_FIRST, reason="connection tests: the order of creates does not apply")

REVIEWS = Resource("authentication.k8s.io", "v1", "selfsubjectreviews", "SelfSubjectReview", namespaced=False)
PLUGIN = """
import json, sys
token_file, runs, expires = sys.argv[1:4]
with open(runs, "a") as f:
    f.write("run\\n")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": open(token_file).read().strip(), "expirationTimestamp": expires}}))
"""


def whoami(client: Client) -> str:
    review = client.create(REVIEWS, None, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return review["status"]["userInfo"]["username"]


@pytest.fixture
def account(control_plane, namespace) -> Iterator[tuple[str, str]]:
    """A ServiceAccount `robot` in the test namespace: (namespace, its username)."""
    control_plane.kubectl("-n", namespace, "create", "serviceaccount", "robot")
    yield namespace, f"system:serviceaccount:{namespace}:robot"


def token(control_plane, namespace: str, bound_secret: str) -> str:
    """A fresh token for `robot`, valid until the Secret `bound_secret` is deleted."""
    control_plane.kubectl("-n", namespace, "create", "secret", "generic", bound_secret)
    return control_plane.kubectl("-n", namespace, "create", "token", "robot", "--duration=1h",
                                 "--bound-object-kind=Secret", f"--bound-object-name={bound_secret}").stdout.strip()


def revoke(control_plane, tmp_path: Path, namespace: str, bound_secret: str, old: str) -> None:
    """Delete the Secret `old` is bound to and wait until the server refuses `old` (it
    caches a token's authentication for a few seconds)."""
    control_plane.kubectl("-n", namespace, "delete", "secret", bound_secret)
    probe = Client.connect(kubeconfig(control_plane, tmp_path / "probe", {"token": old}))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                whoami(probe)
            except errors.ApiError as exc:
                if exc.code == 401:
                    return
                raise
            time.sleep(0.5)
        raise AssertionError(f"the server still takes the token bound to {bound_secret} after 30 s")
    finally:
        probe.close()


def kubeconfig(control_plane, tmp_path: Path, user: dict, *, cluster: dict | None = None) -> str:
    """A kubeconfig for the test server with this `user` entry (and cluster overrides)."""
    admin = json.loads(Path(control_plane.kubeconfig).read_text())
    admin["clusters"][0]["cluster"].update(cluster or {})
    admin["users"] = [{"name": "u", "user": user}]
    admin["contexts"][0]["context"]["user"] = "u"
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "kubeconfig"
    path.write_text(json.dumps(admin))
    return str(path)


def test_a_bearer_token_authenticates_as_its_service_account(control_plane, account, tmp_path) -> None:
    ns, user = account
    client = Client.connect(kubeconfig(control_plane, tmp_path, {"token": token(control_plane, ns, "t1")}))
    try:
        assert whoami(client) == user
    finally:
        client.close()


def test_a_rotated_token_file_is_read_again_after_the_old_token_is_revoked(control_plane, account, tmp_path) -> None:
    ns, user = account
    path, old = tmp_path / "token", token(control_plane, ns, "old")
    path.write_text(old)
    client = Client.connect(kubeconfig(control_plane, tmp_path, {"tokenFile": str(path)}))
    try:
        assert whoami(client) == user
        path.write_text(token(control_plane, ns, "new"))  # as the kubelet rotates a projected token
        revoke(control_plane, tmp_path, ns, "old", old)  # the old token now gets a 401
        assert whoami(client) == user
        assert client.connection.auth()["authorization"] == "Bearer " + path.read_text()
    finally:
        client.close()


def test_in_cluster_config_reads_the_service_account_files_and_their_rotation(control_plane, account, tmp_path,
                                                                              monkeypatch) -> None:
    from kubernetes.config import incluster_config

    ns, user = account
    path, ca, old = tmp_path / "token", tmp_path / "ca.crt", token(control_plane, ns, "old")
    path.write_text(old)
    ca.write_bytes(Path(control_plane.ca_file).read_bytes())
    host, port = control_plane.server.removeprefix("https://").rsplit(":", 1)
    # what a pod sees: the service's address in its environment, the files mounted where the loader looks
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(path))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    client = Client.connect()
    try:
        assert whoami(client) == user
        path.write_text(token(control_plane, ns, "new"))
        revoke(control_plane, tmp_path, ns, "old", old)
        assert whoami(client) == user  # the in-cluster loader re-reads only every minute: this is the 401's doing
        assert client.connection.auth()["authorization"] == "bearer " + path.read_text()
    finally:
        client.close()


def test_a_client_certificate_authenticates_as_its_common_name(control_plane) -> None:
    client = Client.connect(str(control_plane.add_user("cert-user", ["team-a"])))
    try:
        assert whoami(client) == "cert-user"
    finally:
        client.close()


def exec_user(tmp_path: Path, token_file: Path, expires: datetime) -> tuple[dict, Path]:
    script, runs = tmp_path / "plugin.py", tmp_path / "runs"
    script.write_text(PLUGIN)
    runs.touch()
    stamp = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                     "args": [str(script), str(token_file), str(runs), stamp]}}, runs


def test_an_exec_plugin_token_is_kept_until_it_expires_and_fetched_again_after_a_401(control_plane, account,
                                                                                    tmp_path) -> None:
    ns, user = account
    source, old = tmp_path / "plugin-token", token(control_plane, ns, "old")
    source.write_text(old)
    exec_config, runs = exec_user(tmp_path, source, datetime.now(timezone.utc) + timedelta(hours=1))
    client = Client.connect(kubeconfig(control_plane, tmp_path, exec_config))
    try:
        assert [whoami(client) for _ in range(3)] == [user] * 3
        assert runs.read_text().count("run") == 1  # not expired: the plugin's token is reused
        source.write_text(token(control_plane, ns, "new"))
        revoke(control_plane, tmp_path, ns, "old", old)
        assert whoami(client) == user  # the 401 ran the plugin again
        assert runs.read_text().count("run") == 2
    finally:
        client.close()


def test_an_exec_plugin_token_about_to_expire_is_fetched_again_before_the_request(control_plane, account,
                                                                                 tmp_path) -> None:
    ns, user = account
    source = tmp_path / "plugin-token"
    source.write_text(token(control_plane, ns, "t1"))
    # inside the loader's skew (5 minutes): expired as far as it is concerned
    exec_config, runs = exec_user(tmp_path, source, datetime.now(timezone.utc) + timedelta(seconds=30))
    client = Client.connect(kubeconfig(control_plane, tmp_path, exec_config))
    try:
        before = runs.read_text().count("run")
        for _ in range(2):
            time.sleep(AUTH_TTL + 0.1)  # past the second a credential header is reused
            assert whoami(client) == user
        assert runs.read_text().count("run") == before + 2
    finally:
        client.close()


def test_insecure_skip_tls_verify_connects_without_a_ca_and_verification_is_on_otherwise(control_plane,
                                                                                          tmp_path) -> None:
    admin = json.loads(Path(control_plane.kubeconfig).read_text())
    user = admin["users"][0]["user"]
    del admin["clusters"][0]["cluster"]["certificate-authority-data"]
    insecure = kubeconfig(control_plane, tmp_path, user, cluster={"insecure-skip-tls-verify": True})
    client = Client.connect(insecure)
    try:
        assert whoami(client) == admin["users"][0]["name"]
    finally:
        client.close()
    cfg = json.loads(Path(insecure).read_text())
    del cfg["clusters"][0]["cluster"]["insecure-skip-tls-verify"], cfg["clusters"][0]["cluster"]["certificate-authority-data"]
    Path(insecure).write_text(json.dumps(cfg))
    client = Client.connect(insecure)  # the system's CAs do not know the test CA
    try:
        with pytest.raises(errors.Retryable, match="CERTIFICATE_VERIFY_FAILED"):
            whoami(client)
    finally:
        client.close()


@pytest.mark.parametrize("name, works", [("kubernetes.default.svc", True), ("not-the-server.example", False)],
                         ids=["a name the certificate carries works", "a name it does not carry is refused"])
def test_tls_server_name_is_the_name_the_certificate_must_carry(control_plane, tmp_path, name, works) -> None:
    admin = json.loads(Path(control_plane.kubeconfig).read_text())
    client = Client.connect(kubeconfig(control_plane, tmp_path, admin["users"][0]["user"],
                                       cluster={"tls-server-name": name}))
    try:
        if works:
            assert whoami(client) == admin["users"][0]["name"]
        else:
            with pytest.raises(errors.Retryable, match="not-the-server.example|doesn't match|Hostname mismatch"):
                whoami(client)
    finally:
        client.close()


class _Tunnel(socketserver.StreamRequestHandler):
    """An HTTP CONNECT proxy: enough of one to prove requests go through `proxy-url`."""

    seen: list[str] = []

    def handle(self) -> None:
        target = self.rfile.readline().decode().split()[1]
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
            pass
        _Tunnel.seen.append(target)
        host, port = target.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as upstream:
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            self.wfile.flush()
            ends = [self.connection, upstream]
            while True:
                ready, _, _ = select.select(ends, [], [], 10)
                if not ready:
                    return
                for end in ready:
                    data = end.recv(65536)
                    if not data:
                        return
                    (upstream if end is self.connection else self.connection).sendall(data)


@pytest.fixture
def tunnel() -> Iterator[str]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Tunnel)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Tunnel.seen = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def loader_reads_proxy_url() -> bool:
    from kubernetes.config import (
        kube_config,  # the loader reads proxy-url from kubernetes 37 on
    )

    return "proxy-url" in Path(kube_config.__file__).read_text()


@pytest.mark.parametrize("where", ["kubeconfig", "environment"],
                         ids=["the kubeconfig's proxy-url", "HTTPS_PROXY in the environment"])
def test_requests_go_through_the_proxy(control_plane, tmp_path, tunnel, monkeypatch, where) -> None:
    if where == "kubeconfig" and not loader_reads_proxy_url():
        pytest.skip("this kubernetes package's kubeconfig loader ignores proxy-url (it reads it from 37.0 on)")
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    if where == "environment":
        monkeypatch.setenv("HTTPS_PROXY", tunnel)
    admin = json.loads(Path(control_plane.kubeconfig).read_text())
    cluster = {"proxy-url": tunnel} if where == "kubeconfig" else {}
    client = Client.connect(kubeconfig(control_plane, tmp_path, admin["users"][0]["user"], cluster=cluster))
    try:
        assert whoami(client) == admin["users"][0]["name"]
        assert _Tunnel.seen == [control_plane.server.removeprefix("https://")]
    finally:
        client.close()


def test_no_proxy_keeps_the_server_off_the_proxy(control_plane, tmp_path, tunnel, monkeypatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", tunnel)
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    admin = json.loads(Path(control_plane.kubeconfig).read_text())
    client = Client.connect(kubeconfig(control_plane, tmp_path, admin["users"][0]["user"]))
    try:
        assert whoami(client) == admin["users"][0]["name"]
        assert _Tunnel.seen == []
    finally:
        client.close()


@pytest.mark.parametrize("text", ["apiVersion: v1\nkind: Config\nclusters: []\n", "users: [unclosed\n"],
                         ids=["a kubeconfig without a current context", "a kubeconfig that is not YAML"])
def test_a_kubeconfig_that_cannot_be_loaded_is_one_line_and_exit_1(tmp_path, text) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "controller", "--kubeconfig", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: cannot load the cluster config: ") and proc.stderr.count("\n") == 1, proc.stderr
