"""The libyaml fast path of the loader must mean exactly what the ruamel loader means.

`schemas.fastyaml` exists for speed only (see `bench/compiler_bench.py`), so every input
here is loaded both ways and must give the same documents, values *with their types*,
start positions, position tables and problems: either the fast path agrees, or it gives
the file to ruamel. A seeded fuzz of mutated job specs covers what the list misses.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from bench import specs
from schemas import fastyaml, loader

SCALARS = [
    "on", "off", "yes", "no", "y", "true", "True", "TRUE", "tRue", "false", "null", "Null", "~", "",
    "0", "-0", "+1", "007", "0o17", "0x1F", "0b101", "1_000", "1.5", "-1.5e3", "1e3", "3e-5", "1.", ".5",
    "+.5", ".inf", "-.inf", ".nan", "1:20", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "<<", "=",
    "1.2.3", "v1", "-", "'q'", '"3e-5"', "12:30:00", "0.0", "00", "1e", "1E+3", "NaN", "9" * 30,
]
DOCUMENTS = {
    "empty documents keep their index": "a: 1\n---\n---\nb: 2\n",
    "an empty file": "",
    "only a comment": "# nothing\n",
    "a duplicate key": "a: 1\na: 2\n",
    "an alias": "a: &x 1\nb: *x\n",
    "a tag": "a: !!str 5\n",
    "a YAML 1.1 directive": "%YAML 1.1\n---\na: on\n",
    "a list document": "- a\n- b\n",
    "a scalar document": "just text\n",
    "a syntax error": "a: [1, 2\n",
    "a tab": "a:\n\tb: 1\n",
    "a literal block": "x: |\n  line1\n  line2\n",
    "a folded block": "x: >-\n  folded\n  text\n",
    "escapes": 'x: "esc\\u00e9\\n"\n',
    "a complex key": "? [a]\n: 1\n",
    "flow in flow": "a: {b: [c, {d: e}]}\n",
    "a flow root after ---": "--- {a: 1}\n",
    "null keys twice": "null: 1\n~: 2\n",
    "int and str keys": "1: a\n'1': b\n",
    "CRLF line ends": "a: 1\r\nb: x\r\n",
    "a line separator": "a: 1\u2028b: 2\n",
    "a deep document": "k: " + "[" * 150 + "]" * 150 + "\n",
    "a too deep document": "k: " + "[" * 300 + "]" * 300 + "\n",
    "a directive after a document": "a: 1\n...\n%YAML 1.1\n---\nb: on\n",
    "an anchor in non-ASCII text": "a: \u00e9\nb: &x 1\nc: *x\n",
    "a tab in non-ASCII text": "a: \u00e9\nb:\n\tc: 1\n",
    "a shell script's ampersands": "args: [-c, 'apt-get update && make', a & b]\ncmd: x && y\n",
    "an exclamation mark in values": "msg: hello!\nq: '!x'\nr: a!b\n",
    "an anchor on a mapping": "a: &m {b: 1}\nc: *m\n",
    "a tag on a sequence": "a: !!seq [1]\n",
    "a local tag on a value": "a: !thing 1\n",
    "an ampersand that starts a value": "a: &anchor\n",
    "a percent sign inside a line": "a: 50%\nb: '%x'\n",
    "a pair in a flow list": "a: [x, b: 1]\n",
    "a quoted pair without a value in a flow list": 'a: [x, "4":, y]\n',
}


def _typed(value):
    if isinstance(value, dict):
        return {(type(k).__name__, k): _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _seen(result):
    documents, problems = result
    return (
        [(d.index, _typed(d.data), d.start, dict(d.key_pos.items()), dict(d.value_pos.items())) for d in documents],
        problems,
    )


def _asked(documents, tables):
    """Each path's position asked on its own, as a diagnostic asks (`schemas.positions.find`):
    every path of `tables` and some that are in no table."""
    out = []
    for doc, (keys, values) in zip(documents, tables):
        paths = [()]
        for loc in keys:
            paths += [loc, (*loc, 0), (*loc, "missing"), (*loc[:-1], "missing"), (*loc[:-1], 99), (*loc, -1)]
        out.append([(loc, doc.key_pos.get(loc), doc.value_pos.get(loc), loc in doc.key_pos) for loc in paths])
    return out


def _same_both_ways(text: str) -> None:
    fast, reference = loader.load_text(text, "f.yaml"), loader.load_text_ruamel(text, "f.yaml")
    tables = [(dict(d.key_pos.items()), dict(d.value_pos.items())) for d in reference[0]]
    assert _asked(fast[0], tables) == _asked(reference[0], tables)  # before anything fills the tables
    assert _seen(fast) == _seen(reference)


@pytest.mark.parametrize("scalar", SCALARS, ids=lambda s: f"the scalar {s!r}")
def test_a_scalar_means_the_same_as_value_key_and_item(scalar: str) -> None:
    for text in (f"k: {scalar}\n", f"{scalar}: v\n" if scalar else "x: v\n", f"l: [{scalar}]\n", f"l:\n  - {scalar}\n"):
        _same_both_ways(text)


@pytest.mark.parametrize("text", DOCUMENTS.values(), ids=DOCUMENTS.keys())
def test_a_document_loads_the_same_both_ways(text: str) -> None:
    _same_both_ways(text)


def test_a_benchmark_spec_takes_the_fast_path_and_positions_fill_lazily() -> None:
    text = specs.job_yaml(3)
    fastyaml.documents(text, loader.MAX_NODES)  # does not fall back
    (doc,), _ = loader.load_text(text, "f.yaml")
    assert dict.__len__(doc.key_pos) == 0  # nothing parsed by ruamel yet
    assert doc.position(("spec", "nodes")) == (17, 3)
    _same_both_ways(text)


def test_mutated_specs_load_the_same_both_ways() -> None:
    rnd = random.Random(8)
    alphabet = list(" :-[]{},'\"#|>\n\t?0123456789abcxyz.eE+_~\\") + [
        "\n  ", ": ", "- ", "\n- ", "---\n", "null", "on", "\u00e9", "\r", "\x85", "\x00", "%", "!", "&", "*",
    ]
    bases = [specs.job_yaml(i) for i in range(8)]
    for _ in range(200):
        text = rnd.choice(bases)
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(len(text) + 1)
            if rnd.random() < 0.5:
                text = text[:at] + rnd.choice(alphabet) + text[at:]
            else:
                text = text[:at] + text[at + rnd.randint(1, 3):]
        _same_both_ways(text)


def test_a_100000_deep_document_leaves_the_fast_path_without_crashing() -> None:
    # libyaml's own composer recurses in C and segfaults here; the event builder must not
    with pytest.raises(fastyaml.Fallback):
        fastyaml.documents("k: " + "[" * 100_000 + "]" * 100_000 + "\n", loader.MAX_NODES)


def _rglob_files(root: Path) -> list[tuple[Path, str]]:
    """What `collect` did before `yaml_files_resolved`: sorted rglob, filtered, each file resolved."""
    if root.is_file():
        return [(root, str(root.resolve()))]
    found = []
    for path in sorted(root.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        if path.is_file() and path.suffix in loader.YAML_SUFFIXES:
            found.append((path, str(path.resolve())))
    return found


def test_the_folder_walk_finds_what_sorted_rglob_finds_and_resolves_alike(tmp_path: Path) -> None:
    for rel in ("a/b.yaml", "a-c.yaml", "a-c/x.yml", "a b/z.yaml", ".hid/h.yaml", "sub/.cache/e.yaml",
                "d.yaml/in.yaml", "real/r.yaml", "notes.txt", "B.yaml", "b.YAML"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("a: 1\n")
    os.symlink(tmp_path / "real", tmp_path / "linkdir")  # a symlinked folder is not entered
    os.symlink(tmp_path / "real" / "r.yaml", tmp_path / "link.yaml")  # a symlinked file is resolved
    os.symlink(tmp_path / "missing", tmp_path / "broken.yaml")
    for root in (tmp_path, tmp_path / "linkdir", tmp_path / "link.yaml", tmp_path / "a" / ".." / "a-c",
                 tmp_path / "missing"):
        assert list(loader.yaml_files_resolved(root)) == _rglob_files(root), root


def test_every_published_manifest_and_example_loads_the_same_both_ways() -> None:
    """Real files: the importer's corpus (flow maps, block scripts, kubectl output) and the examples,
    their position tables included (the fast path makes them from libyaml's marks)."""
    root = Path(__file__).resolve().parents[2]
    files = sorted([*(root / "tests" / "importer" / "corpus").glob("*.yaml"), *(root / "examples").rglob("*.yaml")])
    assert len(files) > 80
    for path in files:
        _same_both_ways(path.read_text(encoding="utf-8"))
