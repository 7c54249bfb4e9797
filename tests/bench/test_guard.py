"""The benchmarks' guard (bench/guard.py) says when a ratio got worse than the recorded one by
more than the noise measured for it, and `--against` (bench/against.py) tells identical output
from different output."""

from __future__ import annotations

from pathlib import Path

from bench import against, guard
from bench.report import Row


def _run(path: Path, ratio: float, *, spread: float = 0.0, at: str = "abc1234") -> guard.Baseline:
    rows = [Row("build CPU, N=1000 (s)", ratio, 1.0, spread=spread), Row("per CPU second (specs/s)", 1 / ratio, 1.0,
                                                                           better="higher")]
    return guard.record(rows, path, machine="test machine", at=at)


def _verdict(path: Path, figure: str, ratio: float, better: str = "lower") -> guard.Verdict:
    (found,) = [v for v in guard.verdicts([Row(figure, ratio, 1.0, better=better)], guard.load(path))]
    return found


def test_a_ratio_worse_by_more_than_the_noise_across_runs_is_called_worse(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    for ratio in (0.050, 0.052, 0.051):
        _run(path, ratio)
    recorded = guard.load(path)
    assert recorded.commit == "abc1234" and recorded.runs == 3
    figure = recorded.figures["build CPU, N=1000 (s)"]
    assert figure.ratio == 0.051 and abs(figure.noise - 0.002 / 0.051) < 1e-9
    assert _verdict(path, "build CPU, N=1000 (s)", 0.060).worse  # +18%
    assert not _verdict(path, "build CPU, N=1000 (s)", 0.052).worse  # +2%, inside the 3.9% noise
    assert _verdict(path, "build CPU, N=1000 (s)", 0.040).better
    text = guard.report([Row("build CPU, N=1000 (s)", 0.060, 1.0)], path)
    assert "WORSE by more than the noise" in text and "1 ratio(s) got worse" in text


def test_a_higher_is_better_ratio_is_worse_when_it_falls(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    _run(path, 0.05)
    _run(path, 0.05 * 1.1)
    assert _verdict(path, "per CPU second (specs/s)", 10.0, "higher").worse  # recorded ~19-20
    assert not _verdict(path, "per CPU second (specs/s)", 19.5, "higher").worse


def test_one_run_without_repeats_measures_no_noise_and_judges_nothing(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    _run(path, 0.05)
    verdict = _verdict(path, "build CPU, N=1000 (s)", 0.5)
    assert verdict.recorded.noise is None and not verdict.worse
    assert "noise not measured" in guard.report([Row("build CPU, N=1000 (s)", 0.5, 1.0)], path)
    _run(path, 0.05, spread=0.2, at="abc1234")  # a run's own repeats measure it too
    assert _verdict(path, "build CPU, N=1000 (s)", 0.5).worse


def test_a_run_at_another_commit_starts_the_file_again(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    _run(path, 0.05)
    _run(path, 0.06)
    _run(path, 0.07, at="def5678")
    recorded = guard.load(path)
    assert recorded.commit == "def5678" and recorded.figures["build CPU, N=1000 (s)"].ratios == (0.07,)


def test_without_a_file_the_guard_says_so() -> None:
    assert "no recorded figures" in guard.report([Row("x", 1.0, 2.0)], Path("/nonexistent/baseline.json"))


def test_trees_are_the_same_only_when_every_file_has_the_same_bytes(tmp_path: Path) -> None:
    for side in ("a", "b"):
        (tmp_path / side / "prod" / "job").mkdir(parents=True)
        (tmp_path / side / "prod" / "job" / "job.yaml").write_text("kind: PyTorchJob\n")
        (tmp_path / side / "prod" / "kustomization.yaml").write_text("resources: [job]\n")
    assert against.same_tree(tmp_path / "a", tmp_path / "b") == (True, [])
    (tmp_path / "b" / "prod" / "job" / "job.yaml").write_text("kind: PyTorchJob \n")
    (tmp_path / "b" / "prod" / "extra.yaml").write_text("{}\n")
    assert against.same_tree(tmp_path / "a", tmp_path / "b") == (False, ["prod/extra.yaml", "prod/job/job.yaml"])
