"""The git server the engines fetch from: a clone over HTTP sees every pushed commit,
protocol v0 and v2 alike; pushes over HTTP are refused (tests write through Workdir)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from testworld.gitserver import GitServer, git


@pytest.fixture
def server(tmp_path: Path):
    srv = GitServer(tmp_path / "git").start()
    yield srv
    srv.stop()


def clone(url: str, dest: Path, protocol: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", f"protocol.version={protocol}", "clone", "-q", url, str(dest)],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize("protocol", ["0", "2"], ids=["smart http v0", "smart http v2"])
def test_a_clone_over_http_sees_each_pushed_commit(server, tmp_path, protocol):
    work = server.create("deploy")
    work.write("dev/kustomization.yaml", "resources: []\n")
    first = work.commit("first")
    work.remove("dev")
    work.write("prod/job.yaml", "kind: PyTorchJob\n")
    second = work.commit("second: dev removed, prod added")

    assert clone(work.url, tmp_path / "clone", protocol).returncode == 0
    assert git("rev-parse", "HEAD", cwd=tmp_path / "clone").strip() == second != first
    assert (tmp_path / "clone" / "prod" / "job.yaml").is_file()
    assert not (tmp_path / "clone" / "dev").exists()


def test_a_push_over_http_is_refused(server, tmp_path):
    work = server.create("deploy")
    work.commit("empty")
    assert clone(work.url, tmp_path / "clone", "2").returncode == 0
    pushed = subprocess.run(["git", "-C", str(tmp_path / "clone"), "push", work.url, "HEAD:other"],
                            capture_output=True, text=True, check=False)
    assert pushed.returncode != 0 and "403" in pushed.stderr
