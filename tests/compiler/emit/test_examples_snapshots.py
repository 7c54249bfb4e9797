"""Golden trees: each top-level example's whole output tree, pinned as real YAML.

One snapshot file per example under `tests/__snapshots__/test_examples_snapshots/`: the
files of `compiler.emit.tree.files(result)` in order, each a YAML document headed by a
`# file: <path>` comment, so a snapshot diff reads like the Kubernetes change it is.
Facts that matter are asserted separately (test_lowering_facts.py); these pin the rest.
Update with `pytest --snapshot-update` after reading the diff.
"""

from __future__ import annotations

import pytest
import yaml
from compiler_builders import REPO, example_files


def tree_as_yaml(files: dict[str, str]) -> str:
    return "---\n".join(f"# file: {path}\n{text}" for path, text in files.items())


@pytest.mark.parametrize("example", example_files(), ids=lambda p: p.stem)
def test_output_tree_is_pinned(example, yaml_snapshot):
    from compiler.emit import tree
    from compiler.pipeline import compile_sources

    result = compile_sources([example])
    assert result.ok, [d.text() for d in result.diagnostics]
    files = tree.files(result)

    snapshot_text = tree_as_yaml(files)

    assert all(doc is not None for doc in yaml.safe_load_all(snapshot_text))  # real YAML
    assert snapshot_text == yaml_snapshot


def test_every_snapshot_file_belongs_to_an_example():
    """syrupy does not report unused single-file snapshots; a removed example must not leave one."""
    folder = REPO / "tests" / "__snapshots__" / "test_examples_snapshots"
    expected = {f"test_output_tree_is_pinned[{p.stem}].yaml" for p in example_files()}

    assert {p.name for p in folder.iterdir()} == expected
