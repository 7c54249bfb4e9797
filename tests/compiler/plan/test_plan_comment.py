"""The plan as a pull request comment: the worst first, always under GitHub's limit, parsed as
GitHub renders it, the same bytes for the same change.

The size bound is tested where it broke: a 1,000-spec repository (bench.specs, the compiler
benchmark's) whose project file changes a label of every job, so every job changes and has
hazards in its one environment (a new user measured a 913,324-byte comment there). The
comment is parsed with markdown-it-py (CommonMark with GitHub's tables, as GitHub renders a
comment), so a table that swallows a line or a `<details>` that eats the text after it fails.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from plan_kit import new_repo, project, running_job

from compiler_builders import job_doc, run_cli
from compiler.plan import build, markdown
from compiler.plan.markdown import BUDGET, LIMIT, marker


def parse(text: str) -> list:
    return MarkdownIt("commonmark").enable("table").parse(text)


def tables(tokens: list) -> list[tuple[list[str], int]]:
    """(header cells, body rows) of each table."""
    out: list[tuple[list[str], int]] = []
    header: list[str] = []
    rows, where = 0, None
    for token in tokens:
        if token.type in ("thead_open", "tbody_open"):
            where = token.type
        elif token.type == "table_open":
            header, rows = [], 0
        elif token.type == "inline" and where == "thead_open":
            header.append(token.content)
        elif token.type == "tr_open" and where == "tbody_open":
            rows += 1
        elif token.type == "table_close":
            out.append((header, rows))
            where = None
    return out


def html_blocks(tokens: list) -> list[str]:
    return [t.content.strip() for t in tokens if t.type == "html_block"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """The 1,000-spec repository, a project-level label change, planned as a comment with the full
    plan written aside; (comment, full plan, repository)."""
    from bench import specs

    repo = new_repo(tmp_path_factory.mktemp("big"))
    specs.write(repo.root / "jobs", 1000)
    repo.commit()
    path = repo.root / "jobs" / "trainforge.yaml"
    path.write_text(path.read_text().replace("labels: {owner: bench}", "labels: {owner: ml-platform}"))
    full = repo.root.parent / "plan-full.md"
    run = run_cli("plan", repo.root / "jobs", "--base", "main", "--format", "markdown", "--output", full)
    assert run.exit_code == 0, run.stderr
    return run.stdout, full.read_text(), repo


def test_a_project_label_change_across_1000_specs_fits_a_comment(big):
    comment, full, _ = big

    assert len(comment.encode()) <= BUDGET < LIMIT  # bytes: never fewer than GitHub's characters
    assert len(full.encode()) > 10 * LIMIT  # what would not have fitted: every job's sentence and fields
    assert full.count("\n- **`") == 1000


def test_the_summary_leads_with_the_totals_and_lists_jobs_with_hazards_while_they_fit(big):
    comment, _, _ = big
    lines = comment.splitlines()

    assert lines[0] == marker(["jobs"])
    assert lines[1] == "### train-compile plan of `jobs` against `main`"
    assert lines[3].startswith("Merging this **runs** `nlp/job-00000`, `nlp/job-00004`, `nlp/job-00008` and 997 more"
                               " in `prod` again once finished (ttlAfterFinished); **mixes pods of two specs** in the"
                               " runs of ")
    assert "**Plan:** + 0 to create, ~ 1000 to update, - 0 to delete, ± 0 to rename; 0 unchanged" in lines
    listed = [line for line in lines if re.match(r"- `[a-z]+/job-\d{5}` update, ", line)]
    (rest,) = [line for line in lines if line.startswith("- and ")]
    assert rest == f"- and {1000 - len(listed)} more jobs with hazards (in the full plan)"
    assert len(listed) > 100
    assert "- 0 jobs changed without a hazard, 0 unchanged" in lines
    assert re.search(r"This comment is the summary \(the whole plan is [0-9,]{7} bytes; a comment holds 65,536"
                     r" characters\): the full plan, every job's sentence and the fields it changes, is in"
                     r" `plan-full.md`, the CI job's artifact\.", comment)
    assert "<details>" not in comment  # the details are the full plan's


def test_the_size_the_summary_gives_is_the_full_plans(big):
    comment, full, _ = big

    said = re.search(r"the whole plan is ([0-9,]+) bytes", comment)
    assert said and int(said.group(1).replace(",", "")) == len(full.encode())


def test_the_full_plan_written_aside_is_the_whole_markdown(big):
    _, full, _ = big
    tokens = parse(full)

    (summary, details) = tables(tokens)
    assert summary == (["environment", "changes", "hazards", "GPUs", "GPU-hours added at most"], 1)
    assert details == (["change", "job", "kind", "GPUs", "state", "hazards"], 1000)


def test_the_same_base_and_head_give_the_same_bytes(tmp_path):
    """Two clones of the same commits, their files written in opposite orders, the project folders
    named in opposite orders, planned at different times: the same bytes in every format."""
    from bench import specs

    runs = []
    for n, order in enumerate((sorted, lambda paths: sorted(paths, reverse=True))):
        repo = new_repo(tmp_path / str(n))
        src = tmp_path / f"src-{n}"
        specs.write(src, 12)
        for path in order(src.rglob("*.yaml")):  # created in this order
            rel = path.relative_to(src)
            repo.text(f"jobs/{rel}", path.read_text())
            repo.text(f"more/{rel}", path.read_text().replace("job-", "more-"))
        repo.commit()
        for folder in ("jobs", "more"):
            project_file = repo.root / folder / "trainforge.yaml"
            project_file.write_text(project_file.read_text().replace("owner: bench", "owner: ml"))
        folders = [repo.root / "jobs", repo.root / "more"]
        runs.append([run_cli("plan", *(folders if n == 0 else folders[::-1]), "--base", "main", "--format", fmt,
                             "--output", tmp_path / f"out-{n}" / "plan-full").stdout
                     for fmt in ("markdown", "json", "text", "github")])

    assert runs[0] == runs[1]
    assert runs[0][0].startswith("<!-- trainforge-plan: jobs more -->\n")


@pytest.fixture
def small(tmp_path):
    """Three jobs in prod: bert scaled (mixed-run), t5 renamed (kills-run, restarts-run), sweep removed."""
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.write("jobs/t5.yaml", running_job("t5"))
    repo.write("jobs/sweep.yaml", running_job("sweep"))
    repo.write("jobs/quiet.yaml", running_job("quiet"))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    repo.edit("jobs/t5.yaml", lambda docs: docs[0]["metadata"].__setitem__("name", "t5-v2"))
    repo.remove("jobs/sweep.yaml")
    return repo


def _plans(repo, *, now=None):
    return build.make([repo.root / "jobs"], base="HEAD", env=None, accepts=[], read_live=None,
                      now=now or datetime.now(timezone.utc))


def test_the_headline_says_each_hazard_with_its_job_and_environment_worst_first(small):
    text = small.run().stdout.splitlines()

    assert text[1] == ("Merging this kills nlp/sweep and nlp/t5 in prod; restarts nlp/t5-v2 in prod from the"
                       " beginning; mixes pods of two specs in the run of nlp/bert in prod.")
    assert text[2] == "Plan: + 0 to create, ~ 1 to update, - 1 to delete, ± 1 to rename; 1 unchanged"
    assert text[3] == "Hazards: 2 kills-run, 1 restarts-run, 1 mixed-run"


def test_the_whole_comment_parses_as_github_renders_it(small):
    comment = small.run("--format", "markdown").stdout
    tokens = parse(comment)

    assert tables(tokens) == [(["environment", "changes", "hazards", "GPUs", "GPU-hours added at most"], 1),
                              (["change", "job", "kind", "GPUs", "state", "hazards"], 3)]
    blocks = html_blocks(tokens)
    assert blocks[0] == marker(["jobs"])
    assert blocks[1].startswith("<details><summary>prod (kubeflow-v1, training-operator): 3 changes, 1 unchanged")
    assert blocks[2] == "</details>"
    # each job's sentence is a list item of its own, after the table, inside the details
    items = [t.content for t in tokens if t.type == "inline" and t.content.startswith("**`nlp/")]
    assert [i.split("`")[1] for i in items] == ["nlp/bert", "nlp/t5-v2", "nlp/sweep"]
    # the assumptions after </details> are their own paragraph, not swallowed by the block
    assert tokens[-2].type == "inline" and tokens[-2].content.startswith("<sub>assumes engines")


def test_the_summary_comment_parses_too(small):
    comment = markdown.markdown(_plans(small), full_plan="plan-full.md", budget=1_900)  # the whole: 2,192
    tokens = parse(comment)

    assert len(comment.encode()) <= 1_900
    assert tables(tokens) == [(["environment", "changes", "hazards", "GPUs", "GPU-hours added at most"], 1)]
    items = [t.content for t in tokens if t.type == "inline" and re.match(r"`nlp/[a-z0-9-]+", t.content)]
    assert items[0] == "`nlp/sweep` delete, PyTorchJob, 16 -> 0 (-16) GPUs: kills-run (`jobs/sweep.yaml:2`)"
    assert [i.split("`")[1] for i in items] == ["nlp/sweep", "nlp/t5-v2 (from nlp/t5)", "nlp/bert"]  # worst first
    assert "- 0 jobs changed without a hazard, 1 unchanged" in comment


def test_offline_the_clock_changes_no_byte(small):
    plans = [_plans(small, now=datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(days=d)) for d in (0, 300)]

    assert markdown.markdown(plans[0]) == markdown.markdown(plans[1])


def test_the_flux_refusal_of_a_whole_environment_is_never_folded(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={"target": "trainer-v2"}))
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.write("jobs/old.yaml", running_job("old"))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    repo.remove("jobs/old.yaml")

    comment = repo.run("--format", "markdown").stdout

    sentence = comment.splitlines()[3]
    assert sentence == ("Merging this **kills** `nlp/old` in `prod`; **cannot update** `nlp/bert` in `prod` (the API"
                        " server refuses the change); Flux refuses the whole `prod` environment until the refused"
                        " change is reverted or its object deleted: nothing of this commit lands there (Argo CD"
                        " applies the rest).")
    folded = comment.index("<details>")
    assert comment.index("> **prod:** a refused object fails the environment's sync") < folded


@pytest.mark.parametrize(("edit", "says"), [
    pytest.param(lambda r: r.write("jobs/one.yaml", job_doc("pytorch", name="one", namespace="nlp", nodes=1,
                                                            resources={"gpu": 1})),
                 "New job: 1 Master (1 GPU).", id="one GPU is a GPU"),
    pytest.param(lambda r: r.write("jobs/bert.yaml", job_doc("jax", name="bert", namespace="nlp")),
                 "| rename | `nlp/bert (was PyTorchJob)` | JAXJob |", id="a framework switch says the old kind"),
])
def test_the_wording(tmp_path, edit, says):
    repo = new_repo(tmp_path)
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.commit()
    edit(repo)

    assert says in repo.run("--format", "markdown").stdout


@pytest.mark.parametrize("others", [1, 2], ids=["one job unchanged", "two jobs unchanged"])
def test_the_text_counts_unchanged_jobs_in_agreement_with_their_number(tmp_path, others):
    repo = new_repo(tmp_path, project=project(prod={}))
    for name in ["bert", *(f"other{i}" for i in range(others))]:
        repo.write(f"jobs/{name}.yaml", running_job(name))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    text = repo.run().stdout

    assert f"    ({others} {'job' if others == 1 else 'jobs'} unchanged)" in text
    assert "(s)" not in text


def test_the_changes_cell_counts_with_symbols(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={}))
    for i in range(12):
        repo.write(f"jobs/j{i}.yaml", running_job(f"j{i}"))
    repo.commit()
    for i in range(12):
        repo.edit(f"jobs/j{i}.yaml", lambda docs: docs[0]["metadata"].__setitem__("annotations", {"a": "b"}))
    repo.write("jobs/new.yaml", running_job("new"))

    comment = repo.run("--format", "markdown").stdout

    assert "| prod | + 1 to create, ~ 12 to update | none |" in comment
    assert "**Plan:** + 1 to create, ~ 12 to update, - 0 to delete, ± 0 to rename; 0 unchanged" in comment
    assert "Merging this changes 13 jobs and puts no run at risk." in comment


def test_a_comment_of_two_environments_counts_each_job_once_per_environment(tmp_path):
    repo = new_repo(tmp_path, project=project(dev={}, prod={}))
    repo.write("jobs/bert.yaml", running_job("bert"))
    repo.commit()
    repo.remove("jobs/bert.yaml")

    text = repo.run().stdout.splitlines()

    assert text[1] == "Merging this kills nlp/bert in dev and prod."
    assert text[2] == ("Plan: + 0 to create, ~ 0 to update, - 2 to delete, ± 0 to rename; 0 unchanged (each job"
                       " counted once per environment, 2 environments)")


def test_output_writes_the_full_plan_in_the_chosen_format(small, tmp_path):
    out = tmp_path / "artifacts" / "plan.json"

    run = small.run("--format", "json", "--output", str(out))

    assert run.exit_code == 0, run.stderr
    assert out.read_text() == run.stdout


def test_output_that_cannot_be_written_exits_1_naming_it(small, tmp_path):
    (tmp_path / "file").write_text("")

    run = small.run("--output", str(tmp_path / "file" / "plan.md"))

    assert run.exit_code == 1
    assert f"cannot write --output {tmp_path / 'file' / 'plan.md'}" in run.stderr


def test_the_comment_pointer_names_the_command_without_output(small):
    comment = markdown.markdown(_plans(small), budget=1_900)

    assert "is in `train-compile plan jobs --base HEAD --output FILE`." in comment


def test_paths_are_relative_to_the_repository_on_any_machine(small):
    comment = small.run("--format", "markdown").stdout

    assert str(small.root) not in comment and str(Path.home()) not in comment


def test_a_comment_of_many_projects_fits_too(tmp_path):
    """Forty projects of one repository in one comment with a budget the size of a few: each said
    in brief (its sentence and totals) while they fit, the rest counted."""
    repo = new_repo(tmp_path)
    for i in range(40):
        repo.write(f"p{i:02d}/trainforge.yaml", project(prod={}))
        repo.write(f"p{i:02d}/job.yaml", running_job(f"job-{i}"))
    repo.commit()
    for i in range(40):
        repo.remove(f"p{i:02d}/job.yaml")
        repo.write(f"p{i:02d}/other.yaml", running_job(f"other-{i}"))
    plans = build.make([repo.root / f"p{i:02d}" for i in range(40)], base="HEAD", env=None, accepts=[],
                       read_live=None, now=datetime.now(timezone.utc))

    comment = markdown.markdown(plans, budget=6_000)

    assert len(comment.encode()) <= 6_000
    said = [line for line in comment.splitlines() if line.startswith("### train-compile plan of `p")]
    assert 3 <= len(said) < 40
    assert comment.rstrip().endswith(f"And {40 - len(said)} more projects: the full plan has them.")
    assert "Merging this **kills** `nlp/job-0` in `prod`" in comment
