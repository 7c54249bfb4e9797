"""What a new user hit wiring train-compile into a repository and CI (issue 24), each held
to the exact behaviour: machine formats that stay parseable, an output folder that may
hold a README, one environment per render stream, `validate .` from the repository root,
no green run on empty input, help that says what the commands do.

All through the real CLI, in-process (`run_cli`), on files written to a temporary folder.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from compiler_builders import EXAMPLES, job_text, run_cli

from testworld.assets import kubectl_path

TWO_ENVS = "apiVersion: trainforge.dev/v1alpha1\nkind: Project\nenvironments: {dev: {}, prod: {}}\n"


def _project(root: Path, *, project: str | None = TWO_ENVS) -> Path:
    """A repository: jobs/ (the specs, a trainforge.yaml at its root) and nothing else."""
    jobs = root / "jobs"
    (jobs / "llm").mkdir(parents=True)
    if project is not None:
        (jobs / "trainforge.yaml").write_text(project)
    (jobs / "llm" / "sft.yaml").write_text(job_text(name="sft"))
    return jobs


def _stale_tree(tmp_path: Path) -> tuple[Path, Path]:
    jobs = _project(tmp_path)
    out = tmp_path / "deploy"
    assert run_cli("build", jobs, "-o", out).exit_code == 0
    job = out / "dev/default/sft/pytorchjob.yaml"
    job.write_text(job.read_text().replace("image: ghcr.io/acme/train:1", "image: ghcr.io/acme/train:0"))
    (out / "prod/default/sft/pytorchjob.yaml").unlink()
    return jobs, out


# --- 1. check's machine formats carry staleness and nothing else --------------------------


def test_check_json_is_one_parseable_document_with_each_stale_file(tmp_path):
    jobs, out = _stale_tree(tmp_path)

    run = run_cli("check", jobs, "-o", out, "--format", "json")

    assert run.exit_code == 1
    problems = json.loads(run.stdout)  # no diff after the JSON
    stale = {p["file"]: p for p in problems}
    edited, missing = f"{out}/dev/default/sft/pytorchjob.yaml", f"{out}/prod/default/sft/pytorchjob.yaml"
    assert set(stale) == {edited, missing}
    assert stale[edited]["severity"] == "error"
    assert stale[edited]["message"].startswith("out of date")
    text = (out / "dev/default/sft/pytorchjob.yaml").read_text().splitlines()
    assert "train:0" in text[stale[edited]["line"] - 1]  # positioned at the first differing line
    assert stale[missing]["message"].startswith("missing")
    assert f"run train-compile build {jobs} -o {out}" in stale[edited]["fix"]


def test_check_sarif_has_a_result_per_stale_file_and_parses(tmp_path):
    jobs, out = _stale_tree(tmp_path)

    run = run_cli("check", jobs, "-o", out, "--format", "sarif")

    assert run.exit_code == 1
    log = json.loads(run.stdout)
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"])
    assert [u.rsplit("/", 4)[-4:] for u in uris] == [
        ["dev", "default", "sft", "pytorchjob.yaml"], ["prod", "default", "sft", "pytorchjob.yaml"],
    ]


def test_check_github_annotates_the_stale_files(tmp_path):
    jobs, out = _stale_tree(tmp_path)

    run = run_cli("check", jobs, "-o", out, "--format", "github")

    assert run.exit_code == 1
    lines = run.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("::error file=") for line in lines)
    assert "---" not in run.stdout


def test_check_text_names_each_stale_file_then_prints_the_diff(tmp_path):
    jobs, out = _stale_tree(tmp_path)

    run = run_cli("check", jobs, "-o", out)

    assert run.exit_code == 1
    assert len(run.errors()) == 2
    assert run.stdout.startswith("--- ")
    removed = [line for line in run.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert any(line.strip("- ") == "image: ghcr.io/acme/train:0" for line in removed)


# --- 2. files in the output folder that train-compile did not write ------------------------


def test_build_keeps_a_readme_and_gitkeep_and_check_ignores_them(tmp_path):
    jobs = _project(tmp_path)
    out = tmp_path / "deploy"
    out.mkdir()
    (out / "README.md").write_text("generated; do not edit\n")
    (out / ".gitkeep").write_text("")

    assert run_cli("build", jobs, "-o", out).exit_code == 0
    (out / "dev" / "NOTES.md").write_text("dev is the sandbox\n")
    assert run_cli("build", jobs, "-o", out).exit_code == 0
    run = run_cli("check", jobs, "-o", out)

    assert (out / "README.md").read_text() == "generated; do not edit\n"
    assert (out / ".gitkeep").exists()
    assert (out / "dev" / "NOTES.md").read_text() == "dev is the sandbox\n"
    assert run.exit_code == 0, run.stderr
    assert "is up to date" in run.stderr


def test_build_refuses_to_replace_yaml_it_did_not_write_and_names_the_file(tmp_path):
    jobs = _project(tmp_path)
    out = tmp_path / "deploy"
    (out / "argocd").mkdir(parents=True)
    (out / "argocd" / "app.yaml").write_text("kind: Application\n")

    run = run_cli("build", jobs, "-o", out)

    assert run.exit_code == 1
    assert f"{out}/argocd/app.yaml was not written by train-compile" in run.stderr
    assert "move it out of" in run.stderr and "nothing was written" in run.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["argocd", "argocd/app.yaml"]


# --- 3. render prints one environment -------------------------------------------------------


def test_render_of_a_project_with_two_environments_asks_for_one(tmp_path):
    jobs = _project(tmp_path)

    run = run_cli("render", jobs)

    assert run.exit_code == 2
    assert "the project has 2 environments (dev, prod)" in run.stderr and "--env" in run.stderr
    assert run.stdout == ""


def test_render_with_env_prints_that_environment_only(tmp_path):
    jobs = _project(tmp_path)

    run = run_cli("render", jobs, "--env", "prod")

    assert run.exit_code == 0
    assert run.stdout.count("kind: PyTorchJob") == 1


def test_render_json_of_a_bad_spec_leaves_stderr_one_json_document(tmp_path):
    spec = tmp_path / "bad.yaml"
    spec.write_text(job_text(name="bad", spec="nodez: 2\n"))

    run = run_cli("render", spec, "--format", "json")

    assert run.exit_code == 1 and run.stdout == ""
    (problem,) = json.loads(run.stderr)  # no closing plain line after the document
    assert problem["path"] == "spec.nodez" and problem["severity"] == "error"


# --- 4. validate from the repository root, or one file deep inside it -----------------------


def test_validate_dot_after_a_build_skips_the_compiled_tree_in_one_notice(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()  # a repository: trainforge.yaml at its root, jobs/ and deploy/ below
    (tmp_path / "trainforge.yaml").write_text(TWO_ENVS.replace("prod: {}", "prod: {target: trainer-v2}"))
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "sft.yaml").write_text(job_text(name="sft", spec="runtime: torch-distributed\n"))
    monkeypatch.chdir(tmp_path)
    assert run_cli("build", ".", "-o", "deploy").exit_code == 0

    run = run_cli("validate", ".")

    assert run.exit_code == 0, run.stderr
    assert run.errors() == []  # the trainer.kubeflow.org TrainJob in deploy/ is not ours
    (notice,) = run.notices()
    assert notice.startswith("deploy/") and "that are not TrainJob or Project specs" in notice


def test_validate_of_a_compiled_tree_with_patch_files_says_so_in_one_notice(tmp_path, monkeypatch):
    """A compiled tree's JSON6902 patch files are YAML lists: each used to be a notice of its own."""
    (tmp_path / "trainforge.yaml").write_text(TWO_ENVS)
    spec = "nodes: 2\nstorage: [{name: data, mountPath: /data, claim: imagenet}]\n"
    (tmp_path / "a.yaml").write_text(job_text(name="a", spec=spec))
    (tmp_path / "b.yaml").write_text(job_text(name="b", spec=spec))
    assert run_cli("build", tmp_path / "a.yaml", tmp_path / "b.yaml", "-o", tmp_path / "deploy").exit_code == 0
    patches = sorted((tmp_path / "deploy").rglob("job-patch.yaml"))
    assert len(patches) > 3 and all(yaml.safe_load(p.read_text()).__class__ is list for p in patches)

    run = run_cli("validate", tmp_path / "deploy", tmp_path / "a.yaml")

    assert run.exit_code == 0, run.stderr
    (notice,) = run.notices()
    assert "that are not TrainJob or Project specs" in notice and "a list" in notice


def test_validate_one_file_finds_the_project_above_it(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    _project(tmp_path, project=TWO_ENVS.replace("{dev: {}, prod: {}}", "{dev: {}, prod: {namespace: ml}}"))
    monkeypatch.chdir(tmp_path)

    run = run_cli("validate", "jobs/llm/sft.yaml", "--env", "prod")

    assert run.exit_code == 0, run.stderr
    assert "all specs are valid" in run.stderr


def test_the_project_search_stops_at_the_repository_root(tmp_path):
    (tmp_path / "trainforge.yaml").write_text(TWO_ENVS)  # outside the repository: not its project
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "job.yaml").write_text(job_text())

    run = run_cli("validate", repo / "job.yaml", "--env", "prod")

    assert run.exit_code == 2
    assert "unknown environment 'prod'; the project declares default" in run.stderr


# --- 5. empty input is an error -------------------------------------------------------------


@pytest.mark.parametrize("what", ["an empty folder", "an empty file", "a folder of other YAML"])
def test_empty_input_fails(tmp_path, what):
    source = tmp_path / "src"
    source.mkdir()
    if what == "an empty file":
        source = source / "job.yaml"
        source.write_text("")
    elif what == "a folder of other YAML":
        (source / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")

    run = run_cli("validate", source)

    assert run.exit_code == 1
    (error,) = run.errors()
    assert f"found no TrainJob documents in {source}" in error
    assert "kind: TrainJob" in error


# --- 9. help says what the commands do ------------------------------------------------------


def test_top_level_help_names_both_targets():
    run = run_cli("--help")

    assert "kubeflow.org/v1" in run.stdout and "trainer-v2" in run.stdout and "Argo CD or Flux" in run.stdout


def test_schema_output_help_describes_schemas_not_trees():
    run = run_cli("schema", "--help")

    assert "JSON Schemas" in run.stdout
    assert "kustomize tree" not in run.stdout


def test_examples_still_compile_from_their_folders():
    run = run_cli("validate", EXAMPLES / "project")

    assert run.exit_code == 0, run.stderr


# --- 10. make demo's table ----------------------------------------------------------------


def test_the_demo_table_aligns_every_column_and_shows_memory_and_storage(tmp_path, capsys):
    from compiler.cli import demo
    from compiler.emit.summary import COLUMNS

    assert demo.main([str(EXAMPLES), str(tmp_path / "build")]) == 0
    lines = capsys.readouterr().out.splitlines()
    headers = [i for i, line in enumerate(lines) if line.lstrip().startswith("JOB ")]
    assert len(headers) == 11  # examples/default, mpi-operator, project, project-v2, real-jobs and whole-job-restarts dev/prod
    for start in headers:
        block = [lines[start]]
        for line in lines[start + 1:]:
            if not line.startswith("    "):
                break
            block.append(line)
        columns = [block[0].index(name) for name in COLUMNS]
        for row in block[1:]:  # every cell starts under its header, after two spaces
            assert all(row[at - 2:at] == "  " and row[at] != " " for at in columns[1:]), row
    kitchen = next(line for line in lines if "ml-platform/kitchen-sink" in line)
    assert "512Gi" in kitchen and "data (claim the-pile), ckpt 2Ti" in kitchen and "3 Worker" in kitchen
    assert any("1 Chief, 3 Worker, 2 PS, 1 Evaluator" in line for line in lines)
    assert any("hpc/allreduce-intel" in line and "MPIJob" in line and "1 Launcher, 3 Worker" in line for line in lines)


def test_build_prints_the_demo_table_of_what_it_wrote(tmp_path, capsys):
    from compiler.cli import demo

    run = run_cli("build", EXAMPLES / "project", "-o", tmp_path / "out")
    assert demo.main([str(EXAMPLES), str(tmp_path / "build")]) == 0
    shown = capsys.readouterr().out.splitlines()

    assert run.exit_code == 0, run.stderr
    lines = run.stderr.splitlines()
    assert lines[0].startswith("train-compile: wrote 6 job(s) for 2 environment(s) (dev, prod)")
    prod = lines[lines.index("  prod: 3 job(s)") + 1:]
    # the rows the demo prints for project/prod, cell for cell
    demo_prod = shown[next(i for i, line in enumerate(shown) if line.startswith("  project/prod:")) + 1:][:4]
    assert prod[:4] == demo_prod
    assert any("nlp/bert-finetune" in row and "1 Master, 3 Worker" in row and "32" in row for row in prod)


# --- 7. YAML mistakes explained -----------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(job_text("command: [python,\n  train.py\n"),
                 "10:1: error: expected ',' or ']', but got '<stream end>', while parsing a flow sequence at 8:12;",
                 id="an unclosed [ names the line that opened it"),
    pytest.param(job_text().replace("  image:", "\timage:"),
                 "7:1: error: a tab character where YAML expects indentation or a value; indent with spaces",
                 id="a tab says to use spaces"),
    pytest.param(job_text("resources: {gpu: 1}\nframework: {name: jax}\n"),
                 'error: duplicate key "framework", first at 6:3; keep one of them',
                 id="a duplicate key names the first, without the value's repr"),
])
def test_yaml_mistakes_are_explained(tmp_path, text, expected):
    (tmp_path / "job.yaml").write_text(text)

    run = run_cli("validate", tmp_path / "job.yaml")

    assert run.exit_code == 1
    (error,) = run.errors()
    assert expected in error
    assert "{" not in error.split("error: ", 1)[1]  # no Python dict repr


# --- 6. advice that works: null unsets a field for one environment ------------------------

V2_PROJECT = "apiVersion: trainforge.dev/v1alpha1\nkind: Project\nenvironments: {dev: {}, prod: {target: trainer-v2}}\n"
MPI_WITH_LAUNCHER = job_text("nodes: 2\nroles:\n  launcher: {resources: {cpu: 2}}\n", name="hvd", framework="mpi")


def test_roles_under_trainer_v2_are_refused_with_advice_that_then_works(tmp_path):
    (tmp_path / "trainforge.yaml").write_text(V2_PROJECT)
    (tmp_path / "job.yaml").write_text(MPI_WITH_LAUNCHER)

    refused = run_cli("validate", tmp_path)
    (error,) = refused.errors()
    assert "unset it for this environment with environments.prod.roles: null" in error

    (tmp_path / "job.yaml").write_text(MPI_WITH_LAUNCHER + "  environments:\n    prod:\n      roles: null\n")
    taken = run_cli("build", tmp_path, "-o", tmp_path / "out")

    assert taken.exit_code == 0, taken.stderr
    assert "launcher" in (tmp_path / "out/dev/default/hvd/mpijob.yaml").read_text().lower()  # dev keeps its launcher role


def test_a_job_left_out_of_an_environment_with_null_exists_in_the_others_only(tmp_path):
    import jsonschema
    from compiler_builders import REPO

    (tmp_path / "trainforge.yaml").write_text(V2_PROJECT)
    (tmp_path / "pt.yaml").write_text(job_text(name="pt"))
    (tmp_path / "tf.yaml").write_text(job_text(name="tf", framework="tensorflow"))
    (refused,) = run_cli("validate", tmp_path).errors()
    assert "tf.yaml:6:3: error: spec.framework: tensorflow " in refused and "trainer-v2" in refused  # v2 has no TFJob

    left = job_text(name="tf", framework="tensorflow") + "  environments:\n    prod: null\n"
    (tmp_path / "tf.yaml").write_text(left)
    out = tmp_path / "out"
    taken = run_cli("build", tmp_path, "-o", out)

    assert taken.exit_code == 0, taken.stderr
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.yaml")) == [
        "dev/default/namespace.yaml", "dev/default/pt/kustomization.yaml", "dev/default/pt/pytorchjob.yaml",
        "dev/default/tf/kustomization.yaml", "dev/default/tf/tfjob.yaml", "dev/kustomization.yaml",
        "prod/_prerequisites/kustomization.yaml", "prod/default/kustomization.yaml",  # what Flux syncs first
        "prod/default/namespace.yaml", "prod/default/pt/kustomization.yaml", "prod/default/pt/trainjob.yaml",
        "prod/kustomization.yaml",
    ]
    prod = run_cli("render", tmp_path, "--env", "prod")
    assert [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(prod.stdout)] == [
        ("Namespace", "default"), ("TrainJob", "pt")]
    schema = json.loads((REPO / "schemas/trainjob.schema.json").read_text())
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(left)))  # the editor agrees


def test_an_override_unsets_a_field_with_null_in_the_compiler_and_the_editor_schema(tmp_path):
    """null unsets a field for one environment; the image only where the runtime brings one
    (trainer-v2): a kubeflow-v1 environment's pods need it, which review says, not the schema."""
    import jsonschema
    import yaml
    from compiler_builders import REPO

    schema = json.loads((REPO / "schemas/trainjob.schema.json").read_text())
    (tmp_path / "trainforge.yaml").write_text(V2_PROJECT)
    for field, env, refused in (("image", "prod", False), ("image", "dev", True), ("roles", "dev", False),
                                ("workingDir", "dev", False), ("podTemplate", "dev", False)):
        text = job_text(name="bert") + f"  environments:\n    {env}:\n      {field}: null\n"
        (tmp_path / "job.yaml").write_text(text)
        run = run_cli("validate", tmp_path)

        editor = list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(text)))
        assert (run.exit_code == 1) is refused, (field, env, run.stderr)
        assert not editor, (field, [e.message for e in editor])
        if refused:
            assert "spec.environments.dev.image: is required" in run.stderr


# --- 8. the compiled output points back to its spec, and names the list items it patches ----

KUBECTL = str(kubectl_path())
WITH_COMPONENTS = """\
storage:
  - {name: ckpt, mountPath: /ckpt, size: 10Gi}
serviceAccount: {create: true}
"""


def test_each_compiled_file_names_its_spec_from_the_repository_root_from_any_folder(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    jobs = _project(repo)
    second = job_text(WITH_COMPONENTS, name="ckpt")
    (jobs / "llm" / "sft.yaml").write_text(job_text(name="sft") + "---\n" + second)
    second_line = len(job_text(name="sft").splitlines()) + 2  # its apiVersion, after the ---

    monkeypatch.chdir(repo)
    assert run_cli("build", "jobs", "-o", tmp_path / "a").exit_code == 0
    monkeypatch.chdir(jobs / "llm")
    assert run_cli("build", "..", "-o", tmp_path / "b").exit_code == 0

    a = {str(p.relative_to(tmp_path / "a")): p.read_text() for p in (tmp_path / "a").rglob("*.yaml")}
    b = {str(p.relative_to(tmp_path / "b")): p.read_text() for p in (tmp_path / "b").rglob("*.yaml")}
    assert a == b  # same bytes whichever folder build ran in
    job_files = {path: text for path, text in a.items() if path.startswith("dev/default/ckpt/")
                 and not path.endswith("kustomization.yaml")}
    assert {path.split("/", 3)[3] for path in job_files} >= {
        "pytorchjob.yaml", "rbac/job-patch.yaml", "rbac/serviceaccount-ckpt.yaml", "storage/job-patch.yaml",
        "storage/persistentvolumeclaim-ckpt-ckpt.yaml"}
    for path, text in job_files.items():
        assert text.splitlines()[0] == (f"# From jobs/llm/sft.yaml:{second_line} (TrainJob ckpt); "
                                        "compiled by train-compile: edit the spec, not this file"), path
    assert a["dev/default/sft/pytorchjob.yaml"].startswith("# From jobs/llm/sft.yaml:1 (TrainJob sft);")
    assert not a["dev/default/ckpt/kustomization.yaml"].startswith("#")


def test_outside_a_repository_the_pointer_is_the_path_the_run_was_given(tmp_path, monkeypatch):
    jobs = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert run_cli("build", "jobs", "-o", "deploy").exit_code == 0
    assert (tmp_path / "deploy/dev/default/sft/pytorchjob.yaml").read_text().startswith(
        "# From jobs/llm/sft.yaml:1 (TrainJob sft);")
    assert jobs.is_dir()


@pytest.mark.parametrize(("example", "env", "job", "patch", "tests"), [
    ("project-v2", "prod", "ml/fraud-xgboost/trainjob.yaml", "rbac/job-patch.yaml",
     [("/spec/runtimePatches/0/manager", "trainforge.dev/compiler"),
      ("/spec/runtimePatches/0/trainingRuntimeSpec/template/spec/replicatedJobs/0/name", "node")]),
    ("kitchen-sink.yaml", "default", "ml-platform/kitchen-sink/pytorchjob.yaml", "storage/job-patch.yaml",
     [("/spec/pytorchReplicaSpecs/Worker/template/spec/containers/0/name", "pytorch")]),
])
def test_a_patch_through_a_list_position_tests_the_item_and_kustomize_refuses_a_moved_one(
        tmp_path, example, env, job, patch, tests):
    out = tmp_path / "out"
    assert run_cli("build", EXAMPLES / example, "-o", out).exit_code == 0
    ops = yaml.safe_load((out / env / Path(job).parent / patch).read_text())
    guards = [(op["path"], op["value"]) for op in ops if op["op"] == "test"]
    assert guards == tests
    for path, _ in guards:  # each test comes before the first operation that walks through it
        first = next(i for i, op in enumerate(ops) if op["op"] != "test" and op["path"].startswith(path.rsplit("/", 1)[0]))
        assert ops.index({"op": "test", "path": path, "value": dict(guards)[path]}) < first
    assert subprocess.run([KUBECTL, "kustomize", str(out / env)], capture_output=True, timeout=60).returncode == 0

    # the named item moved (renamed here): kustomize stops instead of patching another one
    name = tests[-1][1]
    target = out / env / job
    target.write_text(target.read_text().replace(f"- name: {name}\n", f"- name: {name}-moved\n", 1))
    proc = subprocess.run([KUBECTL, "kustomize", str(out / env)], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert f"testing value {tests[-1][0]} failed" in proc.stderr
