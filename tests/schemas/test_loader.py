"""schemas.loader: plain data, positions of keys and values, and refusals instead of crashes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from schemas.loader import MAX_NODES, load_file, load_text, yaml_files

JOB = textwrap.dedent(
    """\
    apiVersion: trainforge.dev/v1alpha1
    kind: TrainJob
    metadata:
      name: demo
    spec:
      framework: pytorch
      nodes: 4
      env:
        LR: "3e-5"
      args:
        - --epochs
        - "3"
      resources: {gpu: 8, memory: 64Gi}
    """
)


def load_one(text: str):
    documents, problems = load_text(text, "job.yaml")
    assert problems == []
    (doc,) = documents
    return doc


def test_data_is_plain_python_with_yaml_1_2_types():
    doc = load_one(JOB + "  suspend: on\n  ratio: 1e3\n  when: 2024-01-01\n")

    spec = doc.data["spec"]
    assert spec["nodes"] == 4 and type(spec["nodes"]) is int
    assert spec["env"] == {"LR": "3e-5"} and type(spec["env"]["LR"]) is str
    assert spec["args"] == ["--epochs", "3"]
    assert spec["resources"] == {"gpu": 8, "memory": "64Gi"}
    assert spec["suspend"] == "on"  # YAML 1.2: not a boolean
    assert spec["ratio"] == 1000.0
    assert isinstance(spec["when"], str)
    assert type(doc.data) is dict and type(spec["args"]) is list


@pytest.mark.parametrize(
    ("loc", "key", "value"),
    [
        pytest.param(("metadata", "name"), (4, 3), (4, 9), id="a nested key and its value"),
        pytest.param(("spec", "nodes"), (7, 3), (7, 10), id="a number value"),
        pytest.param(("spec", "env", "LR"), (9, 5), (9, 9), id="a quoted value"),
        pytest.param(("spec", "args", 1), (12, 7), (12, 7), id="a list item"),
        pytest.param(("spec", "resources", "memory"), (13, 23), (13, 31), id="a key inside a flow mapping"),
    ],
)
def test_positions_of_keys_and_values(loc, key, value):
    doc = load_one(JOB)

    assert doc.position(loc, prefer_key=True) == key
    assert doc.position(loc, prefer_key=False) == value


def test_a_missing_path_falls_back_to_the_nearest_enclosing_key():
    doc = load_one(JOB)

    assert doc.position(("spec", "resources", "cpu")) == (13, 3)
    assert doc.position(("nothing", "here")) == doc.start == (1, 1)


def test_documents_of_one_file_keep_their_index_and_start_and_empty_ones_are_skipped():
    documents, problems = load_text("---\n" + JOB + "---\n---\n" + JOB, "jobs.yaml")

    assert problems == []
    assert [(d.index, d.start) for d in documents] == [(0, (2, 1)), (2, (17, 1))]
    assert documents[1].position(("spec", "nodes"), prefer_key=False) == (23, 10)


def test_a_non_string_key_keeps_its_type_and_its_position():
    doc = load_one(JOB + "  1: x\n")

    assert doc.data["spec"][1] == "x"
    assert doc.position(("spec", 1)) == (14, 3)


def test_aliases_are_expanded():
    doc = load_one("a: &x {b: [1, 2]}\nc: *x\n")

    assert doc.data == {"a": {"b": [1, 2]}, "c": {"b": [1, 2]}}


def test_a_duplicate_key_is_a_problem_at_the_second_key():
    documents, problems = load_text(JOB + "  nodes: 2\n", "job.yaml")

    assert documents == []
    (problem,) = problems
    assert (problem.line, problem.col) == (14, 3)
    assert problem.message == 'duplicate key "nodes", first at 7:3'


def test_an_alias_bomb_is_a_problem_not_a_hang():
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 8)]

    documents, problems = load_text("\n".join(lines) + "\n", "bomb.yaml")

    assert documents == []
    assert [p.message for p in problems] == [f"document expands to more than {MAX_NODES} nodes (YAML aliases)"]


def test_a_syntax_error_is_a_positioned_problem():
    _, problems = load_text("a: [1, 2\nb: 3\n", "bad.yaml")

    (problem,) = problems
    assert (problem.file, problem.fix) == ("bad.yaml", "fix the YAML syntax")
    assert problem.line == 2


def test_a_file_that_is_not_utf8_is_a_problem(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))

    documents, problems = load_file(path, "latin1.yaml")

    assert documents == []
    assert [(p.line, p.col, p.message) for p in problems] == [(1, 1, "file is not UTF-8 text")]


def test_yaml_files_are_found_recursively_in_order_skipping_hidden_folders(tmp_path):
    for rel in ("b.yaml", "a.yml", "sub/c.yaml", "sub/notes.txt", ".git/d.yaml", "sub/.cache/e.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("a: 1\n")

    found = [str(p.relative_to(tmp_path)) for p in yaml_files(tmp_path)]

    assert found == ["a.yml", "b.yaml", "sub/c.yaml"]


def test_a_file_source_is_itself(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(JOB)

    assert list(yaml_files(path)) == [path]


def test_the_fast_and_the_reference_loader_agree_on_data_and_positions():
    """load_text's libyaml path must equal the ruamel reference loader: the same plain data and
    starts from another parser, and positions that its lazy tables fill for the right document."""
    from schemas.loader import load_text_ruamel
    from schemas.positions import LazyTable

    mixed = ("mixed:\n  flow: [1, two, 3.5, true, null, \"q\"]\n  quoted: 'it''s'\n  block: |\n    one\n    two\n"
             "  folded: >-\n    a\n    b\n  empty: {}\n  big: 1e3\n  switch: on\n  nothing: ~\n")
    text = JOB + "---\n" + JOB.replace("demo", "other") + "---\n" + mixed

    fast, fast_problems = load_text(text, "job.yaml")
    slow, slow_problems = load_text_ruamel(text, "job.yaml")

    assert all(isinstance(d.key_pos, LazyTable) for d in fast), "the fast path was taken"
    assert fast_problems == slow_problems == []
    assert [(d.index, d.start, d.data) for d in fast] == [(d.index, d.start, d.data) for d in slow]
    for f, s in zip(fast, slow):
        assert dict(f.key_pos) == dict(s.key_pos) and dict(f.value_pos) == dict(s.value_pos)


def test_loading_does_not_depend_on_the_working_directory(tmp_path, monkeypatch):
    path = tmp_path / "job.yaml"
    path.write_text(JOB)
    monkeypatch.chdir(Path("/"))

    documents, problems = load_file(path)

    assert problems == [] and documents[0].file == str(path)


def test_a_mapping_used_as_a_key_is_a_problem_not_a_traceback():
    docs, problems = load_text("apiVersion: v1\n? {x: {y: 1}}\n: 2\n", "k.yaml")
    assert docs == []
    assert [(p.line, p.col, p.message) for p in problems] == [
        (2, 1, "a mapping or list is used as a mapping key")
    ]
