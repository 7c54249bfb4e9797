"""schemas/trainingruntime.schema.json is the Trainer v2.3.0 CRD's runtime spec, and it judges runtimes.

The committed file must be what `derive` makes of the reference CRD (`make schema` rewrites it);
the ClusterTrainingRuntime CRD has the same spec; and every runtime of the release and of the
importer corpus passes it while a misspelled field does not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from compiler_builders import shared_dir

from schemas import trainer_runtime
from tests.schemas.trainer_runtime_crd import crd

REPO = Path(__file__).resolve().parents[2]
RUNTIME_KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")


def test_committed_schema_is_the_reference_crds():
    assert trainer_runtime.FILE.read_text(encoding="utf-8") == trainer_runtime.text(crd()), \
        "schemas/trainingruntime.schema.json is stale; run `make schema` and commit it"


def test_the_cluster_runtime_crd_has_the_same_spec():
    cluster = trainer_runtime.derive(crd("clustertrainingruntimes"))
    assert {k: v for k, v in cluster.items() if k != "x-trainer-crd"} == \
        {k: v for k, v in trainer_runtime.derive(crd()).items() if k != "x-trainer-crd"}


def _runtimes() -> list[tuple[str, dict]]:
    found = []
    for folder in (REPO / "tests" / "importer" / "corpus", shared_dir() / "reference" / "crds" / "trainer-v2.3.0" / "runtimes"):
        for path in sorted(folder.glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
                if isinstance(doc, dict) and doc.get("kind") in RUNTIME_KINDS:
                    found.append((f"{path.name} {doc['metadata']['name']}", doc))
    return found


@pytest.mark.parametrize(("name", "doc"), [pytest.param(n, d, id=n) for n, d in _runtimes()])
def test_published_runtimes_pass(name, doc):
    errors = list(Draft202012Validator(trainer_runtime.load()).iter_errors(doc["spec"]))
    assert not errors, [e.message for e in errors]


def test_a_misspelled_field_fails():
    spec = {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [
        {"name": "node", "template": {"spec": {"template": {"spec": {"containerz": []}}}}}]}}}
    errors = {(e.validator, tuple(e.absolute_path)) for e in Draft202012Validator(trainer_runtime.load()).iter_errors(spec)}
    pod = ("template", "spec", "replicatedJobs", 0, "template", "spec", "template", "spec")
    assert errors == {("additionalProperties", pod), ("required", pod)}  # containerz unknown, containers missing
