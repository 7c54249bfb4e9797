"""`serialize.dump` (the fast emitter) must write exactly what PyYAML writes.

`compiler.emit.fastemit` exists for speed only, so random JSON-shaped objects with awkward
strings (indicators, numbers in disguise, YAML 1.1 booleans, unicode, line breaks,
document markers) and every object of a compiled benchmark tree are dumped both ways
and compared byte for byte.
"""

from __future__ import annotations

import random
from pathlib import Path

from bench import specs
from compiler.emit import serialize
from compiler.emit.render import rendered_objects
from compiler.pipeline import compile_sources

AWKWARD = [
    "", " ", "a b", " lead", "trail ", "-", "--x", "-1", "+1", "3e-5", "1.5", "1.2.3", "0x1F", "0o17", "1_000",
    "12:30", "yes", "No", "on", "y", "n", "~", "null", "Null", "true", "=", "<<", "?", "?x", ":", ":x", "x:",
    "a: b", "a:b", "a #b", "a#b", "#x", "@x", "x@y", "%x", "&x", "*x", "!x", "|x", ">x", "'q'", '"q"', "[x]",
    "{x}", "x,y", "---", "---x", "...", "...x", ".5", ".inf", "é", "日本", "a\nb", "a\n", "\n", "tab\tx",
    "ghcr.io/acme/img:1.2", "nvidia.com/gpu", "/dev/shm", "x" * 130, "k" * 2100, "2001-12-14", "\x85", "\u2028",
]


def _value(rnd: random.Random, depth: int):
    roll = rnd.random()
    if depth > 3 or roll < 0.45:
        return rnd.choice([rnd.choice(AWKWARD), rnd.randint(-5, 10**12), True, False, None, 2.5, 1e20, "plain"])
    if roll < 0.75:
        keys = AWKWARD[:60] + ["name", "kind", "apiVersion", "z"]
        return {rnd.choice(keys): _value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))}
    return [_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]


def _pyyaml(obj) -> str:
    return serialize._pyyaml_dump(serialize.ordered(obj))


def test_random_objects_are_written_byte_for_byte_as_pyyaml_writes_them() -> None:
    rnd = random.Random(8)
    for _ in range(1500):
        obj = rnd.choice([dict, list])()
        obj = _value(rnd, 0) if rnd.random() < 0.9 else obj
        if not isinstance(obj, (dict, list)):
            obj = {"v": obj}
        assert serialize.dump(obj) == _pyyaml(obj), obj


def test_a_compiled_tree_is_written_byte_for_byte_as_pyyaml_writes_it(tmp_path: Path) -> None:
    result = compile_sources([specs.write(tmp_path / "src", 16)])
    assert result.ok
    objects = [obj for env in result.environments for obj in rendered_objects(result, env)]
    objects += [list(c.patches) for bundles in result.bundles.values() for b in bundles for c in b.components]
    assert len(objects) > 50
    for obj in objects:
        assert serialize.dump(obj) == _pyyaml(obj)
