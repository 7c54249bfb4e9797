"""No process or temp dir is ever left behind: normal stop, failed starts (bogus
binary, occupied ports), API server restart, the parent being SIGKILLed, and the
``python -m testworld cluster`` CLI stopped by SIGTERM / SIGINT.

These tests start their own ControlPlane instances (not the session one)."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testworld.assets import Assets
from testworld.controlplane import LOOPBACK, ControlPlane, ControlPlaneError

pytestmark = [
    pytest.mark.controlplane,
    pytest.mark.skipif(
        os.environ.get("USE_EXISTING_CLUSTER", "").lower() in {"1", "true"},
        reason="lifecycle tests start their own processes",
    ),
]
REPO = Path(__file__).resolve().parents[2]


def alive(pid: int | None) -> bool:
    """True if ``pid`` runs and is not a zombie (orphans may wait for a reaper)."""
    if pid is None:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_dead(*pids: int | None, timeout: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if p is not None and alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def children_of(ppid: int) -> dict[int, str]:
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == ppid:
            found[int(entry.name)] = Path(cmd).name
    return found


def drop_failed_logs(plane: ControlPlane) -> None:
    """A failed start keeps its logs in a trainforge-cp-failed-* dir; tests tidy it."""
    if plane.failed_logs_dir is not None:
        for log in plane.failed_logs_dir.iterdir():
            log.unlink()
        plane.failed_logs_dir.rmdir()


@pytest.fixture
def occupied_port() -> Iterator[int]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((LOOPBACK, 0))
    sock.listen(1)
    try:
        yield int(sock.getsockname()[1])
    finally:
        sock.close()


def test_start_restart_stop_leaves_nothing_behind(envtest_assets):
    plane = ControlPlane(assets=envtest_assets)
    with plane:
        etcd_pid, api_pid, server, workdir = plane.etcd_pid, plane.apiserver_pid, plane.server, plane.dir
        assert alive(etcd_pid) and alive(api_pid) and workdir is not None and workdir.is_dir()
        assert plane.raw_get("/readyz")[0] == 200
        plane.kubectl("create", "configmap", "survives-restart", "--from-literal=k=v")

        plane.restart_apiserver()

        assert plane.server == server  # same port, same certs: kubeconfigs stay valid
        assert not alive(api_pid) and alive(plane.apiserver_pid) and plane.apiserver_pid != api_pid
        assert plane.etcd_pid == etcd_pid and alive(etcd_pid)
        assert plane.kubectl("get", "configmap", "survives-restart", "-o", "jsonpath={.data.k}").stdout == "v"
        new_api_pid = plane.apiserver_pid

    assert wait_dead(etcd_pid, new_api_pid, timeout=0.5) == []  # stop() waited for them
    assert not workdir.exists()


def test_bogus_apiserver_binary_still_stops_etcd(envtest_assets):
    bogus = dataclasses.replace(envtest_assets, kube_apiserver=Path("/nonexistent/kube-apiserver"))
    plane = ControlPlane(assets=bogus)

    with pytest.raises(ControlPlaneError, match=r"failed to start kube-apiserver: cannot exec /nonexistent"):
        plane.start()

    assert plane.etcd_pid is not None, "etcd should have been started first"
    assert wait_dead(plane.etcd_pid, timeout=0.5) == []
    assert plane.dir is not None and not plane.dir.exists()
    drop_failed_logs(plane)


def test_occupied_apiserver_port_fails_with_server_reason_and_stops_etcd(envtest_assets, occupied_port):
    plane = ControlPlane(assets=envtest_assets, apiserver_port=occupied_port)

    with pytest.raises(ControlPlaneError) as failed:
        plane.start()

    message = str(failed.value)
    assert message.startswith("failed to start kube-apiserver: exited with code")
    assert "address already in use" in message  # the log tail carries the real reason
    assert plane.failed_logs_dir is not None and str(plane.failed_logs_dir) in message
    assert (plane.failed_logs_dir / "kube-apiserver.log").is_file()  # kept for post-mortems
    assert wait_dead(plane.etcd_pid, plane.apiserver_pid, timeout=0.5) == []
    assert plane.dir is not None and not plane.dir.exists()
    drop_failed_logs(plane)


def test_occupied_etcd_port_fails_before_apiserver(envtest_assets, occupied_port):
    plane = ControlPlane(assets=envtest_assets, etcd_port=occupied_port, start_timeout=20)

    with pytest.raises(ControlPlaneError, match=r"failed to start etcd"):
        plane.start()

    assert plane.apiserver_pid is None
    assert wait_dead(plane.etcd_pid, timeout=0.5) == []
    assert plane.dir is not None and not plane.dir.exists()
    drop_failed_logs(plane)


def test_children_die_when_the_python_parent_is_sigkilled(envtest_assets, tmp_path):
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from testworld.assets import Assets
        from testworld.controlplane import ControlPlane
        assets = Assets(Path({str(envtest_assets.directory)!r}), Path({str(envtest_assets.kube_apiserver)!r}),
                        Path({str(envtest_assets.etcd)!r}), None)
        plane = ControlPlane(assets=assets).start()
        print(plane.etcd_pid, plane.apiserver_pid, plane.dir, flush=True)
        time.sleep(300)
        """
    )
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        etcd_pid, api_pid, workdir = line.split()
        assert alive(int(etcd_pid)) and alive(int(api_pid))
    finally:
        proc.kill()
        proc.wait()
    try:
        assert wait_dead(int(etcd_pid), int(api_pid)) == [], "PR_SET_PDEATHSIG should have stopped them"
    finally:
        for pid in (int(etcd_pid), int(api_pid)):  # never leak, even if the assertion failed
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        subprocess.run(["rm", "-rf", workdir], check=False)  # SIGKILL leaves the dir by nature


@contextmanager
def cluster_cli(assets: Assets, kubeconfig: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], dict[int, str]]]:
    """`python -m testworld cluster ... --kubeconfig KUBECONFIG` until its export line;
    yields the process and its children; killed afterwards if the test left it running."""
    env = {**os.environ, "KUBEBUILDER_ASSETS": str(assets.directory),
           "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "testworld", "cluster", "--no-upstream-crds", *args, "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        export = proc.stdout.readline()
        assert first == f"kubeconfig: {kubeconfig}\n", (first, proc.stderr.read() if proc.poll() is not None else "")
        assert export == f"export KUBECONFIG={kubeconfig}\n"
        yield proc, children_of(proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cluster_cli_serves_kubectl_and_stops_cleanly(envtest_assets, tmp_path, sig):
    kubeconfig = tmp_path / "kubeconfig"
    with cluster_cli(envtest_assets, kubeconfig) as (proc, children):
        assert sorted(children.values()) == ["etcd", "kube-apiserver"], children
        got = subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", "get", "namespace", "default", "-o", "name"],
                             capture_output=True, text=True, timeout=60, check=False)
        assert got.stdout.strip() == "namespace/default", got.stderr
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "stopped: etcd and kube-apiserver are gone" in stderr
    assert wait_dead(*children, timeout=0.5) == []
    assert not kubeconfig.exists(), "stale kubeconfig must not outlive the cluster"


def test_cluster_cli_with_parts_runs_pods_and_stops_every_process(envtest_assets, tmp_path):
    """`make cluster`'s world: kube-scheduler, kwok and the garbage collector beside the
    plane, kwok's nodes Ready and untainted, and SIGTERM stops all six processes (kwok's
    kubelet stand-in, testworld.kubelet, is the Python one)."""
    kubeconfig = tmp_path / "kubeconfig"
    with cluster_cli(envtest_assets, kubeconfig, "--with", "gc,scheduler,kwok") as (proc, children):
        assert sorted(children.values()) == ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                                             "kwok", "python"], children
        nodes = subprocess.run(
            ["kubectl", f"--kubeconfig={kubeconfig}", "get", "nodes", "-o",
             "jsonpath={range .items[*]}{.status.conditions[?(@.type=='Ready')].status} {.spec.taints}{'\\n'}{end}"],
            capture_output=True, text=True, timeout=60, check=False).stdout.splitlines()
        assert len(nodes) == 14 and all(n.startswith("True") and "not-ready" not in n for n in nodes), nodes
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    stderr = proc.stderr.read() if proc.stderr else ""
    assert "stopped: etcd and kube-apiserver are gone, gc, scheduler, kwok" in stderr
    assert wait_dead(*children, timeout=0.5) == []
