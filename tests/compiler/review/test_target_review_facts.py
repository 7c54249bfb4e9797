"""The review facts each target declares (compiler/targets): which rules judge its pods.

A kubeflow-v1 job's pods are its whole pod templates, the Training Operator's admission
rules review it and the operator adds its own init containers, so the late-refusal, upstream
admission and pod security rules speak up there. A trainer-v2 job only patches a runtime's
templates (its own rules say what a patch may hold), so those v1 findings must not appear
for the same file: each case compiles one spec under each target and compares.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compiler.targets import TARGETS
from compiler_builders import compile_docs, job_doc, project_doc


def errors_under(folder: Path, doc: dict[str, Any], target: str, **environment: Any) -> list[str]:
    result = compile_docs(folder, doc, project=project_doc(environments={"env": {"target": target, **environment}}))
    return [d.text() for d in result.diagnostics if d.severity == "error"]


CASES = [
    pytest.param(  # podrules: containers a podTemplate adds (whole_pod_templates)
        {"podTemplate": {"spec": {"containers": [{"name": "sidecar"}]}}}, {},
        "container 'sidecar' is not the framework's container 'pytorch' and has no image",
        id="a podTemplate container without an image is v1's late refusal only"),
    pytest.param(  # podrules: requests above limits (whole_pod_templates)
        {"resources": {"cpu": "4"}, "podTemplate": {"spec": {"containers": [
            {"name": "pytorch", "resources": {"limits": {"cpu": "2"}}}]}}}, {},
        "leave the request above the limit",
        id="a podTemplate limit below the request is v1's late refusal only"),
    pytest.param(  # admission_review (upstream_admission)
        {"podTemplate": {"spec": {"containers": [{"name": "pytorch", "image": ""}]}}}, {},
        "refused by the Training Operator",
        id="an emptied image is judged by the Training Operator's admission rules only under v1"),
    pytest.param(  # policy: the operator's init containers (operator_init_containers)
        {"nodes": 2}, {"policy": {"podSecurity": "restricted", "podSecurityDefaults": True}},
        "the Training Operator adds init container 'init-pytorch'",
        id="the operator's init-pytorch container is checked against restricted only under v1"),
]


@pytest.mark.parametrize(("spec", "environment", "v1_only"), CASES)
def test_a_v1_review_finding_is_not_reported_for_a_runtime_patch(tmp_path, spec, environment, v1_only):
    v1 = errors_under(tmp_path / "v1", job_doc("pytorch", **spec), "kubeflow-v1", **environment)
    v2 = errors_under(tmp_path / "v2", job_doc("pytorch", **spec), "trainer-v2", **environment)

    assert any(v1_only in e for e in v1), v1
    assert not any(v1_only in e for e in v2), v2


def test_each_target_states_its_review_facts():
    facts = {name: (t.whole_pod_templates, t.upstream_admission, t.operator_init_containers("PyTorchJob", "Worker",
                                                                                            {"Master", "Worker"}))
             for name, t in TARGETS.items()}

    assert facts == {"kubeflow-v1": (True, True, ["init-pytorch"]), "trainer-v2": (False, False, []),
                     "mpi-operator": (True, False, [])}
