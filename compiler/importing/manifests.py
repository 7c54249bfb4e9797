"""Reading what `train-compile import` is given: files, folders or `-`, into job manifests.

Every YAML document is read with the project's position-keeping loader (`schemas/loader.py`),
so whatever the importer refuses is named at its file, line and column. A `kind: List` (what
`kubectl get -o yaml` prints for several objects) is opened item by item: a `Manifest` keeps
the path of its object inside the document (`("items", 2)`) so its positions stay right.
Each object is sorted here: a job of a kind the importer reads (`compiler/importing/kinds.py`),
a Kubeflow Trainer v2 object (read by `compiler/importing/trainer.py`), a legacy or unknown
version of a job kind (refused, with the reason), or something else beside the jobs (a
ConfigMap, a Kueue LocalQueue, a Service), which is left out and named in one notice.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from compiler.diagnostics import Diagnostic, closest
from compiler.importing import kinds
from compiler.reading.validation import format_path
from schemas.loader import Document, Loc, load_file, load_text, yaml_files
from foundation.frameworks.stock_runtimes import GROUP as TRAINER_GROUP

STDIN = "-"
STDIN_NAME = "<stdin>"
OUR_GROUP = "trainforge.dev"
WRAPPERS = {"AppWrapper": "a CodeFlare AppWrapper (workload.codeflare.dev)"}


@dataclass
class Manifest:
    """One Kubernetes object of the input: its document and where in it the object is."""

    doc: Document
    prefix: Loc  # () for a document that is the object, ("items", i) for an item of a List
    data: dict[str, Any]

    @property
    def file(self) -> str:
        return self.doc.file

    def position(self, loc: Loc, *, prefer_key: bool = True) -> tuple[int, int]:
        return self.doc.position(self.prefix + tuple(loc), prefer_key=prefer_key)

    def error(self, loc: Loc, message: str, fix: str = "", *, severity: str = "error",
              prefer_key: bool = True) -> Diagnostic:
        line, col = self.position(loc, prefer_key=prefer_key)
        return Diagnostic(self.file, line, col, format_path(tuple(loc)), message, fix, severity)  # type: ignore[arg-type]

    @property
    def title(self) -> str:
        meta = self.data.get("metadata") if isinstance(self.data.get("metadata"), dict) else {}
        name = meta.get("name") or meta.get("generateName") or "(no name)"
        return f"{self.data.get('kind')} {name}"


@dataclass
class Input:
    """Everything read, sorted."""

    jobs: list[Manifest] = field(default_factory=list)  # kinds.KINDS
    trainer: list[Manifest] = field(default_factory=list)  # trainer.kubeflow.org objects
    left_out: list[Manifest] = field(default_factory=list)  # not training jobs
    diagnostics: list[Diagnostic] = field(default_factory=list)
    files: int = 0
    first: str = ""  # the first file read, where "found no training job" points


def read(sources: list[str]) -> Input:
    """Read every source (a file, a folder searched for YAML files, or `-` for stdin)."""
    out = Input()
    for source in sources:
        if source == STDIN:
            documents, problems = load_text(sys.stdin.read(), STDIN_NAME)
            _add(out, documents, problems, STDIN_NAME)
            continue
        path = Path(source)
        if not path.exists():
            out.diagnostics.append(Diagnostic(source, 1, 1, "", "no such file or folder", "check the path"))
            continue
        for file in yaml_files(path) if path.is_dir() else [path]:
            _add(out, *load_file(file), str(file))
    return out


def read_text(text: str, name: str) -> Input:
    """The same for one text (tests, the benchmark)."""
    out = Input()
    _add(out, *load_text(text, name), name)
    return out


def _add(out: Input, documents: list[Document], problems: list[Any], name: str = "") -> None:
    out.files += 1
    out.first = out.first or name
    out.diagnostics += [Diagnostic(p.file, p.line, p.col, "", p.message, p.fix) for p in problems]
    for doc in documents:
        _sort(out, doc, (), doc.data)


def _sort(out: Input, doc: Document, prefix: Loc, data: Any) -> None:
    if not isinstance(data, dict) or not data.get("kind") or not data.get("apiVersion"):
        what = "a list" if isinstance(data, list) else "a mapping without kind and apiVersion" \
            if isinstance(data, dict) else "not a mapping"
        line, col = doc.position(prefix)
        out.diagnostics.append(Diagnostic(
            doc.file, line, col, format_path(prefix), f"not a Kubernetes object ({what})",
            "give import the manifests of your training jobs (apiVersion, kind, metadata, spec)"))
        return
    manifest = Manifest(doc, prefix, data)
    api_version, kind = str(data["apiVersion"]), data["kind"]
    if kind == "List" and isinstance(data.get("items"), list):
        for i, item in enumerate(data["items"]):
            _sort(out, doc, prefix + ("items", i), item)
    elif kinds.kind_of(data) is not None:
        out.jobs.append(manifest)
    elif api_version.split("/")[0] == TRAINER_GROUP:
        out.trainer.append(manifest)
    else:
        refused = _refusal(manifest)
        if refused is not None:
            out.diagnostics.append(refused)
        else:
            out.left_out.append(manifest)


def _refusal(manifest: Manifest) -> Optional[Diagnostic]:
    """A job the importer will not read, with the reason; None for what is simply no job."""
    data = manifest.data
    api_version, kind = str(data["apiVersion"]), str(data["kind"])
    legacy = kinds.refusal(data)
    if legacy is not None:
        return manifest.error(("apiVersion",), legacy, prefer_key=False)
    if kinds.is_job_kind(kind) and api_version.split("/")[0] == kinds.GROUP:
        served = ", ".join(sorted(v for (v, k) in kinds.KINDS if k == kind))
        return manifest.error(("apiVersion",), f"{api_version} {kind} is not a version train-compile writes ({served})",
                              f"move the manifest to {served}, or import it with a train-compile that writes"
                              f" {api_version}", prefer_key=False)
    group = api_version.split("/")[0]
    if group in (kinds.GROUP, TRAINER_GROUP) and not kinds.is_job_kind(kind) and _job_like(kind):
        meant = closest(kind, {k for (_, k) in kinds.KINDS})
        hint = f"did you mean {meant}? " if meant else ""
        return manifest.error(("kind",), f"{api_version} {kind} is no job kind train-compile reads",
                              f"{hint}import reads {kinds.known()}", prefer_key=False)
    if api_version.split("/")[0] == OUR_GROUP:
        return manifest.error(("kind",), f"{kind} is a trainforge spec already, not a manifest to import",
                              "compile it with train-compile build; import reads Kubeflow jobs", prefer_key=False)
    if kind in WRAPPERS and _wraps_job(data):
        return manifest.error(("kind",), f"the job is wrapped in {WRAPPERS[kind]}, which trainforge does not write;"
                              " importing the job alone would run it without the wrapper's queueing",
                              "import the wrapped job's own manifest if it may run without the wrapper",
                              prefer_key=False)
    return None


def _job_like(kind: str) -> bool:
    """A kind that is a misspelt job kind (`PytorchJob`, `PyTorchJobs`, `PyTorchJobb`), not one of
    the group's other kinds (Katib's `Experiment`, a `Notebook`: not training jobs, left out)."""
    import difflib

    if kind.lower().rstrip("s").endswith("job"):
        return True
    return bool(difflib.get_close_matches(kind, [k for (_, k) in kinds.KINDS], n=1, cutoff=0.75))


def _wraps_job(data: Any) -> bool:
    if isinstance(data, dict):
        if kinds.kind_of(data) is not None:
            return True
        return any(_wraps_job(v) for v in data.values())
    if isinstance(data, list):
        return any(_wraps_job(v) for v in data)
    return False
