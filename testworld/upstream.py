"""The upstream Go operator (kubeflow/training-operator) as a second controller baseline.

Built from its Go module through the module proxy (`go install
github.com/kubeflow/training-operator/cmd/training-operator.v1@v1.8.1`, the last
release of the module), then run against the benchmark's API server for the same
workload as ours: PyTorchJob only, one namespace, as many worker threads as our
workers. Its webhook certificate controller holds the job controllers back until it
has filled its Secret and its ValidatingWebhookConfiguration and seen the certificate
on disk, so both objects are created empty first and the certificate is copied out of
the Secret as a kubelet would mount it; with no webhook in that configuration, none is
ever called.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

from bench import kube_tools as kt
from controller import errors
from controller.kube import Client, Resource

MODULE = "github.com/kubeflow/training-operator/cmd/training-operator.v1"
VERSION = "v1.8.1"
OPERATOR_NAMESPACE = "kubeflow"
CERT_SECRET = "training-operator-webhook-cert"
WEBHOOK_CONFIG = "validator.training-operator.kubeflow.org"
WEBHOOKS = Resource("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                    "ValidatingWebhookConfiguration", namespaced=False)
CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")  # fixed in the operator (pkg/cert)
READY = re.compile(rb"Starting workers[^\n]*pytorchjob-controller")


CACHE = Path.home() / ".cache" / "trainforge" / "upstream" / VERSION


def build(dest: Path = CACHE) -> Path:
    """The operator binary in `dest`, built with `go install` unless it is there already."""
    binary = dest / "training-operator.v1"
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("go is not installed: cannot build the upstream operator")
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run([go, "install", f"{MODULE}@{VERSION}"], check=True, env={**os.environ, "GOBIN": str(dest)},
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=1800)
    return binary


def _mount_certs(client: Client) -> bool:
    """Play the kubelet's secret volume: the rotator waits for its certs to appear on disk."""
    data = client.get(kt.SECRETS, OPERATOR_NAMESPACE, CERT_SECRET).get("data") or {}
    if "tls.crt" not in data or "tls.key" not in data:
        return False
    CERT_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("tls.key", "tls.crt"):  # the certificate last: its presence is the signal
        (CERT_DIR / name).write_bytes(base64.b64decode(data[name]))
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Operator:
    """One running upstream operator watching `namespace`."""

    def __init__(self, binary: Path, kubeconfig: Path, client: Client, namespace: str, *, threads: int,
                 log: Path, ready_timeout: float = 120.0) -> None:
        kt.create_namespace(client, OPERATOR_NAMESPACE, exist_ok=True)
        for res, ns, body in (
            (kt.SECRETS, OPERATOR_NAMESPACE, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CERT_SECRET}}),
            (WEBHOOKS, None, {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                              "metadata": {"name": WEBHOOK_CONFIG}}),  # no webhooks in it: none is ever called
        ):
            try:
                client.create(res, ns, body)
            except errors.AlreadyExists:
                pass
        self.log = log
        self._out = open(log, "wb")
        argv = [str(binary), f"--namespace={namespace}", "--enable-scheme=pytorchjob",
                f"--controller-threads={threads}", "--metrics-bind-address=0", "--health-probe-bind-address=0",
                f"--webhook-server-port={_free_port()}"]
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "MY_POD_NAMESPACE": OPERATOR_NAMESPACE}
        self.proc = subprocess.Popen(argv, stdout=self._out, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + ready_timeout
        mounted = False
        while not READY.search(log.read_bytes()):
            if not mounted:
                mounted = _mount_certs(client)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"upstream operator did not start; log: {log.read_bytes()[-1500:].decode()}")
            time.sleep(0.1)
        self.idle_rss_mb = self.stats()[1]

    def stats(self) -> tuple[float, float]:
        return kt.process_stats(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()

