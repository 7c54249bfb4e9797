"""The one deep copy of plain JSON values, at the bottom because everything copies them.

Rendering copies every job (bundles, patching, lowering, the overlays) and the controller
copies every cached object it changes (`foundation.jsondata.copy` is this function):
`copy.deepcopy` pays for memo and type bookkeeping that JSON never needs, so dicts and lists
are rebuilt here and scalars shared (they are immutable). Anything else (never in these trees)
still gets a real deep copy.
"""

from __future__ import annotations

import copy
from typing import Any

_ATOMS = frozenset((str, int, float, bool, type(None)))


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value: new dicts and lists, the same scalars."""
    kind = value.__class__
    if kind is dict:
        return {k: v if v.__class__ in _ATOMS else json_copy(v) for k, v in value.items()}
    if kind is list:
        return [v if v.__class__ in _ATOMS else json_copy(v) for v in value]
    return value if kind in _ATOMS else copy.deepcopy(value)
