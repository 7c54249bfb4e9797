"""The shipped ValidatingAdmissionPolicies on a real kube-apiserver: the committed files are the
generated ones, and every case of the table gets exactly its messages (HTTP 403 Forbidden, as a
webhook denial), its warnings, or is admitted."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from admission_cases import CASES, Case, case_id
from admission_kit import our_policies, send, wait_every_policy

from controller.generators import admission_policies
from foundation.cluster.connection import Connection
from foundation.cluster.kube import config_loader

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_policies_are_the_generated_ones() -> None:
    folder = REPO / "controller" / "install" / "admission"
    rendered = admission_policies.render()
    assert sorted(p.name for p in folder.iterdir()) == sorted(rendered)
    for name, text in rendered.items():
        assert (folder / name).read_text() == text, f"{name} is stale: run python -m controller.generators.admission_policies"


@pytest.fixture(scope="module")
def enforced(control_plane):
    """A namespace of its own where the policies are bound (bindings scoped, so other tests' jobs pass)."""
    namespace = "admission-policies"
    control_plane.kubectl("create", "namespace", namespace)
    docs = our_policies(namespace, suffix="-test")
    manifest = yaml.safe_dump_all(docs)
    control_plane.kubectl("apply", "--server-side", "--field-manager=admission-test", "-f", "-", input=manifest)
    api = Connection(config_loader(str(control_plane.kubeconfig)))
    wait_every_policy(api, namespace, CASES)
    yield api, namespace
    api.close()
    for doc in docs:
        control_plane.kubectl("delete", doc["kind"], doc["metadata"]["name"], "--ignore-not-found")
    control_plane.kubectl("delete", "namespace", namespace, "--wait=false")


@pytest.mark.parametrize("index,case", list(enumerate(CASES)), ids=[case_id(c) for c in CASES])
def test_each_case_is_answered_as_the_table_says(enforced, index: int, case: Case) -> None:
    api, namespace = enforced
    answer = send(api, namespace, case, index)
    if case.errors:
        assert (answer.status, answer.reason) == (403, "Forbidden"), answer
        assert answer.errors() == sorted(case.errors)
        assert answer.message.startswith(f"{case.kind.lower()}s.kubeflow.org")
    else:
        assert not answer.refused, answer.message
    assert answer.warning_texts() == list(case.warnings)


def test_check_names_a_stale_policy_file_and_exits_1(tmp_path) -> None:
    from click.testing import CliRunner

    assert CliRunner().invoke(admission_policies.main, ["-o", str(tmp_path)]).exit_code == 0
    assert CliRunner().invoke(admission_policies.main, ["-o", str(tmp_path), "--check"]).exit_code == 0
    (tmp_path / "tfjobs.yaml").write_text("# edited by hand\n")
    stale = CliRunner().invoke(admission_policies.main, ["-o", str(tmp_path), "--check"])
    assert stale.exit_code == 1 and "tfjobs.yaml" in stale.output
