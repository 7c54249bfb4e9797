"""The trainer-v2 target's runtimes: the one a job names, what is known of it, and shipping it.

A TrainJob names its runtime (`trainer_v2_rules.runtime_ref`): a stock ClusterTrainingRuntime of
the Trainer release (known from `foundation.frameworks.stock_runtimes`), one written beside the jobs
(`compiler/reading/runtimes.py`), or one the compiler cannot see (in the cluster already). Review
asks the same questions of the first two (`RuntimeFacts`) and says what it cannot check of the
third.

A runtime from the sources goes into the environment's tree with the jobs that name it, in a
`runtime/` component of one of them, the way a job's whole-job-restart runtime does (and so,
for Flux, into the environment's `_prerequisites`, and for Argo CD into the prerequisite sync
wave: Trainer's webhook refuses a TrainJob whose runtime does not exist yet). One object, one
owner: the first job that names it (by namespace and name) carries it; a TrainingRuntime written
without a namespace is placed in each namespace whose jobs name it. A runtime no job of the
environment names is not compiled there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Optional

from compiler.diagnostics import Diagnostic
from foundation.frameworks import adapter as adapter_for
from foundation.frameworks.base import TrainerV2Capable
from foundation.frameworks.stock_runtimes import STOCK_RUNTIMES
from compiler.reading.runtimes import ANCESTOR, RuntimeFacts, SourceRuntime, facts
from overlays import waves
from schemas.bundle import Component
from schemas.trainjob import RuntimeRef

if TYPE_CHECKING:
    from compiler.reading.resolve import Target
    from schemas.bundle import Bundle
    from schemas.loader import Loc

COMPONENT = "runtime"  # the folder a job's own runtime lives in (shared with whole-job restarts)
CLUSTER, NAMESPACED = "ClusterTrainingRuntime", "TrainingRuntime"


def capability(target: "Target") -> TrainerV2Capable:
    found = adapter_for(target.spec.framework).trainer_v2
    assert found is not None, "rules refuse frameworks without a Trainer v2 runtime"
    return found


def runtime_ref(target: "Target") -> dict[str, str]:
    """The TrainJob's runtimeRef: the framework's stock runtime, or the one spec.runtime names."""
    runtime = target.spec.runtime
    if runtime is None:
        return {"name": capability(target).runtime, "kind": "ClusterTrainingRuntime"}
    if isinstance(runtime, RuntimeRef):  # a TrainingRuntime is looked up in the job's namespace
        return {"name": runtime.name, "kind": runtime.kind}
    return {"name": runtime, "kind": "ClusterTrainingRuntime"}


def stock(ref: dict[str, str]) -> bool:
    return ref["kind"] == CLUSTER and ref["name"] in STOCK_RUNTIMES


def source(target: "Target", ref: Optional[dict[str, str]] = None) -> Optional[SourceRuntime]:
    """The runtime from the sources that the job names, where Trainer would look for it."""
    ref = ref or runtime_ref(target)
    for runtime in target.runtimes:
        if (runtime.kind, runtime.name) == (ref["kind"], ref["name"]) and runtime.namespace in (None, target.namespace):
            return runtime
    return None


def elsewhere(target: "Target") -> Optional[SourceRuntime]:
    """A TrainingRuntime of the sources by the job's runtime name, but in another namespace."""
    ref = runtime_ref(target)
    return next((r for r in target.runtimes if (r.kind, r.name) == (ref["kind"], ref["name"])
                 and r.namespace not in (None, target.namespace)), None)


def known(target: "Target") -> tuple[dict[str, str], Optional[RuntimeFacts]]:
    """The job's runtimeRef and its facts, when the compiler can see the runtime."""
    ref = runtime_ref(target)
    if stock(ref):
        return ref, facts(STOCK_RUNTIMES[ref["name"]].spec())
    found = source(target, ref)
    return ref, found.facts if found is not None else None


def with_runtimes(bundles: list["Bundle"]) -> list["Bundle"]:
    """`bundles` with each runtime of the sources they name, carried by one of them."""
    owned: set[tuple[str, str, Optional[str]]] = set()
    out = list(bundles)
    for i in sorted(range(len(out)), key=lambda i: (out[i].target.namespace, out[i].target.name)):
        target = out[i].target
        found = source(target) if target.runtimes and target.spec.policy.restartScope != "job" else None
        if found is None:
            continue
        namespace = target.namespace if found.kind == NAMESPACED else None
        key = (found.kind, found.name, namespace)
        if key not in owned:
            owned.add(key)
            out[i] = out[i].with_component(Component(COMPONENT, resources=(waves.annotate(found.placed(namespace)),)))
    return out


# --- review: what a job asks of the runtime it names ---------------------------------------------

def _named(ref: dict[str, str], found: Optional[SourceRuntime]) -> str:
    if stock(ref):
        return f"the stock runtime {ref['name']}"
    return f"{ref['kind']} {ref['name']}" + (f" ({found.where})" if found is not None else "")


def _report(target: "Target", loc: "Loc", what: str, fix: str, severity: str = "error") -> Diagnostic:
    d = target.view.error(loc, what, fix, prefer_key=True)
    return d if severity == "error" else Diagnostic(d.file, d.line, d.col, d.path, d.message, d.fix, severity)  # type: ignore[arg-type]


def check(target: "Target") -> Iterator[Diagnostic]:
    """The trainer-v2 rules about the runtime itself (registered in `trainer_v2_rules.check`)."""
    ref, known_facts = known(target)
    found = None if stock(ref) else source(target, ref)
    other = elsewhere(target) if found is None else None
    if other is not None:
        yield _report(target, ("runtime",), f"TrainingRuntime {ref['name']} ({other.where}) is in namespace"
                      f" {other.namespace}, and Trainer looks for it in the job's, {target.namespace}",
                      "put the runtime in the job's namespace, or leave its namespace out (it is placed in the"
                      " namespace of each job that names it)")
    if known_facts is None:
        if other is None:
            yield from _unseen(target, ref)
        return
    capable = adapter_for(target.spec.framework).trainer_v2
    for job in (capable.program_jobs if capable is not None else ()):
        have = known_facts.jobs.get(job)
        if have is None or "node" not in have.containers:
            what = f"no replicated job '{job}'" if have is None else f"no container 'node' in its replicated job '{job}'"
            yield _report(target, ("runtime",), f"{_named(ref, found)} has {what}, which a {target.spec.framework}"
                          " TrainJob's runtimePatches patch (pod labels, volumes, placement; Trainer refuses a patch"
                          " of a container the runtime lacks)",
                          f"name the trainer's replicated job '{job}' and its container 'node' in the runtime, or name"
                          " another runtime")
    if not any(job.ancestor == "trainer" for job in known_facts.jobs.values()):
        yield _report(target, ("runtime",), f"{_named(ref, found)} has no trainer step (a replicated job labelled"
                      f" {ANCESTOR}: trainer), and Trainer applies the TrainJob's trainer (image, command, env, nodes,"
                      " resources) to that job only", f"label the runtime's node job with {ANCESTOR}: trainer")
    elif target.spec.image is None and known_facts.trainer_image is None:
        yield _report(target, ("image",), f"is required: {_named(ref, found)} gives its trainer's node container no"
                      " image, and the job names none", "add 'image', or give the runtime's node container one")
    for step in ("dataset", "model"):
        if getattr(target.spec.initializer, step, None) is not None and not known_facts.has_step(f"{step}-initializer"):
            yield _report(target, ("initializer", step), f"{_named(ref, found)} has no {step}-initializer step (a"
                          f" replicated job labelled {ANCESTOR}: {step}-initializer, with a container of that name),"
                          f" so Trainer would ignore initializer.{step}",
                          "name a runtime with that step in spec.runtime (a TrainingRuntime beside the job is compiled"
                          f" with it), or remove initializer.{step}")


def _unseen(target: "Target", ref: dict[str, str]) -> Iterator[Diagnostic]:
    """What only the cluster's runtime can answer, as notices at the field that relies on it."""
    asks = ([("image", "gives its trainer's node container an image (the job names none)")]
            if target.spec.image is None else [])
    asks += [(("initializer", step), f"has a {step}-initializer step")
             for step in ("dataset", "model") if getattr(target.spec.initializer, step, None) is not None]
    for loc, what in asks:
        yield _report(target, (loc,) if isinstance(loc, str) else loc,
                      f"the compiler cannot see {ref['kind']} {ref['name']} (neither a stock runtime nor in the sources)",
                      f"make sure it {what}, or write it beside the job so it is checked and compiled with it",
                      severity="notice")
