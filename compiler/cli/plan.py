"""`train-compile plan`: what a merge will do to the runs (the contract: ../shared/docs/plan.md).

The command around `compiler.plan`: it compiles both sides, reads the jobs' states from the
cluster under `--live` (through `compiler.cli.cluster`, the one read-only reader), prints the
plan in the chosen format on stdout and exits 1 when `--fail-on` names a hazard that occurs
and nobody accepted. Exit codes, as the contract says: invalid input on either side is the
usual positioned diagnostics and 1; a base git does not have, a source outside the
repository, an unknown hazard word is 2; a cluster that cannot be read under `--live` is 1,
named. Only click is imported at module level (the CLI's start-up stays fast).
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from collections.abc import Callable
from typing import Any, Optional

import click

from compiler.cli.common import sources_argument

FORMATS = ("text", "markdown", "json", "github")


def _words(value: str) -> set[str]:
    from compiler.plan.model import HAZARDS

    words = {w.strip() for w in value.split(",") if w.strip()}
    unknown = sorted(words - set(HAZARDS))
    if unknown:
        raise click.UsageError(f"--fail-on names {', '.join(unknown)}, which is no hazard; hazards: {', '.join(HAZARDS)}")
    return words


def _reader(kubeconfig: Optional[str], context: Optional[str]) -> Callable[[list[Any]], list[dict[str, Any]]]:
    """The plan's `--live` reader: each list it asks for (a kind's resource in a namespace), as the
    cluster has it; a cluster that cannot be read ends the run (exit 1)."""
    def read(lists: list[Any]) -> list[dict[str, Any]]:
        from compiler.cli.cluster import ClusterError, connect
        from foundation.cluster.resource import Resource

        from compiler.cli.cluster import ClusterForbidden
        from compiler.plan.live import PODS, RECORDS, unread

        found: list[dict[str, Any]] = []
        try:
            with connect(kubeconfig, context=context) as reader:
                for want in lists:
                    res = Resource(want.group, want.version, want.plural, want.kind)
                    try:
                        objects = reader.list(res, namespace=want.namespace, label_selector=want.selector) or []
                    except ClusterForbidden:
                        if want.kind not in (PODS, RECORDS):  # the run's facts are extra: the states are not
                            raise
                        objects = [unread(want.kind, want.namespace)]
                    found += [{**obj, "kind": want.kind} for obj in objects]
        except ClusterError as exc:
            click.echo(f"train-compile: plan --live: {exc}", err=True)
            sys.exit(1)
        return found
    return read


@click.command()
@sources_argument
@click.option("--base", "base", required=True, metavar="REF",
              help="The git revision to compare the working tree with (a branch, tag or commit).")
@click.option("--env", "env", default=None, help="Limit the plan to one environment.")
@click.option("--live", is_flag=True, help="Read the jobs' states from the cluster (read-only: get and list).")
@click.option("--kubeconfig", default=None, help="The kubeconfig to read (else $KUBECONFIG, else ~/.kube/config).")
@click.option("--context", default=None, help="The kubeconfig context to use.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text for a terminal, markdown for a pull request comment, json, github annotations.")
@click.option("--fail-on", "fail_on", default="", metavar="HAZARD,...",
              help="Exit 1 when one of these hazards occurs and is not accepted.")
@click.option("--accept", "accept", multiple=True, metavar="[ENV:]NS/NAME=HAZARD[,HAZARD]",
              help="Accept an intended hazard (repeatable); Trainforge-Accept: commit trailers do the same.")
def plan(sources: tuple[Path, ...], base: str, env: Optional[str], live: bool, kubeconfig: Optional[str],
         context: Optional[str], fmt: str, fail_on: str, accept: tuple[str, ...]) -> None:
    """Say what merging the working tree over BASE does to the runs: per environment, every
    job's change, the spec fields it touches, GPUs before and after, and the hazards
    (kills-run, restarts-run, reruns-finished, mixed-run, sync-refused,
    ignored-until-next-run, suspends-run) for the environment's target, controller and engine."""
    from compiler.cli.common import report
    from compiler.pipeline import Result, UnknownEnvironment
    from compiler.plan import build, markdown, render, words
    from compiler.plan.revision import PlanInputError
    from compiler.plan.sides import SideInvalid

    failing = _words(fail_on)
    try:
        given = words.accepts(list(accept))
    except words.BadAccept as exc:
        raise click.UsageError(str(exc)) from None
    try:
        result = build.make(list(sources), base=base, env=env, accepts=given, now=datetime.now(timezone.utc),
                            read_live=_reader(kubeconfig, context) if live else None)
    except UnknownEnvironment as exc:
        raise click.UsageError(str(exc)) from None
    except PlanInputError as exc:
        click.echo(f"train-compile: plan: {exc}", err=True)
        sys.exit(exc.code)
    except SideInvalid as exc:
        report(Result(diagnostics=exc.diagnostics), fmt if fmt in ("json", "github") else "text")
        click.echo(f"train-compile: plan: {exc.side} has errors; nothing was planned", err=True)
        sys.exit(1)
    except build.BadTrailer as exc:
        click.echo(f"train-compile: plan: a Trainforge-Accept trailer: {exc}", err=True)
        sys.exit(2)
    except build.LiveNeedsOneEnvironment as exc:
        names = exc.environments
        raise click.UsageError(f"--live reads one cluster and the project has {len(names)} environments"
                               f" ({', '.join(names)}); pass --env NAME with the kubeconfig of its cluster") from None
    if fmt == "markdown":
        sys.stdout.write(markdown.markdown(result))
    elif fmt == "json":
        sys.stdout.write(render.as_json(result))
    elif fmt == "github":
        sys.stdout.write(render.github(result, failing))
    else:
        sys.stdout.write(render.text(result))
    blocking = sorted(failing & result.hazards())
    if blocking:
        click.echo(f"train-compile: plan: {', '.join(blocking)} would happen (--fail-on); accept an intended one"
                   " with --accept NS/NAME=HAZARD or a Trainforge-Accept: trailer", err=True)
        sys.exit(1)
