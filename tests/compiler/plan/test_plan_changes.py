"""`train-compile plan`: which change each job makes (the contract's matching rules).

Matched by namespace and name first; the same namespace and name under another kind is a
rename by kind; an unmatched old and new job from the same spec document (same file, same
position among its unmatched documents) is a rename; `update` against `unchanged` is judged
on the compiled objects; every job of either side is listed once per environment.
"""

from __future__ import annotations

from plan_kit import env_of, job_of, new_repo, project, running_job

from compiler_builders import job_doc


def test_a_new_file_is_a_create_and_a_removed_one_a_delete(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/old.yaml", running_job("old"))
    repo.commit()
    repo.remove("jobs/old.yaml")
    repo.write("jobs/new.yaml", running_job("fresh"))

    plan = repo.plan()

    assert job_of(plan, "old")["change"] == "delete"
    assert job_of(plan, "old")["source"] == "jobs/old.yaml"
    assert job_of(plan, "fresh")["change"] == "create"
    assert job_of(plan, "fresh")["fields"] == [] and job_of(plan, "old")["fields"] == []


def test_a_renamed_job_in_its_own_document_is_a_rename_from_its_old_name(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/bert.yaml", running_job("bert"), running_job("other"))
    repo.commit()
    repo.edit("jobs/bert.yaml", lambda docs: docs[0]["metadata"].__setitem__("name", "bert-run2"))

    plan = repo.plan()

    job = job_of(plan, "bert-run2")
    assert (job["change"], job["renamedFrom"]) == ("rename", "nlp/bert")
    assert [j["name"] for j in env_of(plan)["jobs"]] == ["bert-run2", "other"]  # the old name is not listed again
    assert job_of(plan, "other")["change"] == "unchanged"


def test_renames_pair_by_position_among_a_files_unmatched_documents(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/many.yaml", running_job("a"), running_job("b"), running_job("c"))
    repo.commit()

    def rename(docs):
        docs[0]["metadata"]["name"] = "a2"
        docs[2]["metadata"]["name"] = "c2"
    repo.edit("jobs/many.yaml", rename)

    plan = repo.plan()

    assert job_of(plan, "a2")["renamedFrom"] == "nlp/a"
    assert job_of(plan, "c2")["renamedFrom"] == "nlp/c"
    assert job_of(plan, "b")["change"] == "unchanged"


def test_a_job_moved_to_another_file_under_a_new_name_is_a_delete_and_a_create(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/a.yaml", running_job("a"))
    repo.commit()
    repo.remove("jobs/a.yaml")
    repo.write("jobs/b.yaml", running_job("b"))

    plan = repo.plan()

    assert (job_of(plan, "a")["change"], job_of(plan, "b")["change"]) == ("delete", "create")


def test_a_framework_switch_is_a_rename_by_kind(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/j.yaml", running_job("j"))
    repo.commit()
    repo.write("jobs/j.yaml", job_doc("jax", name="j", namespace="nlp", nodes=2, resources={"gpu": 8}))

    (job,) = env_of(repo.plan())["jobs"]

    assert (job["change"], job["kind"], job["renamedFrom"]) == ("rename", "JAXJob", "nlp/j")
    assert "spec.framework" in job["fields"]
    assert job["hazards"] == ["kills-run", "restarts-run"]


def test_a_target_switch_in_the_project_file_is_a_rename_by_kind_with_the_project_field(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={"gpuTypes": {}}))
    repo.write("jobs/j.yaml", running_job("j"))
    repo.commit()
    repo.edit("jobs/trainforge.yaml", lambda docs: docs[0]["environments"]["prod"].__setitem__("target", "trainer-v2"))

    job = job_of(repo.plan(), "j", env="prod")

    assert (job["change"], job["kind"]) == ("rename", "TrainJob")
    assert job["fields"] == ["project.environments.prod.target"]


def test_a_spec_edit_that_compiles_to_the_same_objects_is_unchanged_with_its_field(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/j.yaml", job_doc("pytorch", name="j", namespace="nlp"))
    repo.commit()
    repo.write("jobs/j.yaml", job_doc("pytorch", name="j", namespace="nlp", nodes=1))  # the default, written

    (job,) = env_of(repo.plan())["jobs"]

    assert (job["change"], job["fields"], job["hazards"]) == ("unchanged", ["spec.nodes"], [])
    assert job["summary"] == "the spec edit compiles to the same objects: nothing changes"


def test_every_job_of_either_side_is_listed_once_per_environment(tmp_path):
    repo = new_repo(tmp_path, project=project(dev={}, prod={}))
    for name in ("a", "b", "c"):
        repo.write(f"jobs/{name}.yaml", running_job(name))
    repo.commit()
    repo.remove("jobs/a.yaml")
    repo.edit("jobs/b.yaml", lambda docs: docs[0]["spec"].__setitem__("nodes", 3))
    repo.write("jobs/d.yaml", running_job("d"))

    plan = repo.plan()

    for env in ("dev", "prod"):
        changes = {j["name"]: j["change"] for j in env_of(plan, env)["jobs"]}
        assert changes == {"a": "delete", "b": "update", "c": "unchanged", "d": "create"}
        assert len(env_of(plan, env)["jobs"]) == 4


def test_a_moved_spec_file_changes_only_the_source_annotation(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/a.yaml", running_job("a"))
    repo.commit()
    repo.move("jobs/a.yaml", "jobs/team/a.yaml")

    (job,) = env_of(repo.plan())["jobs"]

    assert (job["change"], job["source"], job["fields"], job["hazards"]) == ("update", "jobs/team/a.yaml", [], [])
    assert "moved from jobs/a.yaml" in job["summary"]


def test_nothing_changed_is_a_plan_of_unchanged_jobs_without_compiling_the_base(tmp_path):
    repo = new_repo(tmp_path)
    repo.write("jobs/a.yaml", running_job("a"))
    repo.commit()

    plan = repo.plan()

    assert [j["change"] for j in env_of(plan)["jobs"]] == ["unchanged"]
    assert env_of(plan)["gpus"] == {"before": 16, "after": 16}
