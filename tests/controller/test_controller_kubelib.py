"""The controller loads the kubernetes package's config loaders only, not its generated
classes (foundation.cluster.kubelib), and code that wants the whole package still gets it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
import controller.__main__
import controller.manager, controller.preflight, controller.runtime.leader, controller.runtime.metrics, controller.runtime.health  # what main() imports
from foundation.cluster.kube import Client
light = sorted(m for m in sys.modules if m.startswith("kubernetes"))
from kubernetes.client import V1Pod, CoreV1Api  # another user in the same process
import kubernetes
namespace = {}
exec("from kubernetes.client import *", namespace)  # as the Kubeflow SDK's models do
print(json.dumps({"light": light, "pod": V1Pod.__name__, "api": CoreV1Api.__name__,
                  "version": kubernetes.__version__, "watch": hasattr(kubernetes.watch, "Watch"),
                  "star": "V1VolumeMount" in namespace}))
"""


def test_the_controller_imports_no_generated_kubernetes_classes_and_others_still_can() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not [m for m in seen["light"] if m.startswith(("kubernetes.client.models.", "kubernetes.client.api.",
                                                           "kubernetes.dynamic", "kubernetes.watch"))], seen["light"]
    assert {"kubernetes.config.kube_config", "kubernetes.config.incluster_config"} <= set(seen["light"])
    assert seen["pod"] == "V1Pod" and seen["api"] == "CoreV1Api" and seen["watch"] and seen["star"]
    assert seen["version"]


OIDC_PROBE = r"""
import base64, json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import yaml

from foundation.cluster import kubelib
from foundation.cluster.connection import _auth_headers
light = sorted(m for m in ("requests", "requests_oauthlib", "pydantic") if m in sys.modules)

def jwt(exp):
    part = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none'})}.{part({'exp': exp, 'sub': 'me'})}.sig"

fresh = jwt(int(time.time()) + 3600)
asked = []

class Issuer(BaseHTTPRequestHandler):
    def _json(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # the discovery document
        asked.append(self.path)
        self._json({"issuer": base, "token_endpoint": base + "/token"})

    def do_POST(self):  # the refresh
        asked.append(self.path + " " + self.rfile.read(int(self.headers["Content-Length"])).decode())
        self._json({"access_token": "a", "id_token": fresh, "refresh_token": "refresh-2", "token_type": "Bearer",
                    "expires_in": 3600})

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Issuer)
base = f"http://127.0.0.1:{server.server_port}"
threading.Thread(target=server.serve_forever, daemon=True).start()
config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
          "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
          "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
          "users": [{"name": "u", "user": {"auth-provider": {"name": "oidc", "config": {
              "client-id": "cli", "client-secret": "s3cret", "idp-issuer-url": base,
              "id-token": jwt(int(time.time()) - 60), "refresh-token": "refresh-1"}}}}]}
path = sys.argv[1]
with open(path, "w") as fh:
    yaml.safe_dump(config, fh)
cfg = kubelib.Configuration()
kubelib.load_kube_config(config_file=path, client_configuration=cfg)
print(json.dumps({"light": light, "auth": _auth_headers(cfg).get("authorization"), "fresh": fresh, "asked": asked,
                  "saved": yaml.safe_load(open(path))["users"][0]["user"]["auth-provider"]["config"]["refresh-token"]}))
"""


def test_an_oidc_token_is_still_refreshed_though_its_libraries_are_not_imported_up_front(tmp_path: Path) -> None:
    """kubelib keeps requests_oauthlib, oauthlib's OAuth 2 errors and the ApiClient out of the
    controller's imports; a kubeconfig whose OIDC id-token expired still gets a new one (the
    discovery document through the ApiClient, the refresh through OAuth2Session)."""
    import os

    env = {**os.environ, "OAUTHLIB_INSECURE_TRANSPORT": "1"}  # the test issuer speaks plain HTTP
    proc = subprocess.run([sys.executable, "-c", OIDC_PROBE, str(tmp_path / "kubeconfig")], cwd=REPO,
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["light"] == []  # none of them was imported by the light load
    assert seen["asked"][0] == "/.well-known/openid-configuration"
    assert seen["asked"][1].startswith("/token ") and "refresh_token=refresh-1" in seen["asked"][1]
    assert seen["auth"] == f"Bearer {seen['fresh']}"
    assert seen["saved"] == "refresh-2"  # persisted to the kubeconfig, as kubectl's loader does
