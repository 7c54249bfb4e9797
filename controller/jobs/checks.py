"""What upstream refuses, checked at reconcile time: the fallback for clusters without the policies.

Upstream v1.9.4 refuses bad PyTorch/TF/XGBoost/Paddle/JAX jobs in its validating webhook;
trainforge ships the same rules as ValidatingAdmissionPolicies (`controller/install/admission`,
Kubernetes >= 1.30). A job that reached the cluster without them (an older cluster, the
policies not installed, a job created before they were) is checked here with the very same
rule table (`foundation/admission.py`), and the reconciler fails it with a `Failed` condition
and a Warning event, reason `{Kind}FailedValidation`, whose message carries the text the
admission refusal would have shown.

MPIJob (v1.9.4) and MXJob (v1.8.1) have no admission checks upstream: their reconcilers
validate on every pass, report the first problem in a Warning event, write no condition and
retry with backoff (`admission.reconciler_errors`, upstream's checks and messages).
"""

from __future__ import annotations

from typing import Any

from foundation import admission
from controller.jobs.generations import PerGeneration
from controller.jobs.kinds import Kind


def problems(job: dict[str, Any], kind: Kind) -> list[str]:
    """Every rule the raw job breaks (empty = valid): upstream's messages, for the kind's check;
    kept per (uid, generation): the rules read the spec and the (immutable) name only."""
    if kind.operator.reconciler_check is not None:
        return _kept.get(job, lambda: admission.reconciler_errors(job, kind.name), kind.name)
    return _kept.get(job, lambda: admission.errors(job, kind.name), kind.name)


_kept = PerGeneration()


def failure_message(kind: Kind, found: list[str]) -> str:
    """The event (and condition) message: `{Kind} failed validation because <upstream's error>`."""
    return f"{kind.name} failed validation because {admission.aggregate(found)}"
