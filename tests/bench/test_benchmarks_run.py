"""Both benchmarks run end to end at a tiny size and print their table (no timing asserts).

Benchmarks are not timed tests: these only hold the commands to working, so `make
bench-compiler` and `make bench-controller` do not rot between the runs that matter.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from bench import compiler_bench, controller_bench, report


def test_the_report_prints_figure_ours_baseline_ratio_and_writes_markdown(tmp_path: Path, capsys) -> None:
    rows = [report.Row("build wall (s)", 0.5, 10.0, "s", "<= 0.10x"), report.Row("only ours", 3.0)]
    report.emit("t", rows, machine_line="now; here", notes=["a note"], markdown=tmp_path / "t.md")
    out = capsys.readouterr().out
    assert "figure" in out and "ratio" in out and "0.050x" in out and "a note" in out
    text = (tmp_path / "t.md").read_text()
    assert "| build wall (s) | 0.50 s | 10.0 s | 0.050x | <= 0.10x |" in text
    assert "| only ours | 3.00 | - | - | - |" in text


def test_the_compiler_benchmark_runs_at_n_5(tmp_path: Path, capsys) -> None:
    md = tmp_path / "compiler.md"
    argv = ["--sizes", "5", "--repeat", "1", "--workdir", str(tmp_path), "--markdown", str(md)]
    assert compiler_bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "build throughput, N=5" in out and "train-compile --help cold start" in out
    assert "vs before" in out
    assert "DIFFERS" not in out  # render and kustomize agree (when kubectl is there)
    assert md.read_text().startswith("### trainforge compiler benchmark")


def test_the_compiler_benchmark_measures_another_checkout_beside_this_one_and_records_its_ratios(
        tmp_path: Path, capsys) -> None:
    """--also CHECKOUT: that checkout's train-compile run on the same specs, interleaved, its output
    compared byte for byte; --record keeps the guarded ratios with their measured noise, and the
    next run is compared with them (bench.baseline)."""
    root = Path(compiler_bench.__file__).resolve().parents[1]
    recorded = tmp_path / "recorded"
    argv = ["--sizes", "5", "--repeat", "2", "--kustomize-repeat", "1", "--no-reference", "--no-plan", "--no-import",
            "--workdir", str(tmp_path), "--also", str(root), "--recorded", str(recorded), "--record"]
    assert compiler_bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "build CPU, N=5, this checkout vs" in out and ": render CPU, N=5 (s)" in out
    assert "byte-identical to" in out and "NOT byte-identical" not in out  # the same code on both sides
    saved = json.loads((recorded / "compiler.json").read_text())
    if shutil.which("kubectl"):
        assert set(saved["ratios"]) == {"5:build-cpu", "5:render-cpu"} and set(saved["noise"]) == set(saved["ratios"])
    assert compiler_bench.main(argv[:-1]) == 0  # the second run is compared with the first
    assert f"against the last recorded figures (commit {saved['commit']}" in capsys.readouterr().out


def test_the_compiler_benchmark_runs_the_built_wheel_on_the_python_it_is_given(tmp_path: Path, capsys) -> None:
    """--python: the wheel in a clean venv of that interpreter, not the project's editable venv."""
    from testworld import pyenvs

    argv = ["--sizes", "5", "--repeat", "1", "--kustomize-repeat", "0", "--workdir", str(tmp_path),
            "--python", pyenvs.PYTHON]
    assert compiler_bench.main(argv) == 0
    out = capsys.readouterr().out
    assert "train-compile on Python 3.11" in out
    assert f"{pyenvs.cache_root() / 'venvs' / 'install-locked-'}" in out  # the install checks' venv, not .venv
    assert "build throughput, N=5" in out
    assert "vs before" not in out  # the before/after row runs the project venv's Python: left out


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind (Debian package) is not installed")
def test_instructions_are_counted_to_the_end_and_grow_with_the_work() -> None:
    """The load-independent figure: callgrind's count of what a process executes, also when
    it leaves through os._exit as train-compile does."""
    valgrind = shutil.which("valgrind")
    idle = compiler_bench.count_instructions([sys.executable, "-S", "-c", "import os; os._exit(0)"], valgrind)
    busy = compiler_bench.count_instructions(
        [sys.executable, "-S", "-c", "import os; sum(range(10**6)); os._exit(0)"], valgrind)
    assert idle > 1_000_000  # an interpreter's start
    assert busy - idle > 10_000_000  # a million additions cost at least ten instructions each
    with pytest.raises(RuntimeError, match="failed"):
        compiler_bench.count_instructions([sys.executable, "-S", "-c", "raise SystemExit(3)"], valgrind)


def test_the_instruction_rows_divide_by_specs_and_by_the_builds_cpu_seconds() -> None:
    run = compiler_bench.Run(wall=2.0, cpu=3.0, rss_mb=80.0)
    size = compiler_bench.Size(1000, run, run, None, None, instructions=6_000_000_000)
    rows = {r.figure: r for r in compiler_bench.rows([size], help_ours=0.1, help_kubectl=None)}
    per_spec = next(r for f, r in rows.items() if f.startswith("build instructions per spec, N=1000"))
    per_cpu = next(r for f, r in rows.items() if f.startswith("instructions per CPU second"))
    assert per_spec.ours == pytest.approx(6.0) and per_spec.unit == "M"
    assert per_cpu.ours == pytest.approx(2.0) and per_cpu.unit == "G"
    size.instructions = None
    assert not any("instructions" in r.figure for r in compiler_bench.rows([size], help_ours=0.1, help_kubectl=None))


@pytest.mark.controlplane
def test_the_controller_benchmark_runs_at_n_5(tmp_path: Path, capsys) -> None:
    md = tmp_path / "controller.md"
    argv = ["--jobs", "5", "--pods", "2", "--big", "4", "--repeat", "1", "--timeout", "120", "--upstream", "no",
            "--markdown", str(md)]
    assert controller_bench.main(argv) == 0  # starts its own control plane, as `make bench-controller` does
    out = capsys.readouterr().out
    assert "pods created per second, 5 jobs x 2 pods + 1 x 4" in out
    assert "writes for a settled reconcile" in out
    assert "--no-pods-first (upstream's order): pods created per second" in out  # the second order, same run
    for row in ("API server + etcd CPU per pod, apply -> all pods created", "CPU per Service create",
                "CPU per Event create", "CPU per PyTorchJob status update", "best pods/s ratio those requests allow"):
        assert row in out  # the server-cost rows: a control plane started here knows its process ids
    assert md.is_file()


def test_server_side_writes_come_from_apiserver_request_total_without_leases() -> None:
    from collections import Counter

    from bench.kube_tools import server_writes

    def line(verb: str, resource: str, sub: str, value: int) -> str:
        return (f'apiserver_request_total{{code="201",component="apiserver",dry_run="",group="",resource="{resource}",'
                f'scope="resource",subresource="{sub}",verb="{verb}",version="v1"}} {value}')

    metrics = "\n".join([
        "# TYPE apiserver_request_total counter",
        line("POST", "pods", "", 12), line("PATCH", "pods", "status", 3), line("LIST", "pods", "", 40),
        line("PUT", "leases", "", 9), line("POST", "pods", "", 1),
    ]).encode()
    assert server_writes(metrics) == Counter({("POST", "pods"): 13, ("PATCH", "pods/status"): 3})


def test_the_cost_model_adds_each_request_at_its_measured_server_cost() -> None:
    from bench import server_cost

    costs = server_cost.Costs({"pod create": 2.0, "Service create": 1.5, "Event create": 1.0,
                               "PyTorchJob create": 3.0, "PyTorchJob status update": 4.0})
    before = {"create /pods": 10, "create /events": 1, "list /pods": 1}
    after = {"create /pods": 18, "create /services": 8, "create /events": 5, "list /pods": 2,
             "update kubeflow.org/pytorchjobs/status": 2}
    writes = server_cost.window_writes(before, after, job_creates=2)
    assert writes == {"create /pods": 8, "create /services": 8, "create /events": 4,
                      "update kubeflow.org/pytorchjobs/status": 2, "create kubeflow.org/pytorchjobs": 2}
    assert costs.model(writes) == 8 * 2.0 + 8 * 1.5 + 4 * 1.0 + 2 * 4.0 + 2 * 3.0
    rows = {r.figure: r for r in server_cost.rows(costs, [(writes, 0.092), (writes, 0.100)], pods=8,
                                                   bare_cpu=0.016, pair_cpu=0.028)}
    measured = next(r for name, r in rows.items() if name.startswith("API server + etcd CPU per pod, apply"))
    assert measured.ours == 1000 * 0.096 / 8 and measured.baseline == 2.0
    best = next(r for name, r in rows.items() if name.startswith("best pods/s ratio"))
    assert best.ratio == 2.0 / (46.0 / 8)  # a pod's cost over what each pod brings along


def test_a_bare_copy_keeps_what_a_client_sends_and_moves_an_events_object_along() -> None:
    from bench.kube_tools import bare_copy

    event = {"metadata": {"name": "j.1", "namespace": "a", "uid": "u", "resourceVersion": "9",
                          "managedFields": [{}]}, "involvedObject": {"kind": "PyTorchJob", "name": "j", "namespace": "a"},
             "reason": "SuccessfulCreatePod", "count": 1}
    copy = bare_copy(event, "b", "Event")
    assert copy == {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "j.1", "namespace": "b"},
                    "involvedObject": {"kind": "PyTorchJob", "name": "j", "namespace": "b"},
                    "reason": "SuccessfulCreatePod", "count": 1}
    assert event["metadata"]["namespace"] == "a" and event["involvedObject"]["namespace"] == "a"
    job = {"metadata": {"name": "j", "ownerReferences": [{}], "generation": 1}, "spec": {}, "status": {"x": 1}}
    assert bare_copy(job, "b", "PyTorchJob", "kubeflow.org/v1") == {
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j", "namespace": "b"}, "spec": {}}
