"""`compiler.importing.writing`: specs written as a person would, read back exactly by the loader."""

from __future__ import annotations

import pytest

from compiler.importing import writing
from schemas.loader import load_text, load_text_ruamel

TRICKY = [
    "3e-5", "on", "0755", "true", "null", "~", "", " padded", "a: b", "x #y", "ends:", "-", "- item", "--epochs",
    "--lr=3e-5", "$(MASTER_ADDR)", "ghcr.io/acme/bert:1.4.2", "a && b", "it's", 'say "hi"', "[x]", "{y}", "a,b",
    "*star", "&amp", "!bang", "%pct", "@at", "`tick", "|pipe", ">fold", "?q", "#hash", "100%", "1:20",
    "2001-12-14", "é", "tab\there", "multi\nline\n", "no newline\nat end", "  leading\nlines", "trailing  \nspaces",
    "x" * 120,
]


def spec_with(value) -> dict:
    return {"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob", "metadata": {"name": "w"},
            "spec": {"framework": "pytorch", "image": "a:1", "args": [value], "env": {"V": value},
                     "podTemplate": {"metadata": {"annotations": {"k": value}}}}}


@pytest.mark.parametrize("value", TRICKY, ids=repr)
def test_a_string_reads_back_as_itself_with_both_loaders(value):
    doc = spec_with(value)
    text = writing.dump(doc)

    writing.check(text, doc)  # libyaml, YAML 1.1
    for load in (load_text, load_text_ruamel):
        (read,), problems = load(text, "w.yaml")
        assert problems == [] and read.data == doc, text


def test_the_spec_reads_in_the_spec_documents_order_with_short_maps_on_one_line():
    doc = {"apiVersion": "trainforge.dev/v1alpha1", "kind": "TrainJob", "metadata": {"namespace": "nlp", "name": "b"},
           "spec": {"podTemplate": {"spec": {"hostNetwork": True}}, "resources": {"memory": "8Gi", "gpu": 1},
                    "image": "a:1", "framework": "pytorch", "env": {"TOKEN": {"secret": "hf", "key": "token"}},
                    "command": ["python", "train.py"]}}

    assert writing.dump(doc) == (
        "apiVersion: trainforge.dev/v1alpha1\n"
        "kind: TrainJob\n"
        "metadata:\n"
        "  name: b\n"
        "  namespace: nlp\n"
        "spec:\n"
        "  framework: pytorch\n"
        "  image: a:1\n"
        "  command: [python, train.py]\n"
        "  env:\n"
        "    TOKEN: {secret: hf, key: token}\n"
        "  resources: {gpu: 1, memory: 8Gi}\n"
        "  podTemplate:\n"
        "    spec:\n"
        "      hostNetwork: true\n"
    )


def test_a_script_is_a_literal_block():
    text = writing.dump(spec_with("set -e\ntorchrun train.py\n"))

    assert "  args:\n    - |\n      set -e\n      torchrun train.py\n" in text
