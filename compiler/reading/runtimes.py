"""Runtimes shipped beside the jobs: Trainer v2 TrainingRuntime and ClusterTrainingRuntime documents.

A team whose TrainJobs need a runtime of their own (an initializer step, a podGroupPolicy, an
image of its own) keeps it in git beside them; `compiler/reading/sources.py` hands such documents
here instead of skipping them (a compiled one, stamped `trainforge.dev/source`, is still skipped:
`validate` may walk an output tree). Each is checked as the API server would at sync: its
identity and metadata (a fixed name; a GitOps tree has no `generateName`) and its `spec` against
the Trainer v2.3.0 CRD (`schemas/trainer_runtime.py`), at the line that breaks it. What the
compiler then knows of it (`RuntimeFacts`: the mlPolicy, the replicated jobs, their ancestor
step and containers, the trainer's image, a podGroupPolicy) is what the trainer-v2 review asks
of a runtime, the same questions it asks of the stock ones (`facts(STOCK_RUNTIMES[...].spec())`).

Which environments get a runtime, and where, is the trainer-v2 target's
(`compiler/targets/trainer_v2_sources.py`): with the jobs that name it, never alone.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from compiler.diagnostics import Diagnostic, closest
from compiler.reading.validation import describe_value
from foundation.frameworks import stock_runtimes as trainer
from schemas.loader import Document, Loc
from schemas.marks import SOURCE
from schemas.types import DNS1123_LABEL, DNS1123_SUBDOMAIN

KINDS = ("TrainingRuntime", "ClusterTrainingRuntime")
API_VERSION = trainer.API_VERSION
ANCESTOR = trainer.ANCESTOR_LABEL  # the Trainer's label naming a job's step
METADATA = ("name", "namespace", "labels", "annotations")


def is_runtime(data: Any) -> bool:
    """A runtime document someone wrote (not one `build` compiled, which carries our source mark)."""
    if not isinstance(data, dict) or data.get("kind") not in KINDS:
        return False
    group = str(data.get("apiVersion", "")).split("/")[0]
    annotations = (data.get("metadata") or {}).get("annotations") if isinstance(data.get("metadata"), dict) else None
    return group == trainer.GROUP and not (isinstance(annotations, dict) and SOURCE in annotations)


@dataclass(frozen=True)
class JobFacts:
    ancestor: Optional[str]  # the step its Job template's label names: trainer, dataset-initializer...
    containers: dict[str, Optional[str]]  # container name -> image


@dataclass(frozen=True)
class RuntimeFacts:
    """What review asks of a runtime, read from its spec."""

    ml_policy: Optional[str]  # torch, mpi, jax, xgboost, ... (None: no policy source)
    pod_group_policy: bool
    jobs: dict[str, JobFacts] = field(default_factory=dict)

    @property
    def trainer_image(self) -> Optional[str]:
        """The image of the `node` container of the trainer step: what trainer.image replaces."""
        for job in self.jobs.values():
            if job.ancestor == trainer.TRAINER_STEP and job.containers.get(trainer.NODE):
                return job.containers[trainer.NODE]
        return None

    def has_step(self, step: str) -> bool:
        """A replicated job of the step `step` with a container of that name (Trainer's initializer rule)."""
        return any(job.ancestor == step and step in job.containers for job in self.jobs.values())


def facts(spec: dict[str, Any]) -> RuntimeFacts:
    """The facts of a runtime `spec` (a stock one, or a document's, checked against the CRD)."""
    policy = spec.get("mlPolicy") if isinstance(spec.get("mlPolicy"), dict) else {}
    sources = [key for key in policy if key != "numNodes"]
    jobs: dict[str, JobFacts] = {}
    replicated = ((spec.get("template") or {}).get("spec") or {}).get("replicatedJobs") or []
    for job in replicated if isinstance(replicated, list) else []:
        template = (job.get("template") or {}) if isinstance(job, dict) else {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        pod = ((template.get("spec") or {}).get("template") or {}).get("spec") or {}
        containers = {c.get("name"): c.get("image") for c in pod.get("containers") or [] if isinstance(c, dict)}
        jobs[str(job.get("name"))] = JobFacts(labels.get(ANCESTOR), containers)
    return RuntimeFacts(sources[0] if sources else None, bool(spec.get("podGroupPolicy")), jobs)


@dataclass(frozen=True)
class SourceRuntime:
    doc: Document
    kind: str
    name: str
    namespace: Optional[str]  # a TrainingRuntime without one lands in each job's namespace that names it

    @property
    def facts(self) -> RuntimeFacts:
        return facts(self.doc.data["spec"])

    @property
    def where(self) -> str:
        return f"{self.doc.file}:{self.doc.start[0]}"

    def placed(self, namespace: Optional[str]) -> dict[str, Any]:
        """The object to apply: the document as written, in `namespace` (a TrainingRuntime's)."""
        data = self.doc.data
        meta = {key: data["metadata"][key] for key in ("name", "labels", "annotations") if key in data["metadata"]}
        if namespace is not None:
            meta["namespace"] = namespace
        return {"apiVersion": API_VERSION, "kind": self.kind, "metadata": meta, "spec": data["spec"]}


def read(docs: list[Document]) -> tuple[list[SourceRuntime], list[Diagnostic]]:
    """The valid runtimes among `docs`, and what is wrong with the others."""
    out: list[SourceRuntime] = []
    problems: list[Diagnostic] = []
    seen: dict[tuple[str, str, Optional[str]], SourceRuntime] = {}
    for doc in docs:
        found = list(_check(doc))
        problems += found
        if found:
            continue
        meta = doc.data["metadata"]
        runtime = SourceRuntime(doc, doc.data["kind"], meta["name"], meta.get("namespace"))
        key = (runtime.kind, runtime.name, runtime.namespace)
        if key in seen:
            problems.append(_error(doc, ("metadata", "name"), f"{runtime.kind} {runtime.name} is also defined in"
                                   f" {seen[key].where}", "keep one of them (a runtime is one object in the cluster)"))
            continue
        seen[key] = runtime
        out.append(runtime)
    return out, problems


def _error(doc: Document, loc: Loc, message: str, fix: str, *, prefer_key: bool = False) -> Diagnostic:
    line, col = doc.position(loc, prefer_key=prefer_key)
    path = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in loc).replace(".[", "[")
    return Diagnostic(doc.file, line, col, path, message, fix)


def _check(doc: Document) -> Iterator[Diagnostic]:
    data = doc.data
    kind = data["kind"]
    if data.get("apiVersion") != API_VERSION:
        yield _error(doc, ("apiVersion",), f"{kind} is served as {API_VERSION} by Trainer v2.3, not"
                     f" '{data.get('apiVersion')}'", f"write apiVersion: {API_VERSION}")
    for key in data:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            yield _error(doc, (key,), f"a {kind} in git has no '{key}'", "remove it (the cluster writes status)",
                         prefer_key=True)
    meta = data.get("metadata")
    if not isinstance(meta, dict):
        yield _error(doc, ("metadata",), f"a {kind} needs metadata with its name", "add metadata: {name: ...}")
    else:
        yield from _metadata(doc, kind, meta)
    if not isinstance(data.get("spec"), dict):
        yield _error(doc, ("spec",), f"a {kind} needs a spec (mlPolicy and template)", "add its spec", prefer_key=True)
    else:
        yield from _spec(doc, data["spec"])


def _metadata(doc: Document, kind: str, meta: dict[str, Any]) -> Iterator[Diagnostic]:
    for key in meta:
        if key not in METADATA:
            fix = "give it a fixed name (a GitOps engine applies one object)" if key == "generateName" else \
                "remove it (the cluster writes it)"
            yield _error(doc, ("metadata", key), f"has no place in a {kind} kept in git", fix,
                         prefer_key=True)
    name = meta.get("name")
    if not isinstance(name, str) or len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        yield _error(doc, ("metadata", "name") if "name" in meta else ("metadata",),
                     f"metadata.name {describe_value(name)} is not a valid object name",
                     "use lower-case letters, digits, '-' and '.', starting and ending with a letter or digit")
    namespace = meta.get("namespace")
    if kind == "ClusterTrainingRuntime" and namespace is not None:
        yield _error(doc, ("metadata", "namespace"), "a ClusterTrainingRuntime is cluster-scoped and has no namespace",
                     "remove metadata.namespace, or make it a TrainingRuntime")
    elif namespace is not None and (not isinstance(namespace, str) or not DNS1123_LABEL.match(namespace)):
        yield _error(doc, ("metadata", "namespace"), f"{describe_value(namespace)} is not a valid namespace",
                     "use at most 63 lower-case letters, digits and '-'")
    for part in ("labels", "annotations"):
        values = meta.get(part, {})
        if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
            yield _error(doc, ("metadata", part), f"metadata.{part} is a mapping of strings", "quote the values")


@functools.cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    from schemas import trainer_runtime

    return Draft202012Validator(trainer_runtime.load())


def _spec(doc: Document, spec: dict[str, Any]) -> Iterator[Diagnostic]:
    for error in sorted(_validator().iter_errors(spec), key=lambda e: list(map(str, e.absolute_path))):
        loc = ("spec", *error.absolute_path)
        if error.validator == "additionalProperties":
            known = sorted(error.schema.get("properties", {}))
            for key in (k for k in error.instance if k not in known):
                close = closest(str(key), known)
                hint = f"did you mean '{close}'? " if close else ""
                shown = ", ".join(known) if len(known) <= 12 else "see the Trainer v2.3 TrainingRuntime reference"
                yield _error(doc, loc + (key,), f"unknown field '{key}'", f"{hint}allowed here: {shown}", prefer_key=True)
        elif error.validator == "required":
            for key in (k for k in error.validator_value if k not in error.instance):
                yield _error(doc, loc, f"{key} is required here", f"add {key}", prefer_key=True)
        elif error.validator == "type":
            yield _error(doc, loc, f"expected {error.validator_value}, got {describe_value(error.instance)}",
                         "write the value in that shape")
        elif error.validator == "enum":
            yield _error(doc, loc, f"{describe_value(error.instance)} is not allowed",
                         f"use one of {', '.join(map(str, error.validator_value))}")
        else:
            yield _error(doc, loc, error.message, "see the Trainer v2.3 TrainingRuntime reference")
