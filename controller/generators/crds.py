"""Generate the CustomResourceDefinitions of the seven kinds (`python -m controller.generators.crds`),
the install kustomization's list of them, and the ClusterRole's two kubeflow.org rules, so a new adapter
reaches the install without a hand edit.

The project owns its CRDs instead of vendoring upstream's 10k-line files: the schema is
built from the framework table (replica-spec field, scale subresource) plus the few
kind-specific spec fields, with the same field names, types, `required` lists, default
(`runPolicy.suspend: false`) and CEL rule (queue immutable) as upstream v1.9.4 (MXJob
v1.8.1). Pod templates and HPA metrics are kept whole
(`x-kubernetes-preserve-unknown-fields`), so everything upstream accepts is accepted;
the tests check that against the upstream CRDs with every upstream example and every
compiled job. Each kind gets the status and (PyTorch/Paddle/JAX) scale subresources
and the `State` (last condition) and `Age` printer columns. One status field is ours:
`trainerStatus`, the last progress report (controller/README.md, "Progress").
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import yaml

from foundation.frameworks.base import GROUP, SCALED_REPLICA_TYPE, VERSION
from foundation.frameworks.operator import ANY_OBJECT, INT32, STRING, obj, replica_specs, run_policy
from foundation.progress.protocol import MAX_METRIC_CHARS, MAX_METRICS, TRAINER_STATUS
from controller.generators.files import write_or_check
from controller.jobs.kinds import KINDS, Kind

OUT = Path(__file__).parents[1] / "install" / "crds"
TIME = {"type": "string", "format": "date-time"}


def status() -> dict[str, Any]:
    return obj({
        "completionTime": TIME,
        "conditions": {"type": "array", "items": obj({
            "lastTransitionTime": TIME,
            "lastUpdateTime": TIME,
            "message": STRING,
            "reason": STRING,
            "status": STRING,
            "type": STRING,
        }, required=["status", "type"])},
        "lastReconcileTime": TIME,
        "replicaStatuses": {"type": "object", "additionalProperties": obj({
            "active": INT32,
            "failed": INT32,
            "labelSelector": ANY_OBJECT,
            "selector": STRING,
            "succeeded": INT32,
        })},
        "startTime": TIME,
        TRAINER_STATUS: trainer_status(),
    })


def trainer_status() -> dict[str, Any]:
    """Ours, not upstream's: the last progress report (controller.progress.store), the Trainer's
    TrainerStatus schema and limits, so `kubectl get -o yaml` shows it and no reader needs two shapes."""
    text = {"type": "string", "minLength": 1, "maxLength": MAX_METRIC_CHARS}
    return obj({
        "estimatedRemainingSeconds": {**INT32, "minimum": 0},
        "lastUpdatedTime": TIME,
        "metrics": {"type": "array", "maxItems": MAX_METRICS, "x-kubernetes-list-type": "atomic",
                    "items": obj({"name": text, "value": text}, required=["name", "value"])},
        "progressPercentage": {**INT32, "minimum": 0, "maximum": 100},
    })


def crd(kind: Kind) -> dict[str, Any]:
    facts = kind.facts
    spec_fields = {facts.replica_specs: replica_specs(), "runPolicy": run_policy(), **kind.operator.spec_fields}
    required = sorted([facts.replica_specs, *kind.operator.required])
    schema = obj({
        "apiVersion": STRING,
        "kind": STRING,
        "metadata": {"type": "object"},
        "spec": obj(dict(sorted(spec_fields.items())), required=required),
        "status": status(),
    })
    subresources: dict[str, Any] = {"status": {}}
    if facts.scalable:
        subresources["scale"] = {
            "specReplicasPath": f".spec.{facts.replica_specs}.{SCALED_REPLICA_TYPE}.replicas",
            "statusReplicasPath": f".status.replicaStatuses.{SCALED_REPLICA_TYPE}.active",
            "labelSelectorPath": f".status.replicaStatuses.{SCALED_REPLICA_TYPE}.selector",
        }
    singular = kind.name.lower()
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{facts.plural}.{GROUP}", "labels": {"app.kubernetes.io/part-of": "trainforge"}},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind.name, "listKind": f"{kind.name}List", "plural": facts.plural, "singular": singular},
            "scope": "Namespaced",
            "versions": [{
                "name": VERSION,
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": schema},
                "subresources": subresources,
                "additionalPrinterColumns": [
                    {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    }


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # shared sub-schemas are written out in full
        return True


HEADER = "# Generated by `python -m controller.generators.crds`; do not edit.\n"
ROLE = OUT.parent / "clusterrole.yaml"
KUSTOMIZATION = OUT.parent / "kustomization.yaml"
_CRD_LINES = re.compile(r"(?m)(^  - crds/kubeflow\.org_\w+\.yaml\n)+")
_JOB_RULE = re.compile(r'(- apiGroups: \["kubeflow\.org"\]\n\s+resources: )\[[^\]]*\]')


def file_name(kind: Kind) -> str:
    """The kind's CRD file (upstream's name)."""
    return f"{GROUP}_{kind.facts.plural}.yaml"


def render() -> dict[str, str]:
    """file name -> YAML text, one file per kind."""
    return {
        file_name(kind): HEADER + yaml.dump(crd(kind), Dumper=_NoAliases, sort_keys=False, width=120)
        for kind in sorted(KINDS.values(), key=lambda k: k.facts.plural)
    }


def kustomization(text: str) -> str:
    """The install's kustomization.yaml listing every generated CRD file where it lists them now
    (a run of `  - crds/...` lines; the folder itself stays `kubectl apply -f`-able, so no
    kustomization of its own); the rest of the hand-written file is kept as it is."""
    listing = "".join(f"  - {OUT.name}/{name}\n" for name in sorted(map(file_name, KINDS.values())))
    return _CRD_LINES.sub(lambda match: listing, text, count=1)


def clusterrole(text: str) -> str:
    """clusterrole.yaml with its kubeflow.org rules granting every kind (the plain rule) and every
    kind's status (the `/status` rule); the rest of the hand-written file is kept as it is."""
    plurals = [kind.facts.plural for kind in KINDS.values()]

    def fill(match: re.Match[str]) -> str:
        status = "/status" in match.group(0)
        return match.group(1) + json.dumps([p + "/status" if status else p for p in plurals])

    return _JOB_RULE.sub(fill, text)


@click.command()
@click.option("-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=OUT, show_default=True)
@click.option("--check", is_flag=True, help="Exit 1 if the files on disk differ from what would be generated.")
def main(output: Path, check: bool) -> None:
    """Write (or --check) the seven CRDs, the install's list of them and the ClusterRole's kubeflow.org rules."""
    command = "python -m controller.generators.crds"
    write_or_check(render(), output, check=check, command=command)
    write_or_check({ROLE.name: clusterrole(ROLE.read_text()),
                    KUSTOMIZATION.name: kustomization(KUSTOMIZATION.read_text())}, OUT.parent, check=check, command=command)


if __name__ == "__main__":
    main()
