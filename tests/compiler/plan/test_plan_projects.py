"""Several projects in one repository: a plan per project, or all in one document.

Each project (the folder holding its trainforge.yaml) is planned with its own project file
and environments; its comment's marker and heading name its folder, so two projects' comments
never overwrite each other; `plan A B` prints one document with a section per project.
"""

from __future__ import annotations

from plan_kit import new_repo, project, running_job

from compiler.plan.markdown import marker


def _two_projects(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("teams/nlp/jobs/trainforge.yaml", project(prod={}))
    repo.write("teams/vision/jobs/trainforge.yaml", project(dev={}, prod={}))
    repo.write("teams/nlp/jobs/bert.yaml", running_job("bert"))
    vision = running_job("resnet")
    vision["metadata"]["namespace"] = "cv"
    repo.write("teams/vision/jobs/resnet.yaml", vision)
    repo.commit()
    repo.edit("teams/nlp/jobs/bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    repo.remove("teams/vision/jobs/resnet.yaml")
    return repo


def test_each_projects_comment_names_its_folder(tmp_path):
    repo = _two_projects(tmp_path)

    nlp = repo.run("--format", "markdown", src="teams/nlp/jobs").stdout.splitlines()
    vision = repo.run("--format", "markdown", src="teams/vision/jobs").stdout.splitlines()

    assert nlp[:2] == [marker(["teams/nlp/jobs"]), "### train-compile plan of `teams/nlp/jobs` against `HEAD`"]
    assert vision[:2] == [marker(["teams/vision/jobs"]), "### train-compile plan of `teams/vision/jobs` against `HEAD`"]
    # a comment found by `startsWith(marker)` is one project's only
    assert not vision[0].startswith(nlp[0][:-4] + " ") and nlp[0] != vision[0]


def test_several_project_folders_give_one_document_with_a_section_per_project(tmp_path):
    repo = _two_projects(tmp_path)
    run = repo.run("--format", "markdown", repo.root / "teams/nlp/jobs", src="teams/vision/jobs")

    lines = run.stdout.splitlines()
    assert run.exit_code == 0, run.stderr
    assert lines[0] == "<!-- trainforge-plan: teams/nlp/jobs teams/vision/jobs -->"
    headings = [line for line in lines if line.startswith("### ")]
    assert headings == ["### train-compile plan of `teams/nlp/jobs` against `HEAD`",
                        "### train-compile plan of `teams/vision/jobs` against `HEAD`"]
    nlp, vision = run.stdout.split("### ")[1:]
    assert "**mixes pods of two specs** in the run of `nlp/bert` in `prod`" in nlp and "cv/" not in nlp
    assert "**kills** `cv/resnet` in `dev` and `prod`" in vision and "nlp/" not in vision


def test_several_projects_in_json_name_their_project_per_environment(tmp_path):
    repo = _two_projects(tmp_path)

    plan = repo.plan(repo.root / "teams/vision/jobs", src="teams/nlp/jobs")

    assert plan["projects"] == ["teams/nlp/jobs", "teams/vision/jobs"]
    assert [(e["project"], e["name"]) for e in plan["environments"]] == [
        ("teams/nlp/jobs", "prod"), ("teams/vision/jobs", "dev"), ("teams/vision/jobs", "prod")]


def test_fail_on_names_the_project_when_there_are_several(tmp_path):
    repo = _two_projects(tmp_path)

    run = repo.run("--fail-on", "kills-run", repo.root / "teams/nlp/jobs", src="teams/vision/jobs")

    assert run.exit_code == 1
    assert ("--fail-on: kills-run would happen to teams/vision/jobs: cv/resnet in dev"
            " (teams/vision/jobs/resnet.yaml:2)") in run.stderr


def test_a_project_at_the_repositorys_root_is_named_so(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("trainforge.yaml", project(prod={}))
    repo.write("bert.yaml", running_job("bert"))
    repo.commit()
    repo.edit("bert.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))

    lines = repo.run("--format", "markdown", src=".").stdout.splitlines()

    assert lines[:2] == [marker(["."]), "### train-compile plan of `the repository's root` against `HEAD`"]
