"""What every `train-compile` command shares: the SOURCES argument, `--env`, and the run of
the pipeline with its diagnostics reported and a failed run ended (exit 1). Only `click` is
imported here; the pipeline is imported when a command runs (`train-compile --help` stays fast)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from compiler.cli.quickexit import keep

if TYPE_CHECKING:
    from compiler.pipeline import Result

sources_argument = click.argument(
    "sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)
)


def compile_or_usage_error(sources: tuple[Path, ...], env: Optional[str], *, lower_jobs: bool = True) -> "Result":
    """The pipeline's result for `sources`; an environment the project lacks is a usage error."""
    from compiler.pipeline import UnknownEnvironment, compile_sources

    try:
        result = compile_sources(list(sources), env=env, lower_jobs=lower_jobs)
    except UnknownEnvironment as exc:
        raise click.UsageError(str(exc)) from None
    keep(result)
    return result


def report(result: "Result", fmt: str, *, to_stderr: bool = False) -> None:
    """Print the diagnostics: text on stderr, machine formats on stdout (unless `to_stderr`)."""
    from compiler.emit.reporting import render_diagnostics

    text = render_diagnostics(result.diagnostics, fmt)
    if not text:
        return
    stream = sys.stderr if (fmt == "text" or to_stderr) else sys.stdout
    stream.write(text)


def fail_if_invalid(result: "Result", *, quiet: bool = False) -> None:
    """Exit 1, having written nothing, when the run found errors; `quiet` leaves out the
    closing line (where stderr already holds a machine-format document: `render --format json`)."""
    if not result.ok:
        if not quiet:
            errors = sum(1 for d in result.diagnostics if d.severity == "error")
            click.echo(f"train-compile: {errors} error(s); nothing was written", err=True)
        sys.exit(1)
