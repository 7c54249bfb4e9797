"""Upstream's admission rules on compiled output: what cannot fail does not, what can is refused
at review time (the invalid-spec table has those cases, with their file:line:col)."""

from __future__ import annotations

import itertools

import pytest
from compiler_builders import example_sets, job_doc, lowered

from foundation.frameworks import ADAPTERS
from compiler.pipeline import compile_sources
from foundation import admission

WEBHOOK_KINDS = set(admission.KIND_RULES)


def _refusals(job: dict) -> tuple[list[str], list[str]]:
    kind = job["kind"]
    if kind in WEBHOOK_KINDS:
        return admission.errors(job, kind), admission.warnings(job, kind)
    if kind in ("MPIJob", "MXJob"):
        return admission.reconciler_errors(job, kind), []
    return [], []  # the trainer-v2 target's TrainJob: not a kubeflow.org/v1 kind


@pytest.mark.parametrize("label,paths", example_sets(), ids=[s[0] for s in example_sets()])
def test_every_compiled_example_passes_upstreams_admission(label, paths) -> None:
    result = compile_sources(paths)
    assert result.ok
    jobs = [b.rendered_job() for bundles in result.bundles.values() for b in bundles]
    assert jobs
    for job in jobs:
        assert _refusals(job) == ([], []), job["metadata"]["name"]


SHAPES = [  # every framework at the node counts and options that change the replica map
    (name, dict(nodes=nodes, **extra))
    for name in ADAPTERS
    for nodes, extra in itertools.product((1, 2, 5), ({}, {"processesPerNode": 4}))
    if not (extra and name != "pytorch")
] + [("pytorch", {"nodes": 2, "elastic": {"minNodes": 1, "maxNodes": 4}}),
     ("tensorflow", {"nodes": 3, "roles": {"ps": {"replicas": 2}, "evaluator": {"replicas": 1}}}),
     ("paddle", {"nodes": 2, "roles": {"ps": {"replicas": 1}}}),
     ("mxnet", {"nodes": 2, "roles": {"server": {"replicas": 2}}}),
     ("pytorch", {"podTemplate": {"spec": {"containers": [{"name": "pytorch", "env": [{"name": "A", "value": "1"}]},
                                                          {"name": "sidecar", "image": "busybox"}]}}})]


@pytest.mark.parametrize("framework,spec", SHAPES, ids=[f"{f} {sorted(s)} {s.get('nodes', '')}" for f, s in SHAPES])
def test_rules_that_cannot_fail_for_compiled_jobs_do_not(tmp_path, framework, spec) -> None:
    """Names, replica types and counts, Master/Chief, elastic Worker, managedBy, nProcPerNode:
    the adapters decide them, so no spec makes them fail."""
    for job in lowered(tmp_path, job_doc(framework, name="a" * 40, **spec)):
        assert _refusals(job) == ([], []), job
