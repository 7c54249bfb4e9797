"""Differential: every job of the admission table goes to the upstream operator v1.9.4 with its
real webhook and to trainforge's shipped policies, on one API server (one World, upstream's
CRDs), each in a namespace of its own. Both must refuse exactly the same jobs with the same
messages and warnings, except the listed differences, where each side must give exactly the
answer the table records for it and controller/README.md must name the difference."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from admission_cases import CASES, Case, case_id
from admission_kit import Answer, our_policies, send, wait_every_policy

from foundation.cluster.connection import Connection
from foundation.cluster.kube import config_loader
from testworld.controlplane import ControlPlane
from testworld.pytest_plugin import (
    _start_world as start_world,  # the plugin's skip and failure rules
)
from testworld.upstream_webhook import WebhookOperator
from testworld.world import World

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_NS, OURS_NS = "admission-upstream", "admission-ours"


@pytest.fixture(scope="module")
def sides(envtest_assets):
    """(api, namespace) for upstream's webhook and for our policies, in one World."""
    world = start_world(World([WebhookOperator(UPSTREAM_NS)], plane=ControlPlane(assets=envtest_assets)))
    try:
        world.kubectl("create", "namespace", OURS_NS)
        world.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(our_policies(OURS_NS, suffix="")))
        api = Connection(config_loader(str(world.kubeconfig)))
        try:
            wait_every_policy(api, OURS_NS, CASES)
            yield api
        finally:
            api.close()
    finally:
        world.stop()


def _same_refusal(upstream: Answer, ours: Answer) -> None:
    assert (ours.status, ours.reason) == (upstream.status, upstream.reason), (upstream, ours)


@pytest.mark.parametrize("index,case", list(enumerate(CASES)), ids=[case_id(c) for c in CASES])
def test_upstream_and_ours_answer_alike(sides, index: int, case: Case) -> None:
    upstream = send(sides, UPSTREAM_NS, case, index)
    ours = send(sides, OURS_NS, case, index)
    assert upstream.errors() == sorted(case.upstream_errors), upstream.message
    assert ours.errors() == sorted(case.errors), ours.message
    if case.upstream is None:
        assert ours.refused == upstream.refused
        if ours.refused:
            _same_refusal(upstream, ours)
    assert upstream.warning_texts() == list(case.warnings)
    assert ours.warning_texts() == list(case.warnings)


def test_every_difference_is_listed_in_the_controller_readme() -> None:
    readme = (REPO / "controller" / "README.md").read_text()
    reasons = {c.why for c in CASES if c.upstream is not None}
    assert reasons and all(c.why for c in CASES if c.upstream is not None)
    for why in reasons:
        assert why in readme, f"controller/README.md does not list: {why}"
