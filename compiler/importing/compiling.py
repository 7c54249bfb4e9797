"""The importer's compiles: each spec compiled as `train-compile render` compiles it, in memory,
with the project settings the import writes (`Settings`), and what refuses it said at the
manifest. `compile_specs` compiles the jobs of one import together, as `build` compiles a
folder; `review_targets` reviews a spec whose targets its first compile made already.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from compiler.diagnostics import Diagnostic, has_errors
from compiler.reading.sources import PROJECT_FILE

if TYPE_CHECKING:
    from compiler.importing.run import Job

Obj = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """The project document the jobs compile with, its model (None: invalid, and each compile
    says why), and the Trainer v2 runtimes written beside the jobs (cleaned documents)."""

    data: Obj
    model: Any
    runtimes: tuple[Obj, ...] = ()


Compiled = tuple[Optional[Obj], list[Diagnostic], tuple[Any, ...]]  # the rendered job, refusals, its targets


def compile_specs(jobs: list[Job], settings: Settings, *, review: bool = True,
                  lower: bool = True) -> dict[int, Compiled]:
    """`compile_spec` of each job (by `id`), in one compile of them all when none is refused
    (a refusal is then found again one job at a time: each is told at its own manifest)."""
    from compiler.pipeline import compile_documents
    from compiler.reading.sources import Sources
    from schemas.loader import Document

    if len(jobs) < 2:
        return {id(j): compile_spec(j, settings, review=review, lower=lower) for j in jobs}
    docs = {id(j): Document(f"{j.name}.yaml", 0, j.spec) for j in jobs}
    runtimes = [Document(f"runtime-{i}.yaml", 0, data) for i, data in enumerate(settings.runtimes)]
    result = compile_documents(Sources(jobs=list(docs.values()), project=Document(PROJECT_FILE, 0, settings.data),
                                       runtimes=runtimes), review=review, lower_jobs=lower, project=settings.model)
    if not result.ok:
        return {id(j): compile_spec(j, settings, review=review, lower=lower) for j in jobs}
    return _by_doc(docs, result)


def _by_doc(docs: dict[int, Any], result: Any) -> dict[int, Compiled]:
    """Each document's rendered job (its first environment's) and targets."""
    found: dict[int, list[Any]] = {}
    for env in result.bundles.values():
        for bundle in env:
            found.setdefault(id(bundle.target.doc), []).append(bundle)
    out: dict[int, Compiled] = {}
    for key, doc in docs.items():
        bundles = found.get(id(doc), [])
        out[key] = (bundles[0].rendered_job() if bundles else None), [], tuple(b.target for b in bundles)
    return out


def compile_spec(job: Job, settings: Settings, *, review: bool = True, lower: bool = True) -> Compiled:
    """The job `render` makes of the spec (None without `lower`: the review alone), and what
    refuses it (at the manifest)."""
    from compiler.pipeline import compile_documents
    from compiler.reading.sources import Sources
    from schemas.loader import Document

    assert job.spec is not None
    # the data `writing.dump` writes and the loader reads back (the corpus test renders every
    # written folder; tests/importer/test_writing.py holds the text to the data)
    doc = Document(f"{job.name}.yaml", 0, job.spec)
    runtimes = [Document(f"runtime-{i}.yaml", 0, data) for i, data in enumerate(settings.runtimes)]
    result = compile_documents(Sources(jobs=[doc], project=Document(PROJECT_FILE, 0, settings.data), runtimes=runtimes),
                               review=review, lower_jobs=lower, project=settings.model)
    if not result.ok:
        return None, [_refused(job, result.diagnostics)], ()
    return _by_doc({0: doc}, result)[0]


def _refused(job: Job, diagnostics: list[Diagnostic]) -> Diagnostic:
    shown = "; ".join(f"{d.path}: {d.message}" for d in diagnostics if d.severity == "error")
    return job.manifest.error((), f"the imported spec does not compile: {shown}",
                              "see docs/import.md, 'What is refused'", prefer_key=False)


def review_targets(job: Job, targets: tuple[Any, ...]) -> list[Diagnostic]:
    """The review of a spec whose targets are made already (its probe's, when the spec did not
    change after it): the rules `compile_documents` runs, without validating the spec again."""
    from compiler.review import rules

    found = [d for target in targets for d in rules.check(target)]
    return [_refused(job, found)] if has_errors(found) else []


def validated(settings: Obj) -> Any:
    """The project of `settings` (validated once per import: every job compiles with it), or
    None when it is invalid: each compile then says why, at the project file."""
    from pydantic import ValidationError

    from schemas.project import Project

    try:
        return Project.model_validate(settings)
    except ValidationError:
        return None
