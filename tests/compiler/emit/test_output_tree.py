"""The output folder: deterministic, checkable, replaced atomically, never someone else's.

All through the real CLI on the top-level examples (a realistic tree with components)
or a small job, comparing trees as `{relative path: text}` maps read from disk.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler_builders import EXAMPLES, example_files, job_text, run_cli


def trainer_v2_files() -> list[Path]:
    """The migration project's jobs (prod targets trainer-v2), its trainforge.yaml beside them."""
    return sorted(p for p in (EXAMPLES / "project-v2").glob("*.yaml") if p.name != "trainforge.yaml")


# the output guarantees hold for every target: kubeflow-v1 jobs and trainer-v2 TrainJobs
TARGET_SOURCES = [
    pytest.param(example_files, id="kubeflow-v1 examples"),
    pytest.param(trainer_v2_files, id="a project with a trainer-v2 environment"),
]


def read_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*")) if p.is_file()}


def build(*args) -> None:
    run = run_cli("build", *args)
    assert run.exit_code == 0, run.stderr


@pytest.mark.parametrize("sources", TARGET_SOURCES)
def test_building_the_same_input_twice_gives_byte_identical_trees(tmp_path, sources):
    build(*sources(), "-o", tmp_path / "one")
    build(*sources(), "-o", tmp_path / "two")

    one, two = read_tree(tmp_path / "one"), read_tree(tmp_path / "two")
    assert len(one) > 20
    assert one == two


@pytest.mark.parametrize("sources", TARGET_SOURCES)
def test_rebuilding_in_place_changes_nothing(tmp_path, sources):
    out = tmp_path / "out"
    build(*sources(), "-o", out)
    before = {p: (out / p).read_bytes() for p in read_tree(out)}

    build(*sources(), "-o", out)

    assert {p: (out / p).read_bytes() for p in read_tree(out)} == before


@pytest.mark.parametrize("sources", TARGET_SOURCES)
def test_source_order_does_not_change_the_output(tmp_path, sources):
    build(*sources(), "-o", tmp_path / "forward")
    build(*reversed(sources()), "-o", tmp_path / "backward")

    assert read_tree(tmp_path / "forward") == read_tree(tmp_path / "backward")


@pytest.mark.parametrize("sources", TARGET_SOURCES)
def test_every_output_file_ends_with_one_newline(tmp_path, sources):
    build(*sources(), "-o", tmp_path / "out")

    for path, text in read_tree(tmp_path / "out").items():
        assert text.endswith("\n") and not text.endswith("\n\n"), path


def test_the_tree_has_the_documented_layout(tmp_path):
    build(*example_files(), "-o", tmp_path / "out")

    files = set(read_tree(tmp_path / "out"))
    assert "default/kustomization.yaml" in files
    assert {"default/nlp/bert-finetune/kustomization.yaml", "default/nlp/bert-finetune/pytorchjob.yaml",
            "default/vision/horovod-mnist/mpijob.yaml", "default/recsys/widedeep-recsys/tfjob.yaml"} <= files
    components = {path.split("/")[3] for path in files if path.startswith("default/ml-platform/kitchen-sink/")
                  and path.count("/") == 4}
    assert components == {"rbac", "storage", "scheduling"}


# --- check ---------------------------------------------------------------------------------


@pytest.fixture
def fresh(tmp_path) -> Path:
    out = tmp_path / "out"
    build(*example_files(), "-o", out)
    return out


@pytest.mark.parametrize("sources", TARGET_SOURCES)
def test_check_passes_on_a_fresh_build(tmp_path, sources):
    fresh = tmp_path / "out"
    build(*sources(), "-o", fresh)

    run = run_cli("check", *sources(), "-o", fresh)

    assert run.exit_code == 0
    assert run.stdout == ""
    assert "is up to date" in run.stderr


def test_check_fails_with_a_diff_after_a_file_is_edited(fresh):
    job = fresh / "default/nlp/bert-finetune/pytorchjob.yaml"
    job.write_text(job.read_text().replace("replicas: 3", "replicas: 5"))

    run = run_cli("check", *example_files(), "-o", fresh)

    assert run.exit_code == 1
    assert f"--- {fresh}/default/nlp/bert-finetune/pytorchjob.yaml" in run.stdout
    assert "-      replicas: 5\n+      replicas: 3\n" in run.stdout
    assert "is stale; run train-compile build" in run.stderr


def test_check_fails_when_a_file_is_missing_or_extra(fresh):
    (fresh / "default/risk/fraud-xgb/xgboostjob.yaml").unlink()
    (fresh / "default/risk/fraud-xgb/notes.yaml").write_text("a: b\n")

    run = run_cli("check", *example_files(), "-o", fresh)

    assert run.exit_code == 1
    assert f"+++ {fresh}/default/risk/fraud-xgb/xgboostjob.yaml" in run.stdout
    assert f"--- {fresh}/default/risk/fraud-xgb/notes.yaml\n+++ /dev/null" in run.stdout


def test_check_fails_when_the_spec_changed_since_the_build(fresh, tmp_path):
    sources = tmp_path / "src"
    sources.mkdir()
    for path in example_files():
        shutil.copy(path, sources / path.name)
    (sources / "jax-t5x.yaml").write_text((sources / "jax-t5x.yaml").read_text().replace("nodes: 2", "nodes: 3"))

    run = run_cli("check", sources, "-o", fresh)

    assert run.exit_code == 1
    assert "-      replicas: 2\n+      replicas: 3\n" in run.stdout


def test_check_reports_invalid_input_like_validate(fresh, tmp_path):
    (tmp_path / "job.yaml").write_text(job_text("nodes: 0\n"))

    run = run_cli("check", tmp_path / "job.yaml", "-o", fresh)

    assert run.exit_code == 1
    assert len(run.errors()) == 1


# --- atomic writes -------------------------------------------------------------------------


def test_a_failed_build_leaves_the_previous_output_untouched(tmp_path):
    sources, out = tmp_path / "src", tmp_path / "out"
    sources.mkdir()
    (sources / "job.yaml").write_text(job_text("nodes: 2\n"))
    build(sources, "-o", out)
    before = read_tree(out)
    siblings = sorted(p.name for p in tmp_path.iterdir())

    (sources / "job.yaml").write_text(job_text("nodes: 0\n"))
    (sources / "other.yaml").write_text(job_text(name="other"))
    run = run_cli("build", sources, "-o", out)

    assert run.exit_code == 1
    assert "nothing was written" in run.stderr
    assert read_tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == siblings  # no staging folder left behind


def test_a_failed_first_build_creates_nothing(tmp_path):
    (tmp_path / "job.yaml").write_text(job_text("nodes: 0\n"))

    run = run_cli("build", tmp_path / "job.yaml", "-o", tmp_path / "out")

    assert run.exit_code == 1
    assert not (tmp_path / "out").exists()


def test_a_removed_job_disappears_from_the_rebuilt_tree(tmp_path):
    sources, out = tmp_path / "src", tmp_path / "out"
    sources.mkdir()
    (sources / "a.yaml").write_text(job_text(name="ay"))
    (sources / "b.yaml").write_text(job_text(name="bee"))
    build(sources, "-o", out)
    (sources / "b.yaml").unlink()

    build(sources, "-o", out)

    assert not (out / "default/default/bee").exists()
    assert (out / "default/default/ay/pytorchjob.yaml").is_file()


def test_build_keeps_files_it_did_not_write_and_refuses_foreign_yaml(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("keep me\n")
    (tmp_path / "job.yaml").write_text(job_text())

    assert run_cli("build", tmp_path / "job.yaml", "-o", out).exit_code == 0
    assert read_tree(out)["README.md"] == "keep me\n"

    (out / "mine").mkdir()
    (out / "mine" / "app.yaml").write_text("kind: Application\n")
    before = read_tree(out)
    run = run_cli("build", tmp_path / "job.yaml", "-o", out)

    assert run.exit_code == 1
    assert f"{out}/mine/app.yaml was not written by train-compile" in run.stderr
    assert read_tree(out) == before


def test_build_refuses_an_output_path_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("not a folder\n")
    (tmp_path / "job.yaml").write_text(job_text())

    run = run_cli("build", tmp_path / "job.yaml", "-o", tmp_path / "out")

    assert run.exit_code == 1
    assert "is a file, not a folder" in run.stderr
    assert (tmp_path / "out").read_text() == "not a folder\n"


def test_build_with_env_keeps_the_other_environments(tmp_path):
    sources, out = tmp_path / "src", tmp_path / "out"
    sources.mkdir()
    (sources / "trainforge.yaml").write_text(
        "apiVersion: trainforge.dev/v1alpha1\nkind: Project\nenvironments: {dev: {}, prod: {}}\n"
    )
    (sources / "job.yaml").write_text(job_text())
    build(sources, "-o", out)
    prod_before = {k: v for k, v in read_tree(out).items() if k.startswith("prod/")}
    (sources / "job.yaml").write_text(job_text("nodes: 2\n"))

    build(sources, "-o", out, "--env", "dev")

    tree = read_tree(out)
    assert {k: v for k, v in tree.items() if k.startswith("prod/")} == prod_before
    assert "Worker" in tree["dev/default/demo/pytorchjob.yaml"]
