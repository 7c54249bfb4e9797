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

from compiler.cli.common import (
    compile_or_usage_error,
    fail_if_invalid,
    report,
    sources_argument,
)
from compiler.cli.quickexit import QuickExitGroup, own_process
from compiler.diagnostics import FORMATS
from foundation.versions import COMPILER_DEPS, version_option

if TYPE_CHECKING:
    from compiler.pipeline import Result

_format = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
    help="How to print diagnostics.",
)
_env = click.option("--env", "env", default=None, help="Limit the run to one environment.")
_out = click.option(
    "-o", "--output", "out", required=True, type=click.Path(path_type=Path),
    help="Output folder (one kustomize tree per environment).",
)
_strict = click.option(
    "--strict", is_flag=True, default=False,
    help="Treat warnings as errors (exit 1, nothing written), e.g. a job's ttlAfterFinished under kubeflow-v1.",
)
_schema_out = click.option(
    "-o", "--output", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the JSON Schemas (TrainJob, Project) into, for editors and CI.",
)


@click.group(cls=QuickExitGroup, context_settings={"help_option_names": ["-h", "--help"]})
@version_option("train-compile", COMPILER_DEPS)
def main() -> None:
    """Compile TrainJob specs into kustomize trees for Argo CD or Flux.

    Each environment's `target` decides what a job becomes: the Kubeflow Training
    Operator's kubeflow.org/v1 jobs (kubeflow-v1, the default; also what train-controller
    runs) or Kubeflow Trainer v2 TrainJobs (trainer-v2, trainer.kubeflow.org/v1alpha1).
    """
    # One short run: reference counting frees what the pipeline drops, and the cycle
    # collector would only rescan the live documents again and again (a share of a large
    # build that bench/compiler_bench.py measured: bench/README.md). Back on when the command ends
    # for callers that run the CLI in-process (tests); a run that ends the process
    # leaves it off (re-enabled, it would first scan everything the run allocated).
    if gc.isenabled():
        gc.disable()
        if not own_process():
            click.get_current_context().call_on_close(gc.enable)


def strictly(result: "Result", strict: bool) -> "Result":
    """With --strict, every warning of the run is an error (notices stay notices)."""
    if strict:
        from dataclasses import replace

        from compiler.diagnostics import ordered

        result.diagnostics = ordered(replace(d, severity="error") if d.severity == "warning" else d
                                     for d in result.diagnostics)
    return result


@main.command()
@sources_argument
@_out
@_env
@_format
@_strict
def build(sources: tuple[Path, ...], out: Path, env: Optional[str], fmt: str, strict: bool) -> None:
    """Compile SOURCES (files or folders) into OUT/<env>/."""
    from compiler.emit import tree

    result = strictly(compile_or_usage_error(sources, env), strict)
    report(result, fmt)
    fail_if_invalid(result)
    try:
        tree.write(tree.files(result), out, envs=result.environments, keep_other_envs=env is not None)
    except tree.UnsafeOutput as exc:
        click.echo(f"train-compile: {exc}; nothing was written", err=True)
        sys.exit(1)
    from compiler.emit.summary import environment_lines

    jobs = sum(len(b) for b in result.bundles.values())
    click.echo("\n".join([
        f"train-compile: wrote {jobs} job(s) for {len(result.environments)} environment(s)"
        f" ({', '.join(result.environments)}) to {out}",
        *environment_lines(result),
    ]), err=True)


@main.command()
@sources_argument
@_env
@_format
@_strict
def validate(sources: tuple[Path, ...], env: Optional[str], fmt: str, strict: bool) -> None:
    """Parse and validate SOURCES without writing anything."""
    result = strictly(compile_or_usage_error(sources, env), strict)
    report(result, fmt)
    fail_if_invalid(result)
    click.echo("train-compile: all specs are valid", err=True)


@main.command()
@sources_argument
@_out
@_env
@_format
@_strict
def check(sources: tuple[Path, ...], out: Path, env: Optional[str], fmt: str, strict: bool) -> None:
    """Exit 1 if OUT is not what `build` would write (text: a unified diff on stdout).

    Each stale file is a diagnostic too, in every --format, so a JSON, SARIF or GitHub
    consumer sees staleness as it sees any other problem; only the text format adds the
    diff (on stdout, where a machine format would otherwise be broken by it)."""
    from compiler.emit import tree
    from compiler.emit.reporting import stale_diagnostics, tree_diff

    result = strictly(compile_or_usage_error(sources, env), strict)
    if not result.ok:
        report(result, fmt)
        fail_if_invalid(result)
    expected = tree.files(result)
    actual = tree.read(out)
    if env is not None:
        actual = {k: v for k, v in actual.items() if k.split("/", 1)[0] == env}
    rebuild = " ".join(["train-compile build", *map(str, sources), "-o", str(out), *(["--env", env] if env else [])])
    stale = stale_diagnostics(actual, expected, out, rebuild)
    result.diagnostics = [*result.diagnostics, *stale]
    report(result, fmt)
    if stale:
        if fmt == "text":
            sys.stdout.write(tree_diff(actual, expected, out))
        click.echo(f"train-compile: {out} is stale; run {rebuild} ({len(stale)} file(s) differ)", err=True)
        sys.exit(1)
    click.echo(f"train-compile: {out} is up to date", err=True)


@main.command()
@sources_argument
@_env
@_format
@_strict
def render(sources: tuple[Path, ...], env: Optional[str], fmt: str, strict: bool) -> None:
    """Print one environment's objects as one YAML stream (what `kubectl kustomize OUT/<env>`
    renders: the same objects, not the same bytes). A project with several environments
    needs --env."""
    from compiler.emit.render import render_stream

    result = strictly(compile_or_usage_error(sources, env), strict)
    report(result, fmt, to_stderr=True)
    fail_if_invalid(result, quiet=fmt != "text")  # stderr is then one document of that format
    if len(result.environments) > 1:
        # one stream holding every environment would apply dev's and prod's objects together
        # (`| kubectl apply -f -`): the same Namespace twice, two jobs of one name
        names = ", ".join(result.environments)
        raise click.UsageError(
            f"the project has {len(result.environments)} environments ({names}) and render prints one"
            f" stream; pass --env NAME, e.g. --env {result.environments[0]}"
        )
    sys.stdout.write(render_stream(result))


@main.command()
@_schema_out
def schema(out: Path) -> None:
    """Write the JSON Schemas of TrainJob and Project into OUT."""
    from schemas.export import write_schemas

    for path in write_schemas(out):
        click.echo(f"train-compile: wrote {path}", err=True)


from compiler.cli.gitops import (
    register,  # noqa: E402  (argocd and flux commands, sarif)
)

register(main)

from compiler.cli.importer import import_command  # noqa: E402  (train-compile import)
from compiler.cli.logs import logs  # noqa: E402
from compiler.cli.plan import plan  # noqa: E402  (train-compile plan)
from compiler.cli.status import status  # noqa: E402

main.add_command(plan)
main.add_command(status)
main.add_command(logs)
main.add_command(import_command)


if __name__ == "__main__":
    main()
