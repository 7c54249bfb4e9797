"""The API client's fast paths on real servers: a create whose answer is not parsed still
reports every error as before, a watch stream cut into chunks anywhere still yields
whole events, and a kubeconfig server behind a path prefix keeps its prefix now that
requests go straight to the connection pool (foundation.cluster.kube)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator

import pytest
from controller_kit import Cluster

from foundation.cluster import errors, kubelib
from foundation.cluster.connection import Connection
from foundation.cluster.kube import PODS, Client


def pod(name: str, **annotations: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"probe": "client"}, "annotations": annotations},
            "spec": {"containers": [{"name": "c", "image": "x"}]}}


def test_a_create_whose_answer_is_not_read_still_creates_and_reports_errors(cluster: Cluster) -> None:
    ns = cluster.namespace
    assert cluster.client.create(PODS, ns, pod("quiet"), answer=False) is None
    assert cluster.client.get(PODS, ns, "quiet")["metadata"]["name"] == "quiet"
    with pytest.raises(errors.AlreadyExists):
        cluster.client.create(PODS, ns, pod("quiet"), answer=False)
    bad = pod("Not_A_Name")
    with pytest.raises(errors.Invalid, match="Not_A_Name"):  # the server's own message, as before
        cluster.client.create(PODS, ns, bad, answer=False)
    answered = cluster.client.create(PODS, ns, pod("loud"))
    assert answered["metadata"]["uid"] and answered["spec"]["containers"][0]["image"] == "x"


def test_watch_events_larger_than_a_chunk_and_many_per_chunk_arrive_whole(cluster: Cluster) -> None:
    ns = cluster.namespace
    big = "x" * (150 * 1024)  # one event spans three 64 KB reads
    names = [f"small-{i:02d}" for i in range(40)]
    for name in names[:20]:
        cluster.client.create(PODS, ns, pod(name), answer=False)
    cluster.client.create(PODS, ns, pod("big", note=big), answer=False)
    for name in names[20:]:
        cluster.client.create(PODS, ns, pod(name), answer=False)
    # from resourceVersion 0 the server sends every existing pod at once: many events per read
    seen: dict[str, dict] = {}
    for event in cluster.client.watch(PODS, namespace=ns, label_selector="probe=client", resource_version="0",
                                      timeout_seconds=5):
        obj = event["object"]
        seen[obj["metadata"]["name"]] = obj
        if len(seen) == 41:
            break
    assert set(seen) == {*names, "big"}
    assert seen["big"]["metadata"]["annotations"]["note"] == big
    assert all(event_obj["kind"] == "Pod" for event_obj in seen.values())


class _PrefixedServer(http.server.BaseHTTPRequestHandler):
    """An API server reached through a proxy that serves it under /k8s/clusters/c1."""

    paths: list[str] = []

    def _answer(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.paths.append(self.path)
        if self.path == "/k8s/clusters/c1/api/v1/namespaces/team/pods/p":
            self._answer(200, pod("p"))
        else:
            self._answer(404, {"kind": "Status", "reason": "NotFound", "message": f"no {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        self.paths.append(self.path)
        length = int(self.headers["Content-Length"])
        body = json.loads(self.rfile.read(length))
        self._answer(201, body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prefixed() -> Iterator[str]:
    _PrefixedServer.paths = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _PrefixedServer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/k8s/clusters/c1"
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_behind_a_path_prefix_keeps_the_prefix(prefixed: str) -> None:
    cfg = kubelib.Configuration()
    cfg.host = prefixed
    client = Client(Connection(lambda: cfg))
    try:
        assert client.get(PODS, "team", "p")["metadata"]["name"] == "p"
        assert client.create(PODS, "team", pod("q"))["metadata"]["name"] == "q"
        with pytest.raises(errors.NotFound, match="/k8s/clusters/c1/api/v1/namespaces/team/pods/r"):
            client.get(PODS, "team", "r")
    finally:
        client.close()
    assert _PrefixedServer.paths == ["/k8s/clusters/c1/api/v1/namespaces/team/pods/p",
                                     "/k8s/clusters/c1/api/v1/namespaces/team/pods",
                                     "/k8s/clusters/c1/api/v1/namespaces/team/pods/r"]
