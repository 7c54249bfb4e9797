"""`train-compile`: the command line around the pipeline.

Only `click` is imported at module level; pydantic, ruamel and the pipeline are imported
inside commands so `train-compile --help` starts in well under half a second. Exit
codes: 0 ok, 1 invalid input or stale output, 2 usage error (click's own convention).
Human-readable diagnostics go to stderr; machine formats (json, github) go to
stdout so CI can capture them, except for `render`, whose stdout is the YAML stream.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from compiler.diagnostics import FORMATTERS
from compiler.quickexit import QuickExitGroup, keep, own_process
from compiler.versions import COMPILER_DEPS, version_option

if TYPE_CHECKING:
    from compiler.pipeline import Result



_sources = click.argument(
    "sources", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path)
)
_format = click.option(
    "--format", "fmt", type=click.Choice(tuple(FORMATTERS)), default="text", show_default=True,
    help="How to print diagnostics.",
)
_env = click.option("--env", "env", default=None, help="Limit the run to one environment.")
_out = click.option(
    "-o", "--output", "out", required=True, type=click.Path(path_type=Path),
    help="Output folder (one kustomize tree per environment).",
)


def _compile(sources: tuple[Path, ...], env: Optional[str], *, lower_jobs: bool = True) -> "Result":
    from compiler.pipeline import UnknownEnvironment, compile_sources

    try:
        result = compile_sources(list(sources), env=env, lower_jobs=lower_jobs)
    except UnknownEnvironment as exc:
        raise click.UsageError(str(exc)) from None
    keep(result)
    return result


def _report(result: "Result", fmt: str, *, to_stderr: bool = False) -> None:
    from compiler.reporting import render_diagnostics

    text = render_diagnostics(result.diagnostics, fmt)
    if not text:
        return
    stream = sys.stderr if (fmt == "text" or to_stderr) else sys.stdout
    stream.write(text)


def _fail_if_invalid(result: "Result") -> None:
    if not result.ok:
        errors = sum(1 for d in result.diagnostics if d.severity == "error")
        click.echo(f"train-compile: {errors} error(s); nothing was written", err=True)
        sys.exit(1)


@click.group(cls=QuickExitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@version_option("train-compile", COMPILER_DEPS)
def main() -> None:
    """Compile TrainJob specs into Kubeflow (kubeflow.org/v1) kustomize trees."""
    # One short run: reference counting frees what the pipeline drops, and the cycle
    # collector would only rescan the live documents again and again (~10% of a build
    # of 1,000 jobs, measured by bench/compiler_bench.py). Back on when the command ends
    # for callers that run the CLI in-process (tests); a run that ends the process
    # leaves it off (re-enabled, it would first scan everything the run allocated).
    if gc.isenabled():
        gc.disable()
        if not own_process():
            click.get_current_context().call_on_close(gc.enable)


@main.command()
@_sources
@_out
@_env
@_format
def build(sources: tuple[Path, ...], out: Path, env: Optional[str], fmt: str) -> None:
    """Compile SOURCES (files or folders) into OUT/<env>/."""
    from compiler import tree

    result = _compile(sources, env)
    _report(result, fmt)
    _fail_if_invalid(result)
    try:
        tree.write(tree.files(result), out, envs=result.environments, keep_other_envs=env is not None)
    except tree.UnsafeOutput as exc:
        raise click.UsageError(str(exc)) from None
    jobs = sum(len(b) for b in result.bundles.values())
    click.echo(
        f"train-compile: wrote {jobs} job(s) for {len(result.environments)} environment(s)"
        f" ({', '.join(result.environments)}) to {out}",
        err=True,
    )


@main.command()
@_sources
@_env
@_format
def validate(sources: tuple[Path, ...], env: Optional[str], fmt: str) -> None:
    """Parse and validate SOURCES without writing anything."""
    result = _compile(sources, env)
    _report(result, fmt)
    _fail_if_invalid(result)
    click.echo("train-compile: all specs are valid", err=True)


@main.command()
@_sources
@_out
@_env
@_format
def check(sources: tuple[Path, ...], out: Path, env: Optional[str], fmt: str) -> None:
    """Exit 1 with a diff if OUT is not what `build` would write."""
    from compiler import tree
    from compiler.reporting import tree_diff

    result = _compile(sources, env)
    _report(result, fmt)
    _fail_if_invalid(result)
    expected = tree.files(result)
    actual = tree.read(out)
    if env is not None:
        actual = {k: v for k, v in actual.items() if k.split("/", 1)[0] == env}
    diff = tree_diff(actual, expected, out)
    if diff:
        sys.stdout.write(diff)
        click.echo(f"train-compile: {out} is stale; run train-compile build", err=True)
        sys.exit(1)
    click.echo(f"train-compile: {out} is up to date", err=True)


@main.command()
@_sources
@_env
@_format
def render(sources: tuple[Path, ...], env: Optional[str], fmt: str) -> None:
    """Print the rendered multi-document stream (what kustomize would render)."""
    from compiler.render import render_stream

    result = _compile(sources, env)
    _report(result, fmt, to_stderr=True)
    _fail_if_invalid(result)
    sys.stdout.write(render_stream(result))


@main.command()
@_out
def schema(out: Path) -> None:
    """Write the JSON Schemas of TrainJob and Project into OUT."""
    from schemas.export import write_schemas

    for path in write_schemas(out):
        click.echo(f"train-compile: wrote {path}", err=True)


from compiler.cli_gitops import register  # noqa: E402  (argocd and flux commands, sarif)
register(main)


if __name__ == "__main__":
    main()
