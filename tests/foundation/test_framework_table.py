"""The framework names the spec accepts are the adapter table's.

`schemas/trainjob.py` sits below the compiler (import-linter's schemas-is-the-bottom contract),
so its `Framework` literal cannot be derived from `foundation/frameworks/__init__.py`'s ADAPTERS
and restates the names; this test is the tie. An adapter whose name the literal lacks (or a
name without an adapter) fails here, as does another order: the literal's order is the one
`use one of ...` lists the choices in, the table's the one every per-framework list follows.
"""

from __future__ import annotations

import typing

from foundation.frameworks import ADAPTERS
from schemas.trainjob import FRAMEWORKS, Framework, TrainJobSpec


def test_the_spec_takes_exactly_the_adapter_tables_frameworks_in_its_order():
    assert typing.get_args(Framework) == FRAMEWORKS == tuple(ADAPTERS)
    assert TrainJobSpec.model_fields["framework"].annotation is Framework
