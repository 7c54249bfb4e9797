"""`train-compile plan`: what a merge will do to the runs (the contract: docs/plan.md).

The command around `compiler.plan`: it compiles both sides of each project the sources
belong to, reads the jobs' states from the cluster under `--live` (through
`compiler.cli.cluster`, the one read-only reader), prints the plan in the chosen format on
stdout (markdown: a comment that fits GitHub's limit), writes the full plan to `--output`,
prints each warning (an accept that matched nothing, a trailer that could not be read) on
stderr, and exits 1 when `--fail-on` names a hazard that occurs and nobody accepted, naming
each environment, job and hazard. Exit codes, as the contract says: invalid input in the
head is the usual positioned diagnostics and 1 (a base with errors is planned, its errors
listed); a base git does not have, a source outside the repository, an unknown hazard word
is 2; a cluster that cannot be read under `--live` is 1, named. Only click is imported at
module level (the CLI's start-up stays fast).
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
NAMED_FAILURES = 50  # --fail-on lines printed before "and N more"


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
              help="text for a terminal, markdown for a pull request comment (sized to fit), json, github annotations.")
@click.option("--output", "output", default=None, metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the full plan, in the chosen format, to FILE (a CI artifact; the markdown"
                   " comment on stdout points to it).")
@click.option("--fail-on", "fail_on", default="", metavar="HAZARD,...",
              help="Exit 1 when one of these hazards occurs and is not accepted.")
@click.option("--accept", "accept", multiple=True, metavar="[ENV:]NS/NAME=HAZARD[,HAZARD]",
              help="Accept an intended hazard (repeatable; ENV, NS and NAME may hold * wildcards);"
                   " Trainforge-Accept: commit trailers do the same.")
def plan(sources: tuple[Path, ...], base: str, env: Optional[str], live: bool, kubeconfig: Optional[str],
         context: Optional[str], fmt: str, output: Optional[Path], fail_on: str, accept: tuple[str, ...]) -> None:
    """Say what merging the working tree over BASE does to the runs: per project and environment,
    every job's change, the spec fields it touches, GPUs before and after, and the hazards
    (kills-run, restarts-run, reruns-finished, mixed-run, sync-refused,
    ignored-until-next-run, suspends-run, suspend-ignored) for the environment's target,
    controller and engine. Several project folders: one document, a section per project."""
    from compiler.cli.common import report
    from compiler.pipeline import Result, UnknownEnvironment
    from compiler.plan import accepts, build
    from compiler.plan.revision import PlanInputError
    from compiler.plan.sides import SideInvalid

    failing = _words(fail_on)
    try:
        given = accepts.from_options(list(accept))
    except accepts.BadAccept as exc:
        raise click.UsageError(str(exc)) from None
    try:
        plans = build.make(list(sources), base=base, env=env, accepts=given, now=datetime.now(timezone.utc),
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
    except build.LiveNeedsOneEnvironment as exc:
        names = exc.environments
        raise click.UsageError(f"--live reads one cluster and the project has {len(names)} environments"
                               f" ({', '.join(names)}); pass --env NAME with the kubeconfig of its cluster") from None
    sys.stdout.write(_rendered(plans, fmt, failing, full_plan=output.name if output else None))
    if output is not None:
        _write(output, _rendered(plans, fmt, failing, full_plan=None, whole=True))
    for notice in plans.notices:
        click.echo(f"train-compile: plan: warning: {notice}", err=True)
    _gate(plans, failing)


def _rendered(plans: Any, fmt: str, failing: set[str], *, full_plan: Optional[str], whole: bool = False) -> str:
    from compiler.plan import markdown, render

    if fmt == "markdown":
        return markdown.markdown(plans, full_plan=full_plan, budget=None if whole else markdown.BUDGET)
    if fmt == "json":
        return render.as_json(plans)
    if fmt == "github":
        return render.github(plans, failing)
    return render.text(plans)


def _write(output: Path, text: str) -> None:
    """The full plan to `output`, whole or not at all (a temporary file renamed over it)."""
    import os
    import tempfile

    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, output)
    except OSError as exc:
        click.echo(f"train-compile: plan: cannot write --output {output}: {exc.strerror or exc}", err=True)
        sys.exit(1)


def _gate(plans: Any, failing: set[str]) -> None:
    """Exit 1 naming each environment, job and hazard `--fail-on` forbids and nobody accepted."""
    found = plans.failing(failing)
    if not found:
        return
    several = len(plans.items) > 1
    for plan, env, job, hazard in found[:NAMED_FAILURES]:
        where = f"{plan.project}: " if several else ""
        at = f"{job.anchor.file}:{job.anchor.line}" if job.anchor else f"{job.source}:{job.line}"
        click.echo(f"train-compile: plan: --fail-on: {hazard} would happen to {where}{job.shown_name} in {env.name}"
                   f" ({at})", err=True)
    if len(found) > NAMED_FAILURES:
        click.echo(f"train-compile: plan: --fail-on: and {len(found) - NAMED_FAILURES} more", err=True)
    click.echo("train-compile: plan: accept an intended one with --accept [ENV:]NS/NAME=HAZARD (wildcards:"
               " prod:nlp/*=HAZARD) or a commit trailer, Trainforge-Accept: NS/NAME HAZARD", err=True)
    sys.exit(1)
