"""Differential test: train-controller against the upstream Go operator on one API server.

Every upstream example, every compiled example and a table of lifecycle scenarios go to
both operators, identical but for the namespace (parity_cases); each is compared after
creation and after every step of an identical kwok-driven pod lifecycle (parity_runner,
parity_views). A difference passes only if `KNOWN` lists it with its reason, and every
reason must be written in controller/README.md: a deviation nobody documented fails.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from parity_cases import all_cases
from parity_deviations import KNOWN, explain
from parity_runner import REPORT

README = Path(__file__).resolve().parents[2] / "controller" / "README.md"
CASES = all_cases()


@pytest.mark.controlplane
@pytest.mark.timeout(1800)  # the first test starts the world and runs every case (cold binaries are built by make)
@pytest.mark.parametrize("case_id", [c.id for c in CASES], ids=[c.id for c in CASES])
def test_same_objects_and_status_as_upstream(parity, case_id: str) -> None:
    result = parity[case_id]
    assert not result.error, f"{case_id} crashed:\n{result.error}"
    assert result.steps, f"{case_id}: nothing was compared"
    unexplained = [str(d) for d in result.differences if explain(result.case, d) is None]
    note = f" (v1.8.1 / v1.9.4: {result.case.note})" if result.case.note else ""
    assert not unexplained, f"{case_id}{note}: {len(unexplained)} difference(s) from upstream with no documented " \
        f"reason (every case: {REPORT}):\n" + "\n".join(unexplained[:30])


def test_every_known_deviation_is_documented_in_the_controller_readme() -> None:
    text = re.sub(r"\s+", " ", README.read_text())
    for deviation in KNOWN:
        assert deviation.readme in text, f"{deviation.name}: controller/README.md does not say {deviation.readme!r}"


@pytest.mark.controlplane
def test_every_known_deviation_is_still_seen(parity) -> None:
    """A deviation that no case shows any more was fixed: remove it from the table and the README."""
    seen = {explain(r.case, d).name for r in parity.values() for d in r.differences if explain(r.case, d)}  # type: ignore[union-attr]
    assert not [d.name for d in KNOWN if d.name not in seen and not d.random], "known deviations no case shows any more"
