"""The imported specs as a person would write them, and the folder they go to.

YAML: block style, keys in the spec document's order (`shared/docs/trainjob-spec.md`:
framework, image, command, args... then podTemplate last), and flow style where the spec's
own examples use it: a short map or list of plain values (`{secret: hf, key: token}`,
`[python, train.py]`, `elastic: {minNodes: 2, maxNodes: 8}`), a list item that fits on one
line. Scripts (strings with line breaks) are literal blocks. A string a YAML 1.1 or 1.2
reader could take for something else (`"3e-5"`, `"on"`, `"0755"`) is quoted, as the
compiler's own output is (`compiler/emit/serialize.py`). `dump` is checked against the
loader by the importer: the text is parsed again and must give the same data.

Files: one spec per job, `<name>.yaml`, in `<namespace>/` folders when the jobs are in more
than one namespace, and `trainforge.yaml` when the jobs need project settings. Nothing is
written unless every job imported; the files are written into a staging folder first and
moved into place, and a file that is there already with other content is never replaced.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from compiler.emit.serialize import _AMBIGUOUS

WIDTH = 100  # longest line a flow item may make
SPEC_ORDER = (
    "framework", "image", "command", "args", "workingDir", "env", "nodes", "processesPerNode", "resources",
    "roles", "elastic", "mpi", "storage", "scheduling", "policy", "serviceAccount", "runtime", "initializer",
    "podTemplate", "environments",
)
FIRST = ("apiVersion", "kind", "metadata", "spec", "name", "namespace", "labels", "annotations",
         "defaults", "environments", "policy")
RESOURCES_ORDER = ("gpu", "gpuType", "cpu", "memory", "limits", "devices", "sharedMemory")
# what may stay unquoted: no YAML indicator first, none of the characters that end or change a
# scalar inside (a flow collection's `,[]{}` and `:` too), no ": " or " #"
_PLAIN = re.compile(r"^(?:[A-Za-z0-9_./$(]|-(?=[^ ]))[-A-Za-z0-9_./$()=+:~^ ,]*$")
_PLAIN_FLOW = re.compile(r"^(?:[A-Za-z0-9_./$(]|-(?=[^ ]))[-A-Za-z0-9_./$()=+~^ ]*$")


class Conflict(ValueError):
    """A file to write is there already with other content."""


ORDERS = {"": FIRST, "metadata": FIRST, "spec": SPEC_ORDER, "resources": RESOURCES_ORDER, "podTemplate": FIRST}


def ordered(value: Any, parent: str = "") -> Any:
    """Keys in reading order: the spec's own order where it has one, else as they came (a
    manifest's order: a podTemplate reads like the pod spec it was taken from)."""
    if isinstance(value, dict):
        table = ORDERS.get(parent)
        keys = list(value) if table is None else sorted(
            value, key=lambda k: table.index(k) if k in table else len(table))
        return {k: ordered(value[k], str(k)) for k in keys}
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


def scalar(value: Any, *, flow: bool = False) -> str:
    """A scalar as YAML text (a string plain where that reads back as the same string)."""
    if value.__class__ is str:
        return _string(value, flow)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return _string(str(value), flow)


@functools.lru_cache(maxsize=8192)
def _string(text: str, flow: bool) -> str:
    pattern = _PLAIN_FLOW if flow else _PLAIN
    if (not text or _AMBIGUOUS.match(text) or not pattern.match(text) or text != text.strip()
            or ": " in text or " #" in text or text.endswith(":")):
        return json.dumps(text, ensure_ascii=False)
    return text


def _flow(value: Any) -> str | None:
    """`value` on one line when it is a short map or list of scalars, else None."""
    if isinstance(value, dict) and value and all(not isinstance(v, (dict, list)) for v in value.values()):
        shown = [_flow_scalar(v) for v in value.values()]
        if any(v is None for v in shown):
            return None
        return "{" + ", ".join(f"{scalar(k, flow=True)}: {v}" for k, v in zip(value, shown)) + "}"
    if isinstance(value, list) and value and all(not isinstance(v, (dict, list)) for v in value):
        items = [_flow_scalar(v) for v in value]
        return None if any(i is None for i in items) else "[" + ", ".join(items) + "]"  # type: ignore[arg-type]
    return None


def _flow_scalar(value: Any) -> str | None:
    if isinstance(value, str) and "\n" in value:
        return None
    return scalar(value, flow=True)


def _block_string(text: str, indent: int) -> str | None:
    """A literal block for a script, or None when one cannot hold it exactly."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines, chomp = lines[:-1], "" if not text.endswith("\n\n") else "+"
    else:
        chomp = "-"
    if not lines or lines[0].startswith(" ") or any(line != line.rstrip() for line in lines) or "\t" in text \
            or any(ord(c) < 32 and c != "\n" for c in text):
        return None
    pad = " " * indent
    return f"|{chomp}\n" + "\n".join(pad + line if line else "" for line in lines)


def _lines(value: Any, column: int, out: list[str], prefix: str) -> None:
    """Append `value` written after `prefix` (`key: ` or `- `, starting at `column`): a
    nested map or list goes below it, two spaces in (a list item's map beside its dash)."""
    inner = " " * (column + 2)
    if isinstance(value, (dict, list)) and value:
        flow = _flow(value)
        if flow is not None and len(prefix) + len(flow) <= WIDTH and prefix.strip() not in ("spec:", "metadata:"):
            out.append(prefix + flow)
        elif isinstance(value, dict) and prefix.endswith("- "):
            for i, (key, item) in enumerate(value.items()):  # the first key beside the dash
                _lines(item, column + 2, out, (prefix if i == 0 else inner) + f"{scalar(key)}: ")
        elif isinstance(value, dict):
            out.append(prefix.rstrip())
            for key, item in value.items():
                _lines(item, column + 2, out, f"{inner}{scalar(key)}: ")
        else:
            out.append(prefix.rstrip())
            for item in value:
                _lines(item, column + 2, out, f"{inner}- ")
        return
    if isinstance(value, str) and "\n" in value:
        block = _block_string(value, column + 2)
        if block is not None:
            out.append(prefix + block)
            return
    if isinstance(value, (dict, list)):  # empty
        out.append(prefix + ("{}" if isinstance(value, dict) else "[]"))
        return
    out.append(prefix + scalar(value))


def dump(document: dict[str, Any]) -> str:
    """One YAML document in the style above, ending in a newline."""
    out: list[str] = []
    for key, value in ordered(document).items():
        _lines(value, 0, out, f"{scalar(key)}: ")
    return "\n".join(out) + "\n"


def check(text: str, data: dict[str, Any]) -> None:
    """`text` reads back as `data` (libyaml; the quoting rule above makes YAML 1.1 and 1.2 readers
    agree, and the corpus test renders every written folder through the project's loader)."""
    import yaml

    if yaml.load(text, Loader=yaml.CSafeLoader) != data:
        raise AssertionError(f"the text written does not read back as the spec:\n{text}")


def write(files: dict[str, str], out: Path) -> list[str]:
    """Write `files` (relative path -> text) into `out`; the paths written. All or nothing: a
    file that exists with other content stops the run before anything is written."""
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise Conflict(f"{out} is a file, not a folder; name a folder to import into")
    for rel, text in files.items():
        there = out / rel
        if there.exists() and (not there.is_file() or there.read_text(encoding="utf-8") != text):
            raise Conflict(f"{there} exists already; move it away or import into another folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.import-", dir=out.parent))
    try:
        for rel, text in files.items():
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_text(text, encoding="utf-8")
        if not out.exists():
            os.rename(staging, out)
        else:
            for rel in files:
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, out / rel)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return sorted(files)
