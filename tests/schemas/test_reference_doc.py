"""docs/reference.md is generated from the models (and the adapters' container names) and must not go stale."""

from pathlib import Path

from compiler.cli.reference import markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference.md"


def test_committed_field_reference_is_current():
    assert DOC.read_text(encoding="utf-8") == markdown(), "docs/reference.md is stale: run make schema"


def test_reference_documents_every_spec_field_with_its_type():
    text = markdown()
    for row in (
        "| `nodes` | integer | `1` | Pods that run the training program. |",
        "| `framework` | `pytorch` \\| `tensorflow` \\| `mpi` \\| `xgboost` \\| `paddle` \\| `jax` \\| `mxnet` | required |",
        "| `storage` | list of [Volume](#volume) |",
        "| `tensorflow` | `tensorflow` |",  # the framework containers, from the adapters
    ):
        assert row in text
