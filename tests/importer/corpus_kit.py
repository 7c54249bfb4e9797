"""The corpus round trip: every published manifest of `corpus/` imported, compiled back and compared.

Each file of `corpus/SOURCES.yaml` is imported on its own (a TrainJob together with the corpus
file that holds the runtime it names), the written folder is rendered again with the real
pipeline (`compile_sources`, what `train-compile render` runs) and each job is compared with
its manifest by `compiler.importing.sameness`: the verdict per job is `equal` or `refused`,
with the reasons. `tally` sums them up the way issue 45's note asks for; run this module
(`python tests/importer/corpus_kit.py`) to print it.
"""

from __future__ import annotations

import functools
import re
import statistics
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import yaml

CORPUS = Path(__file__).resolve().parent / "corpus"


@dataclass
class JobVerdict:
    file: str
    title: str
    equal: bool
    reasons: list[str] = field(default_factory=list)  # the errors' messages, when refused
    kept: list[str] = field(default_factory=list)  # fields kept in podTemplate (any role's)
    spec_lines: int = 0
    manifest_lines: int = 0


def sources() -> list[dict]:
    return yaml.safe_load((CORPUS / "SOURCES.yaml").read_text())


def content_lines(text: str) -> int:
    """Lines that say something: not blank, not only a comment."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.strip().startswith("#"))


def _documents(path: Path) -> list[tuple[int, str]]:
    """(first line, text) of each YAML document of a file."""
    out, start, lines = [], 1, []
    for number, line in enumerate(path.read_text().splitlines(keepends=True), start=1):
        if line.startswith("---"):
            out.append((start, "".join(lines)))
            start, lines = number + 1, []
        else:
            lines.append(line)
    out.append((start, "".join(lines)))
    return out


def manifest_text(path: Path, line: int) -> str:
    """The text of the document of `path` that holds `line`."""
    found = [text for start, text in _documents(path) if start <= line]
    return found[-1] if found else path.read_text()


@functools.cache
def runtimes() -> dict[str, str]:
    """Runtime name -> the corpus file that defines it (for TrainJobs that name one)."""
    out: dict[str, str] = {}
    for entry in sources():
        for doc in yaml.safe_load_all((CORPUS / entry["file"]).read_text()):
            if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("TrainingRuntime"):
                out.setdefault(doc["metadata"]["name"], entry["file"])
    return out


def only_runtimes(file: str) -> bool:
    docs = [d for d in yaml.safe_load_all((CORPUS / file).read_text()) if isinstance(d, dict)]
    return bool(docs) and all(str(d.get("kind", "")).endswith("TrainingRuntime") for d in docs)


def companions(file: str) -> list[str]:
    """The corpus files a file is imported with: the ones holding the runtimes its TrainJobs name."""
    from foundation.frameworks.stock_runtimes import STOCK_RUNTIMES

    names = set()
    for doc in yaml.safe_load_all((CORPUS / file).read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "TrainJob":
            names.add(((doc.get("spec") or {}).get("runtimeRef") or {}).get("name"))
    # a stock runtime's copy (061 is torch-distributed as the release ships it) is the cluster's, not given
    return sorted({runtimes()[n] for n in names if n in runtimes() and n not in STOCK_RUNTIMES} - {file})


@functools.cache
def verdicts(file: str) -> tuple[JobVerdict, ...]:
    from compiler.importing import run, sameness, writing
    from compiler.pipeline import compile_sources

    paths = [str(CORPUS / f) for f in (file, *companions(file))]
    outcome = run.import_sources(paths)
    own = [j for j in outcome.jobs if Path(j.manifest.file).name == file]
    rendered: dict[tuple[str, str], dict] = {}
    if outcome.ok and own:
        with tempfile.TemporaryDirectory() as tmp:
            writing.write(outcome.files, Path(tmp) / "jobs")
            result = compile_sources([Path(tmp) / "jobs"])
            assert result.ok, [d.text() for d in result.diagnostics]
            for bundle in (b for env in result.bundles.values() for b in env):
                job = bundle.rendered_job()
                rendered[(job["metadata"]["namespace"], job["metadata"]["name"])] = job
    out = []
    if not own and only_runtimes(file):  # no job to import: the runtime comes with the TrainJobs naming it
        assert any("only" in d.message and "runtime" in d.message for d in outcome.diagnostics), outcome.diagnostics
        return ()
    for job in own:
        title = f"{job.kind.kind} {job.namespace}/{job.name}"
        manifest = manifest_text(CORPUS / file, job.manifest.position(())[0])
        if job.ok and outcome.ok:
            differences = sameness.differences(job.original, rendered[(job.namespace, job.name)], job.kind)
            out.append(JobVerdict(file, title, not differences, [d.text() for d in differences], job.kept,
                                  content_lines(job.text), content_lines(manifest)))
        else:
            reasons = [d.message for d in job.diagnostics if d.severity == "error"] or [
                d.message for d in outcome.diagnostics if d.severity == "error"]
            out.append(JobVerdict(file, title, False, reasons, job.kept, 0, content_lines(manifest)))
    of_jobs = {d for j in outcome.jobs for d in j.diagnostics}
    for d in outcome.diagnostics:  # a manifest refused before it was read as a job (a legacy version...)
        if d.severity == "error" and d not in of_jobs and Path(d.file).name == file:
            out.append(JobVerdict(file, f"{file}:{d.line}", False, [d.message],
                                  manifest_lines=content_lines(manifest_text(CORPUS / file, d.line))))
    return tuple(out)


# Reasons a user accepts for a refusal, each with why (the corpus test holds every refusal to one).
ACCEPTED = {
    r"is a legacy version no operator serves any more":
        "kubeflow.org/v1alpha2 MPIJobs: today's API servers refuse them; the manifest must move on first",
    r"generateName asks the API server for a new one":
        "a job kept in git needs a fixed name, or every sync creates another job",
    r"wrapped in a CodeFlare AppWrapper":
        "the AppWrapper queues and owns the job; trainforge writes the job itself, not the wrapper",
    r"no shape a mxnet spec can say":
        "MXJob's tuning mode (TunerTracker, TunerServer, Tuner: jobMode MXTune) is out of trainforge's scope",
    r"runs mlPolicy flux, which no trainforge framework runs":
        "a Trainer v2 runtime of a framework trainforge does not have (Flux): the spec's framework cannot be told",
    r"has no trainer step":
        "a runtime without a trainer step (a replicated job labelled trainjob-ancestor-step: trainer): Trainer"
        " v2.3 applies a TrainJob's trainer to that job only, so the job's nodes and command reach nothing",
    r"runtimePatches on the JobSet":
        "a patch of the JobSet's own labels and annotations: a spec's podTemplate reaches the pods, not the JobSet",
}


def accepted(reason: str) -> bool:
    return any(re.search(pattern, reason) for pattern in ACCEPTED)


def all_verdicts() -> list[JobVerdict]:
    return [v for entry in sources() for v in verdicts(entry["file"])]


def tally(found: list[JobVerdict]) -> str:
    equal = [v for v in found if v.equal]
    with_template = [v for v in equal if v.kept]
    ratios = [v.spec_lines / v.manifest_lines for v in equal if v.manifest_lines]
    kept = Counter(f for v in equal for f in dict.fromkeys(_field(k) for k in v.kept))
    refused = Counter(_reason(r) for v in found if not v.equal for r in v.reasons[:1])
    lines = [
        f"corpus: {len(sources())} files, {len(found)} jobs",
        f"round-trip equal: {len(equal)} of {len(found)} ({100 * len(equal) / max(len(found), 1):.0f}%)",
        f"refused: {len(found) - len(equal)}",
        *(f"  {n} x {reason}" for reason, n in refused.most_common()),
        f"spec lines / manifest lines (median of the equal ones): {statistics.median(ratios) if ratios else 0:.2f}",
        f"podTemplate in {len(with_template)} of {len(equal)} imported specs"
        f" ({100 * len(with_template) / max(len(equal), 1):.0f}%)",
        "kept in podTemplate (field: specs):",
        *(f"  {name}: {n}" for name, n in kept.most_common()),
    ]
    return "\n".join(lines)


def _field(kept: str) -> str:
    """`containers[pytorch].resources` -> `containers[].resources`: one name for every kind."""
    return re.sub(r"\[[^\]]*\]", "[]", kept)


def _reason(message: str) -> str:
    return message.split(";")[0][:120]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    verdict_list = all_verdicts()
    for verdict in verdict_list:
        print("EQUAL  " if verdict.equal else "REFUSED", verdict.file, verdict.title, verdict.kept if verdict.equal
              else verdict.reasons[:2])
    print(tally(verdict_list))
