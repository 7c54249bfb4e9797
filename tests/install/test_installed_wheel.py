"""The installed wheel works at the locked, newest and oldest allowed versions (conftest.py):
the programs come from the venv (not the checkout) and report the versions installed,
`train-compile` writes every example byte for byte as the project's own venv does, and
`train-controller` takes a PyTorchJob through Created, Running and Succeeded on the real
API server, with the test playing the kubelet."""

from __future__ import annotations

import filecmp
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from controller_kit import Cluster, job, wait_for
from install_kit import REPO, Install, clean_env, normalize

from foundation.cluster.kube import PODS, SERVICES, Client

EXAMPLES = REPO / "examples"


def example_runs() -> list[tuple[str, list[Path]]]:
    """As `make demo` compiles them: the top-level specs as one source, each project folder as its own."""
    runs = [("examples", sorted(p for p in EXAMPLES.glob("*.y*ml") if p.is_file()))]
    runs += [(d.name, [d]) for d in sorted(EXAMPLES.iterdir()) if (d / "trainforge.yaml").is_file()]
    return runs


def compile_examples(train_compile: str, out: Path) -> None:
    for name, sources in example_runs():
        proc = subprocess.run([train_compile, "build", *map(str, sources), "-o", str(out / name)],
                              capture_output=True, text=True, timeout=120, env=clean_env(), cwd=out.parent)
        assert proc.returncode == 0, f"{name}: {proc.stderr}"


def differences(left: Path, right: Path) -> list[str]:
    cmp = filecmp.dircmp(left, right)
    found = [str(left / n) for n in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
    for sub in cmp.common_dirs:
        found += differences(left / sub, right / sub)
    return found


@pytest.fixture(scope="session")
def reference_tree(tmp_path_factory) -> Path:
    """The examples compiled by the checkout in the project's venv."""
    out = tmp_path_factory.mktemp("reference") / "out"
    compile_examples(str(Path(sys.executable).parent / "train-compile"), out)
    return out


def test_the_programs_come_from_the_venv_and_report_its_versions(install: Install, tmp_path: Path) -> None:
    proc = install.run(install.bin("python"), "-c", "import compiler, controller; print(controller.__file__)",
                       cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(str(install.root)), proc.stdout
    for program, deps in (("train-controller", ("pydantic", "kubernetes", "orjson", "urllib3")),
                          ("train-compile", ("pydantic", "ruamel.yaml", "click", "jsonschema"))):
        proc = install.run(install.bin(program), "--version", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == f"{program} 0.1.0"
        reported = dict(line.split() for line in lines[1:] if not line.lstrip().startswith("python "))
        assert {normalize(d): reported[d] for d in deps} == {normalize(d): install.pins[normalize(d)] for d in deps}


def test_train_compile_writes_every_example_as_the_project_venv_does(install: Install, reference_tree: Path,
                                                                     tmp_path: Path) -> None:
    out = tmp_path / "out"
    compile_examples(install.bin("train-compile"), out)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in reference_tree.iterdir())
    assert sum(1 for _ in out.rglob("*.yaml")) > 50
    assert differences(out, reference_tree) == []


def test_train_controller_takes_a_pytorchjob_to_succeeded(install: Install, control_plane, namespace,
                                                          tmp_path: Path) -> None:
    log = (tmp_path / "controller.log").open("w")
    proc = subprocess.Popen([install.bin("train-controller"), "--kubeconfig", str(control_plane.kubeconfig),
                             "--namespace", namespace, "--workers", "2"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path, env=clean_env())
    client = Client.connect(str(control_plane.kubeconfig))
    cluster = Cluster(client, namespace)
    try:
        cluster.apply(job("PyTorchJob", "smoke", Master=1, Worker=1))
        pods = cluster.wait_pods({"smoke-master-0", "smoke-worker-0"}, timeout=60)
        assert {p["metadata"]["labels"]["training.kubeflow.org/replica-type"] for p in pods.values()} == {"master", "worker"}
        wait_for(lambda: set(cluster.objects(SERVICES)) == {"smoke-master-0", "smoke-worker-0"}, what="headless services")
        cluster.wait_condition("PyTorchJob", "smoke", "Created")
        cluster.run_all("smoke-master-0", "smoke-worker-0")
        cluster.wait_condition("PyTorchJob", "smoke", "Running")
        cluster.set_phase("smoke-master-0", "Succeeded")
        done = cluster.wait_condition("PyTorchJob", "smoke", "Succeeded")
        assert done["status"]["completionTime"]
        assert cluster.client.get(PODS, namespace, "smoke-master-0")["status"]["phase"] == "Succeeded"
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        log.close()
    output = (tmp_path / "controller.log").read_text()
    assert code == 0, output
    assert "Traceback" not in output, output
