"""The spec fields a change touched, as the contract spells them, at their place in the head spec.

Fields are the changed leaves of the spec as resolved for the environment (an override reads
`spec.nodes`, positioned at the override), list items by index, `project.<path>` for a
project file change that reaches the job, sorted; the text, markdown and GitHub outputs
print each one's `file:line:col`.
"""

from __future__ import annotations

from plan_kit import job_of, new_repo, project

BASE = """\
apiVersion: trainforge.dev/v1alpha1
kind: TrainJob
metadata:
  name: bert
  namespace: nlp
spec:
  framework: pytorch
  image: ghcr.io/acme/bert:1
  nodes: 2
  resources: {gpu: 8}
  storage:
    - {name: ckpt, mountPath: /ckpt, size: 100Gi}
  environments:
    prod:
      nodes: 4
"""


def _positions(job: dict) -> dict[str, tuple[int, int]]:
    return {p["field"]: (p["line"], p["col"]) for p in job["positions"]}


def test_an_override_reads_spec_nodes_at_the_overrides_line(tmp_path):
    repo = new_repo(tmp_path, project=project(dev={}, prod={}))
    repo.text("jobs/bert.yaml", BASE)
    repo.commit()
    repo.text("jobs/bert.yaml", BASE.replace("      nodes: 4", "      nodes: 6"))

    plan = repo.plan()

    prod = job_of(plan, "bert", env="prod")
    assert (prod["fields"], _positions(prod)) == (["spec.nodes"], {"spec.nodes": (15, 7)})
    assert job_of(plan, "bert", env="dev")["change"] == "unchanged"


def test_a_list_item_and_a_removed_field_each_have_their_place(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.text("jobs/bert.yaml", BASE)
    repo.commit()
    repo.text("jobs/bert.yaml", BASE.replace("size: 100Gi", "size: 200Gi").replace("  resources: {gpu: 8}\n", ""))

    job = job_of(repo.plan(), "bert", env="prod")

    assert job["fields"] == ["spec.resources.gpu", "spec.storage[0].size"]
    positions = _positions(job)
    assert positions["spec.storage[0].size"] == (11, 38)  # the item's key in the head spec
    assert positions["spec.resources.gpu"] == (6, 1)  # gone from the head: its nearest enclosing key


def test_the_text_output_prints_each_field_at_its_position(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.text("jobs/bert.yaml", BASE)
    repo.commit()
    repo.text("jobs/bert.yaml", BASE.replace("bert:1", "bert:2"))

    run = repo.run()

    assert run.exit_code == 0, run.stderr
    assert "spec.image at jobs/bert.yaml:8:3" in run.stdout


def test_a_project_change_that_reaches_the_job_reads_project_path(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={"gpuResource": "nvidia.com/gpu"}))
    repo.text("jobs/bert.yaml", BASE)
    repo.commit()
    repo.edit("jobs/trainforge.yaml", lambda docs: docs[0]["environments"]["prod"].__setitem__(
        "gpuResource", "amd.com/gpu"))

    job = job_of(repo.plan(), "bert", env="prod")

    assert job["change"] == "update"
    assert job["fields"] == ["project.environments.prod.gpuResource"]
    assert job["positions"][0]["file"] == "jobs/trainforge.yaml"


def test_labels_are_fields_of_the_jobs_metadata(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.text("jobs/bert.yaml", BASE)
    repo.commit()
    repo.text("jobs/bert.yaml", BASE.replace("  namespace: nlp\n", "  namespace: nlp\n  labels: {team: a}\n"))

    job = job_of(repo.plan(), "bert", env="prod")

    assert job["fields"] == ["metadata.labels.team"]
    assert _positions(job)["metadata.labels.team"] == (6, 12)


def test_fields_are_sorted(tmp_path):
    repo = new_repo(tmp_path, project=project(prod={}))
    repo.text("jobs/bert.yaml", BASE)
    repo.commit()
    repo.text("jobs/bert.yaml", BASE.replace("bert:1", "bert:2").replace("  nodes: 2", "  nodes: 3")
              .replace("size: 100Gi", "size: 300Gi"))

    fields = job_of(repo.plan(), "bert", env="prod")["fields"]

    assert fields == sorted(fields) == ["spec.image", "spec.storage[0].size"]  # prod overrides nodes


ROLES = BASE.replace("  resources: {gpu: 8}\n", """\
  resources:
    gpu: 8
    cpu: "8"
  roles:
    worker:
      image: ghcr.io/acme/worker:1
""").replace("      nodes: 4\n", "      nodes: 4\n      roles: {worker: {image: ghcr.io/acme/worker:1}}\n")


def test_the_fields_for_real_jobs_read_as_the_contract_spells_them(tmp_path):
    repo = new_repo(tmp_path, project=project(dev={}, prod={}))
    repo.text("jobs/bert.yaml", ROLES)
    repo.commit()
    head = ROLES.replace('    cpu: "8"\n', '    cpu: "8"\n    limits: {cpu: "16"}\n').replace(
        "      nodes: 4\n      roles: {worker: {image: ghcr.io/acme/worker:1}}\n",
        "      nodes: 4\n      roles: {worker: {image: ghcr.io/acme/worker:2}}\n")
    repo.text("jobs/bert.yaml", head)

    plan = repo.plan()

    dev, prod = (job_of(plan, "bert", env=env) for env in ("dev", "prod"))
    assert dev["fields"] == ["spec.resources.limits.cpu"]
    assert (prod["fields"], _positions(prod)) == (
        ["spec.resources.limits.cpu", "spec.roles.worker.image"],
        {"spec.resources.limits.cpu": (13, 14), "spec.roles.worker.image": (22, 24)})  # at the override that wrote it
