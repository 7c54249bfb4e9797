"""What an environment's jobs need before Flux may apply them, as a kustomize tree of its own.

Under `target: trainer-v2` a job with `policy.restartScope: job` names a TrainingRuntime of
its own (`compiler.targets.trainer_v2_restarts`), and Trainer's webhook refuses the TrainJob,
dry runs included, until that runtime exists. Argo CD applies sync wave -1 first. Stock
Flux cannot: kustomize-controller dry-runs every object of an apply stage before it applies
any, and a TrainingRuntime shares the TrainJob's stage, so one Kustomization holding both
applies nothing, at every retry. So `build` writes `OUT/<env>/_prerequisites/`, a
kustomization of the environment's Namespaces (a runtime needs its namespace) and of every
job's runtime component; `train-compile flux` syncs it in a Kustomization of its own, which
the environment's `dependsOn`, and deletes those kinds from the environment's own output
(`compiler.gitops.flux`), so each object has one owner. The environment's kustomization does
not list the folder: `kubectl kustomize OUT/<env>` and Argo CD see what they always did.

Why it is shaped so:
- written for every environment whose target lets jobs bring a runtime, with or without one
  yet: the Flux objects then depend on the project file alone, never on which jobs exist, so
  a job gaining `restartScope: job` (or the last one leaving) needs no new Flux objects, and
  Flux objects generated before never point at a folder that is gone;
- the folder starts with `_`, which no namespace name can (RFC 1123), so it never meets a
  namespace's folder;
- a Namespace reaches it through `<namespace>/kustomization.yaml` (holding namespace.yaml):
  kustomize loads a file only from inside a kustomization's folder, another kustomization
  from anywhere. Listed under `resources` also for Flux: a kustomization without resources
  gets Flux's `originAnnotations` build option, an annotation Argo CD's objects lack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compiler.emit import namespaces
from compiler.targets import api

if TYPE_CHECKING:
    from compiler.pipeline import Result
    from schemas.bundle import Bundle

FOLDER = "_prerequisites"


def kustomizations(result: "Result", env: str, bundles: "list[Bundle]",
                   spaces: list[dict]) -> dict[str, dict[str, list[str]]]:
    """The prerequisites' kustomizations of one environment (path relative to its folder ->
    the kustomization's lists); none when its target gives jobs no runtime of their own.
    `spaces`: the environment's Namespace objects."""
    runtime = api(result.project.target_for(env)).job_runtime
    if runtime is None:
        return {}
    names = [n["metadata"]["name"] for n in spaces]
    out = {f"{name}/kustomization.yaml": {"resources": [namespaces.FILE]} for name in names}
    components = sorted(f"../{b.target.namespace}/{b.target.name}/{runtime.component}"
                        for b in bundles if b.component(runtime.component) is not None)
    out[f"{FOLDER}/kustomization.yaml"] = {"resources": sorted(f"../{name}" for name in names),
                                           **({"components": components} if components else {})}
    return out
