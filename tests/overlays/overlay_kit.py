"""Builders for the overlay tests (imported by the test modules; see conftest.py).

`build_bundle` turns a few lines of spec into the lowered `Bundle` the overlays receive,
through the real loader, resolver and rules, so a test input that the compiler would
reject fails loudly instead of testing an impossible job.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Optional

import jsonschema
import yaml
from testworld.paths import MPI_OPERATOR_CRD

from compiler.emit import serialize, tree
from compiler.reading.resolve import targets_for
from compiler.review import rules
from compiler.targets import kubeflow_v1
from compiler.targets.lowering import lower
from schemas.bundle import Bundle, Component
from schemas.loader import load_text
from schemas.project import DEFAULT_PROJECT, Project
from schemas.trainjob import TrainJob


def project(environments: Optional[dict[str, Any]] = None, **fields: Any) -> Project:
    data = {"apiVersion": "trainforge.dev/v1alpha1", "kind": "Project", **fields}
    if environments is not None:
        data["environments"] = environments
    return Project.model_validate(data)


def build_bundle(
    spec: Optional[dict[str, Any]] = None,
    *,
    framework: str = "pytorch",
    name: str = "mini",
    env: Optional[str] = None,
    project_: Project = DEFAULT_PROJECT,
    metadata: Optional[dict[str, Any]] = None,
) -> Bundle:
    """The lowered bundle (no overlays yet) of a small job, validated like the CLI does."""
    doc_data = {
        "apiVersion": "trainforge.dev/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, **(metadata or {})},
        "spec": {"framework": framework, "image": "busybox:1.36", **(spec or {})},
    }
    (doc,), problems = load_text(serialize.dump(doc_data), "job.yaml")
    assert not problems
    job = TrainJob.model_validate(doc.data)
    env = env or project_.environment_names()[0]
    targets, diagnostics = targets_for(doc, job, project_, [env])
    diagnostics += [d for t in targets for d in rules.check(t)]
    assert not diagnostics, [d.text() for d in diagnostics]
    return lower(targets[0], kubeflow_v1.API)


def component_yaml(bundle: Bundle, component: Optional[Component]) -> str:
    """The component's folder as `build` writes it, one `# file` header per file."""
    assert component is not None, "the overlay wrote no component"
    files = tree.bundle_files(bundle.with_component(component))
    prefix = f"{tree.job_dir(bundle)}/{component.name}/"
    return "".join(
        f"# {path[len(prefix):]}\n{text}" for path, text in sorted(files.items()) if path.startswith(prefix)
    )


def tree_yaml(files: dict[str, str]) -> str:
    return "".join(f"# {path}\n{text}" for path, text in sorted(files.items()))


def templates(job: dict, bundle: Bundle) -> dict[str, dict]:
    """Replica type -> pod template of a (rendered) job."""
    replicas = job["spec"][bundle.adapter.facts.replica_specs]
    return {rtype: replica["template"] for rtype, replica in replicas.items()}


# --- schema validation of the objects the overlays write ---------------------------------

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("TRAINFORGE_SHARED") or REPO.parent / "shared")
CRD_FILES = {
    "scheduling.volcano.sh/v1beta1": "scheduling.volcano.sh_podgroups.yaml",
    "scheduling.x-k8s.io/v1alpha1": "scheduling.x-k8s.io_podgroups.yaml",
}
KUBERNETES_VERSION = "1.32.0"  # the machine's kubectl


@functools.cache
def crd_validator(api_version: str, kind: str = "PodGroup") -> jsonschema.protocols.Validator:
    """A validator from a reference CRD's openAPIV3Schema (a structural schema: unknown
    fields are errors, since the API server's pruning would silently drop them)."""
    if kind == "PodGroup":
        path = SHARED / "reference/crds/scheduling" / CRD_FILES[api_version]
    elif api_version.startswith("trainer.kubeflow.org/"):  # the trainer-v2 target's TrainJob
        path = SHARED / "reference/crds/trainer-v2.3.0" / f"trainer.kubeflow.org_{kind.lower()}s.yaml"
    elif api_version == "kubeflow.org/v2beta1":  # the mpi-operator target's MPIJob
        path = MPI_OPERATOR_CRD
    else:
        path = SHARED / "reference/crds/kubeflow-v1" / f"kubeflow.org_{kind.lower()}s.yaml"
    crd = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)  # the CRDs are large
    version = next(v for v in crd["spec"]["versions"] if v["name"] == api_version.split("/")[1])
    schema = _closed(version["schema"]["openAPIV3Schema"])
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def _closed(schema: Any) -> Any:
    """Copy with additionalProperties: false wherever properties are listed (and the
    int-or-string extension turned into JSON Schema)."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) for k, v in schema.items() if not k.startswith("x-kubernetes")}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    return out


def crd_errors(obj: dict) -> list[str]:
    validator = crd_validator(obj["apiVersion"], obj["kind"])
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]


def kubernetes_errors(obj: dict) -> list[str]:
    """Errors from the Kubernetes OpenAPI schemas (strict: unknown fields are errors)."""
    try:
        import kubernetes_validate
    except ImportError:  # pragma: no cover - a set-up problem, not a test result
        raise AssertionError("kubernetes-validate belongs to the test extras; run make test to install it") from None

    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [f"{'.'.join(map(str, exc.path))}: {exc.message}"]
    return []
