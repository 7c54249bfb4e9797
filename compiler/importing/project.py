"""The project settings (`trainforge.yaml`) the imported jobs need to compile back to themselves.

One folder of specs has one project file, so its settings must suit every job imported into
it: the environment's `target` (the kind's: `kubeflow-v1` for the Training Operator's jobs),
its `gpuResource` (the `*/gpu` the jobs ask for, when it is not `nvidia.com/gpu`), the pod
security level their pods meet (`privileged` when any pod uses what baseline forbids, such as
hostNetwork or hostPath; the review would refuse the spec otherwise), and
`namespaces: {create: false}`: the namespaces a job already ran in exist and belong to
someone, so the tree must not create (and label) them. Jobs that need different targets or
GPU resources cannot share a folder: that is an error naming both.
"""

from __future__ import annotations

from typing import Any, Optional

from compiler import podsecurity
from compiler.diagnostics import Diagnostic
from compiler.importing.kinds import JobKind
from compiler.importing.pods import DEFAULT_GPU, gpu_asked
from compiler.importing.manifests import Manifest
from compiler.reading.sources import PROJECT_FILE
from schemas.project import DEFAULT_ENV, DEFAULT_TARGET
from schemas.trainjob import API_VERSION

Obj = dict[str, Any]
PRIVILEGED, BASELINE = "privileged", "baseline"


def pod_security(kind: JobKind, job: Obj) -> str:
    """The level the job's pods need: privileged when any breaks a baseline control."""
    for _, template in kind.templates(job):
        if podsecurity.findings(template, BASELINE):
            return PRIVILEGED
    return BASELINE


def settings(jobs: list[tuple[Manifest, JobKind, Obj]]) -> tuple[Obj, list[Diagnostic]]:
    """The project document for `jobs` (manifest, kind, canonical job), and what keeps them apart."""
    problems: list[Diagnostic] = []
    first: dict[str, tuple[str, Manifest]] = {}
    for manifest, kind, job in jobs:
        for setting, value in (("target", kind.target), ("gpuResource", gpu_asked(kind.containers(job)))):
            if value is None:
                continue
            seen = first.setdefault(setting, (value, manifest))
            if seen[0] != value:
                problems.append(manifest.error(
                    (), f"this job needs {setting} {value}, and {seen[1].title} ({seen[1].file}) needs {seen[0]}:"
                    " one folder has one trainforge.yaml", "import them into separate folders", prefer_key=False))
    level = PRIVILEGED if any(pod_security(kind, job) == PRIVILEGED for _, kind, job in jobs) else BASELINE
    target = first["target"][0] if "target" in first else DEFAULT_TARGET
    gpu = first["gpuResource"][0] if "gpuResource" in first else DEFAULT_GPU
    return document(target=target, gpu=gpu, level=level), problems


def document(*, target: str, gpu: str, level: str) -> Obj:
    defaults: Obj = {"namespaces": {"create": False}}
    if target != DEFAULT_TARGET:
        defaults["target"] = target
    project: Obj = {"apiVersion": API_VERSION, "kind": "Project", "defaults": defaults}
    if gpu != DEFAULT_GPU:
        project["environments"] = {DEFAULT_ENV: {"gpuResource": gpu}}
    if level != BASELINE:
        project["policy"] = {"podSecurity": level}
    return project


def existing(path: Optional[str]) -> Optional[Obj]:
    """The project document at `path`, when there is one to import into."""
    from pathlib import Path

    from schemas.loader import load_file

    if path is None or not Path(path).is_file():
        return None
    docs, problems = load_file(Path(path))
    return docs[0].data if docs and not problems else None


__all__ = ["PROJECT_FILE", "settings", "document", "existing", "pod_security"]
