"""bench.baseline: a run's ratios beside the project's recorded ones, WORSE said plainly."""

from __future__ import annotations

import json
from pathlib import Path

from bench import baseline


def test_a_ratio_worse_than_recorded_by_more_than_its_noise_is_said_and_a_better_one_is_not(tmp_path: Path) -> None:
    baseline.record("x", [baseline.Guarded("cpu", "CPU", 0.50), baseline.Guarded("events", "Events", 2.0, False)],
                    machine="m", directory=tmp_path, noise={"cpu": 0.10, "events": 0.10}, noise_how="two runs",
                    at="abc1234")
    saved = json.loads((tmp_path / "x.json").read_text())
    assert saved["commit"] == "abc1234" and saved["ratios"] == {"cpu": 0.5, "events": 2.0}
    lines = baseline.report_against("x", [baseline.Guarded("cpu", "CPU", 0.56), baseline.Guarded(
        "events", "Events", 1.5, False), baseline.Guarded("new", "New", 1.0)], machine="m", directory=tmp_path)
    assert lines[0].startswith("against the last recorded figures (commit abc1234") and "two runs" in lines[0]
    assert lines[1] == "WORSE: CPU: 0.56x, recorded 0.5x (noise +-10%): worse"  # 12% up, lower is better
    assert lines[2] == "WORSE: Events: 1.5x, recorded 2x (noise +-10%): worse"  # higher is better
    assert lines[3] == "  New: 1x (not recorded)"
    assert lines[-1] == "WORSE than recorded by more than the noise: CPU, Events"
    quiet = baseline.report_against("x", [baseline.Guarded("cpu", "CPU", 0.53), baseline.Guarded("events", "Events", 2.5,
                                                                                                  False)],
                                    machine="m", directory=tmp_path)
    assert quiet[1:] == ["  CPU: 0.53x, recorded 0.5x (noise +-10%): same",
                         "  Events: 2.5x, recorded 2x (noise +-10%): better",
                         "no ratio worse than recorded by more than the noise"]


def test_recording_keeps_the_measured_noise_and_without_a_record_it_says_so(tmp_path: Path) -> None:
    assert baseline.compare([baseline.Guarded("cpu", "CPU", 1.0)], baseline.load("y", tmp_path)) == [
        "no recorded figures to compare with (bench/recorded/; --record writes them)"]
    baseline.record("y", [baseline.Guarded("cpu", "CPU", 1.0)], machine="m", directory=tmp_path,
                    noise={"cpu": 0.2}, noise_how="how", at="a")
    baseline.record("y", [baseline.Guarded("cpu", "CPU", 0.9)], machine="m", directory=tmp_path, at="b")
    again = baseline.load("y", tmp_path)
    assert again is not None and (again.commit, again.ratios, again.noise, again.noise_how) == (
        "b", {"cpu": 0.9}, {"cpu": 0.2}, "how")
    assert again.noise_of("other") == baseline.NOISE_FLOOR


def test_the_project_record_of_make_bench_scale_reads() -> None:
    recorded = baseline.load("scale")
    assert recorded is not None and recorded.commit and "1000x8:cpu-per-pod" in recorded.ratios


def test_the_project_record_of_make_bench_compiler_reads_with_the_noise_it_measured() -> None:
    recorded = baseline.load("compiler")
    assert recorded is not None and recorded.commit
    assert {"1000:build-cpu", "1000:render-cpu"} <= set(recorded.ratios) and set(recorded.noise) == set(recorded.ratios)
