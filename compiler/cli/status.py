"""`train-compile status`: from the specs in git to their live jobs, read-only.

The specs are compiled offline first (bad specs stop the run with the usual diagnostics,
before any cluster read) to learn each job's kind, namespace, name and compiled object;
then the cluster is read once (`compiler.cli.live.gather`) and the report printed in the
chosen format on stdout: text within the terminal's width (`--wide`: whole), JSON, markdown.
With `--wait`, only the jobs' states are polled (`compiler.cli.live.waiting`, progress on
stderr) until every job reaches the condition, one fails, or the timeout passes, and the
report is printed then.

Exit codes, for scripts:
  0  every spec's job is live and well: none failed, no pod stuck, no drift, no orphan
     (with --wait: every job reached the condition)
  1  invalid specs, a cluster that cannot be read; with --wait, a job failed or the
     timeout passed
  2  usage error
  3  a job failed, or a pod is stuck (ImagePullBackOff, CrashLoopBackOff,
     CreateContainerConfigError, Unschedulable ... for --stuck-pod-threshold or longer,
     3 minutes by default, as train-controller's Event): a person is needed. A pod that has
     waited less is shown waiting, with its reason, and does not change the exit code.
  4  git and the cluster differ: a spec without a live job, drift (a change held for the
     next run too), or a live job whose spec is gone, and nothing of 3
3 wins over 4: a stuck pod beside an orphan exits 3, since a person is needed before git and
the cluster can agree (tests/cli/test_status_held.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import click

from compiler.cli.common import compile_or_usage_error, report, sources_argument
from compiler.cli.live.options import (
    cluster_failed,
    connect,
    context_option,
    env_option,
    kubeconfig_option,
    one_environment,
    specs_or_exit,
)
from foundation.runs.stuck import STUCK_AFTER  # when a waiting pod is stuck: train-controller's rule too
from schemas import durations

if TYPE_CHECKING:
    from compiler.cli.live.gather import StatusReport

CONDITIONS = ("Created", "Running", "Succeeded", "Failed")


@click.command()
@sources_argument
@env_option
@kubeconfig_option
@context_option
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text", show_default=True,
              help="How to print the report (stdout); diagnostics go to stderr.")
@click.option("--wide", is_flag=True, help="Text: every message and Event whole, not cut at the terminal's width.")
@click.option("--wait", "wait_for", type=click.Choice(CONDITIONS), default=None,
              help="Wait until every job reaches CONDITION (Running counts a job that ran and finished); "
                   "exit 1 if one fails first or the timeout passes.")
@click.option("--timeout", default="10m", show_default=True, help="How long --wait waits, e.g. 90s, 10m, 1h30m.")
@click.option("--stuck-pod-threshold", "stuck_pod_threshold", default=durations.go(STUCK_AFTER), show_default=True,
              help="How long a pod may wait for a reason it cannot get past without help (image pull, config "
                   "error, unschedulable, crash loop) before it counts as stuck (exit 3), as train-controller's "
                   "flag of the same name; 0: never.")
def status(sources: tuple[Path, ...], env: Optional[str], kubeconfig: Optional[str], context: Optional[str],
           fmt: str, wide: bool, wait_for: Optional[str], timeout: str, stuck_pod_threshold: str) -> None:
    """Show each spec's live job: its state and for how long, its pods by replica type and
    why any waits, its last Warning Events, drift from git, and live jobs whose spec is
    gone. Read-only. Exit 0 all well, 3 a job failed or a pod is stuck, 4 git and the
    cluster differ, 1 error or a failed --wait."""
    from compiler.cli import cluster
    from compiler.cli.live import render
    from compiler.cli.live.clock import parse_duration
    from compiler.cli.live.gather import gather
    from compiler.cli.live.specs import environment_namespaces, scope_of, spec_jobs
    from compiler.cli.live.waiting import wait

    try:
        seconds = parse_duration(timeout)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--timeout") from None
    try:
        stuck_after = durations.flag(stuck_pod_threshold)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--stuck-pod-threshold") from None
    result = compile_or_usage_error(sources, env)
    report(result, "text")
    specs_or_exit(result)
    environment = one_environment(result, env)
    specs = spec_jobs(result, environment)
    scope = scope_of(list(sources), environment_namespaces(result, environment))
    with connect(kubeconfig, context) as reader:
        try:
            waited = wait(reader, specs, scope=scope, condition=wait_for, seconds=seconds,
                          note=lambda line: click.echo(f"train-compile: {line}", err=True)) if wait_for else None
            found = gather(reader, specs, scope=scope, environment=environment, stuck_after=stuck_after)
        except cluster.ClusterError as exc:
            cluster_failed(exc)
    sys.stdout.write(render.FORMATS[fmt](found, width=None if wide else _width()))
    if waited is not None:
        click.echo(f"train-compile: {waited.line(wait_for, found)}", err=True)
        sys.exit(0 if waited.outcome == "reached" else 1)
    sys.exit(exit_code(found))


def exit_code(found: "StatusReport") -> int:
    counts = found.summary()
    if counts["failed"] or counts["stuck"]:
        return 3
    if counts["absent"] or counts["drift"] or counts["orphans"]:
        return 4
    return 0


def _width() -> int:
    """The terminal's width (`COLUMNS`, else the terminal's, else 80 when not a terminal)."""
    import shutil

    return max(40, shutil.get_terminal_size((80, 24)).columns)


