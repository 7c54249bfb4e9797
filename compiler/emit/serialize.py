"""Deterministic YAML for Kubernetes objects: same input, same bytes.

Keys come out in the order Kubernetes users read (`apiVersion`, `kind`, `metadata`,
`name`... first, then alphabetical), lists keep their order because order in a list
carries meaning (env, args, containers). Emitting uses PyYAML's libyaml emitter (it
ships with the `kubernetes` client and is an order of magnitude faster than a pure
Python emitter); `compiler.emit.fastemit` writes the same bytes for our JSON-shaped objects
without PyYAML's per-node Python work, and hands anything unusual back to PyYAML.
Strings that any YAML 1.1 *or* 1.2 reader could take for a number, boolean or null are
double-quoted: kustomize's YAML 1.2 reader would otherwise turn `LR: 3e-5` into a float
and the API server would reject the env value.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from compiler.emit import fastemit

FIRST_KEYS = ("apiVersion", "kind", "metadata", "name", "namespace")
_RANK = {key: i for i, key in enumerate(FIRST_KEYS)}
_AMBIGUOUS = re.compile(
    r"""^(
        [-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?   # ints and floats
      | 0o[0-7]+ | 0x[0-9a-fA-F]+ | 0b[01]+                          # other int bases
      | [-+]?\.(inf|Inf|INF) | \.(nan|NaN|NAN)                       # specials
      | [0-9]+(:[0-5]?[0-9])+(\.[0-9_]*)?                            # YAML 1.1 sexagesimal
      | ~ | null | Null | NULL
      | y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
      | [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*                             # timestamps
    )$""",
    re.VERBOSE,
)


def ordered(value: Any) -> Any:
    """A copy with mapping keys in reading order; lists keep theirs."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_RANK.get(k, len(FIRST_KEYS)), str(k)))
        return {k: ordered(value[k]) for k in keys}
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


class _Dumper(yaml.CSafeDumper):
    pass


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    if _AMBIGUOUS.match(value):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_dict(dumper: yaml.SafeDumper, value: dict) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value.items())


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(dict, _represent_dict)


def _pyyaml_dump(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, width=4096, allow_unicode=True)


# Emits what `_pyyaml_dump(ordered(obj))` emits, several times faster (see fastemit).
_FAST = fastemit.Emitter(
    quote_double=lambda value: _AMBIGUOUS.match(value) is not None,
    emit_one=lambda value: _pyyaml_dump({"k": value}),
    rank=lambda key: (_RANK.get(key, len(FIRST_KEYS)), str(key)),
)


def dump(obj: Any) -> str:
    """One YAML document (no `---`), keys in reading order, trailing newline."""
    try:
        return _FAST.dump(obj)
    except fastemit.Slow:
        return _pyyaml_dump(ordered(obj))


def dump_all(objects: list[Any]) -> str:
    """A multi-document stream, documents separated by `---`."""
    return "---\n".join(dump(obj) for obj in objects)
