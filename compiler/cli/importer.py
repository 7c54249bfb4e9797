"""`train-compile import SRC... -o DIR [--check]`: existing Kubeflow manifests to TrainJob specs.

The command around `compiler.importing`: it reads the sources (files, folders, `-` for
stdin), prints the diagnostics in the chosen format, and either writes the specs (all of
them, or nothing when any job is refused: exit 1) or, with `--check`, prints the round trip
of each job (what `render` of the imported spec gives against the manifest, difference by
difference) and writes nothing. A job that is not the same job after the round trip is
refused by the import itself, so `--check` is the way to see why. Only click is imported at
module level (the CLI's start-up stays fast: tests/compiler/cli/test_cli_startup.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from compiler.diagnostics import FORMATS

if TYPE_CHECKING:
    from compiler.importing.run import Job, Outcome


@click.command("import")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@click.option("-o", "--output", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to write the specs into (with a trainforge.yaml when the jobs need project settings).")
@click.option("--check", is_flag=True, default=False,
              help="Do the round trip in memory and print each difference; write nothing (exit 1 when any job differs).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="How to print diagnostics.")
def import_command(sources: tuple[str, ...], out: Optional[Path], check: bool, fmt: str) -> None:
    """Turn Kubeflow job manifests (kubeflow.org/v1 jobs, files, folders, `-` for stdin, or
    what `kubectl get -o yaml` prints) into TrainJob specs whose compiled job is the same job.

    Fields the spec has no field for are kept in podTemplate and listed; what the spec cannot
    say at all is an error at the manifest's line, and then nothing is written."""
    if out is None and not check:
        raise click.UsageError("name the folder to write the specs into with -o DIR (or pass --check)")
    from compiler.emit.reporting import render_diagnostics
    from compiler.importing import project, run, writing
    from compiler.reading.sources import project_file_for

    governing = project_file_for(out) if out is not None else None
    existing = project.existing(str(governing)) if governing is not None and governing.is_file() else None
    outcome = run.import_sources(list(sources), existing_project=existing)
    text = render_diagnostics(outcome.diagnostics, fmt)
    if text:
        (sys.stderr if fmt == "text" else sys.stdout).write(text)
    if check:
        sys.stdout.write(check_report(outcome))
        sys.exit(0 if outcome.ok and all(j.ok for j in outcome.jobs) else 1)
    if not outcome.ok:
        errors = sum(1 for d in outcome.diagnostics if d.severity == "error")
        click.echo(f"train-compile: {errors} error(s); nothing was written", err=True)
        sys.exit(1)
    assert out is not None
    try:
        written = writing.write(outcome.files, out)
    except writing.Conflict as exc:
        click.echo(f"train-compile: {exc}; nothing was written", err=True)
        sys.exit(1)
    click.echo("\n".join(summary(outcome, out, written, governing if existing is not None else None)), err=True)


def _title(job: "Job") -> str:
    return f"{job.kind.kind} {job.namespace}/{job.name}"


def summary(outcome: "Outcome", out: Path, written: list[str], governing: Optional[Path]) -> list[str]:
    jobs = [j for j in outcome.jobs if j.ok]
    lines = [f"train-compile: imported {len(jobs)} job(s) into {out}"]
    for job in jobs:
        kept = f"; kept in podTemplate: {', '.join(job.kept)}" if job.kept else ""
        lines.append(f"  {_title(job)} -> {out / job.path}{kept}")
    if governing is not None:
        lines.append(f"  project settings: {governing} (there already)")
    elif any(p.endswith("trainforge.yaml") for p in written):
        lines.append(f"  project settings -> {out / 'trainforge.yaml'}")
    if outcome.left_out:
        lines.append("  not a training job, left out: " + ", ".join(m.title for m in outcome.left_out))
    return lines


def check_report(outcome: "Outcome") -> str:
    """Each job's round trip: the same job, or each difference (field path: original -> round trip)."""
    lines = []
    for job in outcome.jobs:
        where = f"{job.manifest.file}:{job.manifest.position(())[0]}"
        if job.ok:
            kept = f" (kept in podTemplate: {', '.join(job.kept)})" if job.kept else ""
            lines.append(f"{_title(job)} ({where}): the same job{kept}")
        elif job.differences:
            lines.append(f"{_title(job)} ({where}): {len(job.differences)} difference(s), original -> round trip")
            lines += [f"  {d.text()}" for d in job.differences]
        else:
            lines.append(f"{_title(job)} ({where}): not imported (see the errors above)")
    if outcome.left_out:
        lines.append("not a training job, left out: " + ", ".join(m.title for m in outcome.left_out))
    return "".join(line + "\n" for line in lines)
