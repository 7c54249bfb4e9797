"""Both benchmarks run end to end at a tiny size and print their table (no timing asserts).

Benchmarks are not timed tests: these only hold the commands to working, so `make
bench-compiler` and `make bench-controller` do not rot between the runs that matter.
"""

from __future__ import annotations

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


@pytest.mark.controlplane
def test_the_controller_benchmark_runs_at_n_5(tmp_path: Path, capsys) -> None:
    md = tmp_path / "controller.md"
    argv = ["--jobs", "5", "--pods", "2", "--big", "4", "--repeat", "1", "--timeout", "120", "--upstream", "no",
            "--markdown", str(md)]
    assert controller_bench.main(argv) == 0  # starts its own control plane, as `make bench-controller` does
    out = capsys.readouterr().out
    assert "pods created per second, 5 jobs x 2 pods + 1 x 4" in out
    assert "writes for a settled reconcile" in out
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
